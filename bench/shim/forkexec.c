/* forkexec N PROGRAM: forks and execs PROGRAM (no arguments) N times, one
 * at a time, with its own environment: a shell's loop without the shell.
 * Unlike execloop (posix_spawn), each exec runs in a forked child, where
 * the shim's exec wrapper runs on pages fork did not copy.
 * bench/shim/perexec.sh runs it with and without the shim preloaded. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: forkexec N PROGRAM\n");
		return 2;
	}
	int n = atoi(argv[1]);
	char *args[] = {argv[2], NULL};
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			execve(argv[2], args, environ);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forkexec: %s failed\n", argv[2]);
			return 1;
		}
	}
	return 0;
}
