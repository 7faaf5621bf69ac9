/* execloop: starts a program N times, one after the other (posix_spawn,
 * then wait), with this process's environment, and prints the wall time
 * and the CPU time (user + system, of the children) per start, in
 * microseconds: the per-exec cost of what the environment adds (the
 * shim's LD_PRELOAD, its variables). The program's output goes to
 * /dev/null.
 *   execloop N PROGRAM [ARGS...]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double us(struct timeval t) { return t.tv_sec * 1e6 + t.tv_usec; }

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: execloop N PROGRAM [ARGS...]\n");
		return 2;
	}
	long n = atol(argv[1]);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		pid_t pid;
		int st;
		if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) {
			perror("posix_spawn");
			return 1;
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "execloop: %s failed\n", argv[2]);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	double wall = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3;
	printf("%.1f %.1f\n", wall / n, (us(ru.ru_utime) + us(ru.ru_stime)) / n);
	return 0;
}
