/* landlock: the floor of a Landlock seal's lifetime hold, for bench/compare.sh.
 *
 *   landlock - PROG [ARG...]     exec PROG (the baseline: this program's own start)
 *   landlock INIT PROG [ARG...]  make an empty Landlock ruleset and exec
 *                                INIT --landlock PROG PROG ARG... with it
 *
 * With INIT envsieve-init, the second form is what any Landlock seal of
 * envsieve's pays here besides its rules: the init's exec, its reaper's and
 * the program's forks, the domain entered, and both processes' exits. The
 * ruleset handles the write rights and allows none of them: the program
 * reads and runs as without it, and can write nothing. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <linux/landlock.h>

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: landlock -|INIT PROG [ARG...]\n");
		return 2;
	}
	if (strcmp(argv[1], "-") == 0) {
		execv(argv[2], argv + 2);
		perror("exec");
		return 127;
	}
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
				     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
				     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
				     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
				     LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM,
	};
	int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd < 0) {
		perror("landlock_create_ruleset");
		return 1;
	}
	/* The kernel makes it close-on-exec; the init inherits it. */
	if (fcntl(fd, F_SETFD, 0) != 0) {
		perror("fcntl");
		return 1;
	}
	char val[16];
	snprintf(val, sizeof val, "%d", fd);
	if (setenv("ENVSIEVE_INIT_LANDLOCK", val, 1) != 0) {
		perror("setenv");
		return 1;
	}
	char **args = calloc((size_t)argc + 2, sizeof *args);
	if (args == NULL)
		return 1;
	args[0] = "envsieve-init";
	args[1] = "--landlock";
	args[2] = argv[2];
	for (int i = 2; i < argc; i++)
		args[i + 1] = argv[i];
	execv(argv[1], args);
	perror("exec");
	return 127;
}
