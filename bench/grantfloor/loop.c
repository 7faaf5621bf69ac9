/*
 * grantfloor-loop: the round trip of a granted exec with neither bash nor
 * the shim's checks around it (bench/grantfloor/README.md).
 *
 *   grantfloor-loop N SOCKET PROGRAM
 *
 * N times, interleaved, it forks a child that
 *   exec:  execs PROGRAM (what bash's child does for an ungranted program);
 *   relay: makes the shim's own start request for PROGRAM to SOCKET
 *          (st_start from shim/libenvsieve/start.h: the header with
 *          the working directory by SCM_RIGHTS, then the body), sends
 *          descriptors 0-2 when granted and waits for 'B' (st_decide),
 *          then stands in (st_wait) and exits as the program did (what
 *          the shim's stand-in does);
 *   spawn: posix_spawns PROGRAM itself, waits for it and exits as it did
 *          (the same processes as relay, without the socket and the
 *          server: what the extra process alone costs);
 * waits for the child, and prints the median, p10 and p90 of each and the
 * median difference. All three give PROGRAM the environment "PATH=/usr/bin:/bin",
 * as grantfloor-server must be told to.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "start.h"

static char *env[] = {"PATH=/usr/bin:/bin", NULL};

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double once(int mode, const char *prog, const struct sockaddr_un *addr, socklen_t alen) {
	char *argv[] = {(char *)prog, NULL};
	double t0 = now_us();
	pid_t pid = fork();
	if (pid == 0) {
		if (mode == 0) {
			execve(prog, argv, env);
			_exit(127);
		}
		if (mode == 2) {
			pid_t p;
			int st;
			if (posix_spawn(&p, prog, NULL, NULL, argv, env) != 0 || waitpid(p, &st, 0) != p)
				_exit(123);
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 124);
		}
		sigset_t all, old;
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, &old);
		if (st_start(addr, alen, prog, argv, env) != 0)
			_exit(121);
		char buf[512];
		if (st_decide(buf, sizeof buf - 1) != ST_BEGUN)
			_exit(122);
		st_joined = buf[2] == 'g';
		sigprocmask(SIG_SETMASK, &old, NULL);
		st_wait(prog);
	}
	int status;
	waitpid(pid, &status, 0);
	double t = now_us() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "grantfloor-loop: %s child: status %#x\n", mode == 1 ? "relay" : mode == 2 ? "spawn" : "exec", status);
		exit(1);
	}
	return t;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: grantfloor-loop N SOCKET PROGRAM\n");
		return 2;
	}
	int n = atoi(argv[1]);
	struct sockaddr_un addr;
	socklen_t alen = wire_addr(argv[2], &addr);
	if (n < 1 || alen == 0)
		return 2;
	double *t[3];
	for (int k = 0; k < 3; k++)
		t[k] = calloc((size_t)n, sizeof(double));
	for (int i = -50; i < n; i++) /* 50 unmeasured first */
		for (int k = 0; k < 3; k++) {
			double d = once(k, argv[3], &addr, alen);
			if (i >= 0)
				t[k][i] = d;
		}
	const char *name[3] = {"exec:  fork + exec", "relay: fork + request, C server, status back",
	                       "spawn: fork + posix_spawn + wait, no socket"};
	double med[3];
	for (int k = 0; k < 3; k++) {
		qsort(t[k], (size_t)n, sizeof(double), cmp);
		med[k] = t[k][n / 2];
		printf("%-55s median %6.0f µs  p10 %6.0f  p90 %6.0f\n", name[k], med[k], t[k][n / 10], t[k][n * 9 / 10]);
	}
	printf("added over exec (medians): relay %.0f µs, of which the extra process alone (spawn) %.0f µs\n",
	       med[1] - med[0], med[2] - med[0]);
	return 0;
}
