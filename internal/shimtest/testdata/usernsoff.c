/* usernsoff runs its arguments where the kernel's switch says user
 * namespaces are off: /proc/sys/user/max_user_namespaces reads "0", in a
 * mount namespace of its own, so that envsieve chooses the Landlock seal
 * before it starts anything (as on Ubuntu 24.04, whose AppArmor restricts
 * them), where bin/nouserns's seccomp filter is a refusal it meets only
 * when it tries. The switch is only read: creating one is still allowed.
 * As root it then runs the arguments as uid and gid UID (setgroups
 * emptied); as another user it makes the mount namespace in a user
 * namespace of its own that maps its uid and gid to themselves.
 * For the tests and bench/compare.sh.
 * Usage: usernsoff UID PROGRAM [ARG...] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int die(const char *what) {
	fprintf(stderr, "usernsoff: %s: %s\n", what, strerror(errno));
	return 125;
}

static int write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: usernsoff UID PROGRAM [ARG...]\n");
		return 125;
	}
	uid_t to = (uid_t)atoi(argv[1]);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (uid == 0) {
		if (unshare(CLONE_NEWNS) != 0)
			return die("unshare a mount namespace");
	} else {
		char map[64];
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
			return die("unshare user and mount namespaces");
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if (write_file("/proc/self/uid_map", map) != 0 || write_file("/proc/self/setgroups", "deny") != 0)
			return die("map the uid");
		snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if (write_file("/proc/self/gid_map", map) != 0)
			return die("map the gid");
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return die("make the mounts private");
	/* A file in /dev/shm (a tmpfs everyone writes), bound and unlinked:
	 * the mount keeps it. */
	char src[64];
	snprintf(src, sizeof src, "/dev/shm/usernsoff-%d", (int)getpid());
	int fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 || write(fd, "0\n", 2) != 2)
		return die(src);
	close(fd);
	int err = mount(src, "/proc/sys/user/max_user_namespaces", NULL, MS_BIND, NULL);
	unlink(src);
	if (err != 0)
		return die("bind over /proc/sys/user/max_user_namespaces");
	if (uid == 0 && to != 0) {
		if (setgroups(0, NULL) != 0 || setgid((gid_t)to) != 0 || setuid(to) != 0)
			return die("become the user");
	}
	execvp(argv[2], argv + 2);
	return die(argv[2]);
}
