/*
 * envsieve-start: how a program a rule grants real values to is started
 * from inside an agent's tree without the tree ever holding those values.
 *
 * The shim execs it in place of such a program, with argv "envsieve-start
 * PATH ARGV...". It asks the launcher (ENVSIEVE_SHIM_SOCK) to start the
 * program itself, outside the tree, with this process's descriptors 0-2
 * (sent only once the launcher has decided to start it), working directory
 * and process group, then stands in for it: it forwards
 * the signals sent to it and exits as the program exited. The launcher
 * answers only "granted" (send descriptors 0-2), "begun", "declined" or the
 * exit status, never a value.
 *
 * Declined (no rule grants the program anything, or it is a file the tree
 * could have written): this process execs the program as the caller would
 * have. The launcher unreachable: the same, minus every key a rule denies
 * (ENVSIEVE_SHIM_DENY), failing closed.
 *
 * It is linked statically, so LD_PRELOAD never loads the shim into it, and
 * it holds nothing the tree does not already have.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "start.h"

/* the dispositions this process started with (the caller's, across the
 * exec: an ignored signal stays ignored), and SIGPIPE's */
static struct sigaction g_saved[ST_NFORWARDED], g_savedpipe;

/* alone gives the signals back the dispositions and the mask this process
 * started with, before it runs the program itself: the program inherits
 * what the caller had, and a signal held meanwhile acts as it would have
 * on the caller. */
static void alone(const sigset_t *old) {
	for (size_t i = 0; i < ST_NFORWARDED; i++)
		sigaction(st_forwarded[i], &g_saved[i], NULL);
	sigaction(SIGPIPE, &g_savedpipe, NULL);
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* run_alone execs the program in this process, as the caller would have;
 * strip removes what the rules deny first. Returns only on failure. */
static int run_alone(const char *path, char **argv, char **envp, int strip) {
	if (strip) {
		const char *deny = VALUE_OF(envp, "ENVSIEVE_SHIM_DENY");
		if (deny && *deny) {
			size_t w = 0;
			for (size_t r = 0; envp[r]; r++) {
				const char *e = envp[r];
				size_t len = strcspn(e, "=");
				if (!any_glob(deny, e, len))
					envp[w++] = envp[r];
			}
			envp[w] = NULL;
		}
	}
	execve(path, argv, envp);
	int err = errno;
	fprintf(stderr, "envsieve-start: %s: %s\n", path, strerror(err));
	return err == ENOENT ? 127 : 126;
}

int main(int argc, char **argv, char **envp) {
	if (argc < 2) {
		fprintf(stderr, "envsieve-start: run by libenvsieve.so only\n");
		return 125;
	}
	const char *path = argv[1];
	char **pargv = argv + 2;
	struct sockaddr_un addr;
	socklen_t alen = wire_addr(VALUE_OF(envp, "ENVSIEVE_SHIM_SOCK"), &addr);
	if (alen == 0)
		return run_alone(path, pargv, envp, 1);

	/* Signals are caught, and held, from before the request: one sent
	 * while the launcher decides reaches the program once it has begun
	 * (or this process, as the caller would have, when it runs alone). */
	struct sigaction sa;
	st_catcher(&sa);
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < ST_NFORWARDED; i++)
		sigaddset(&block, st_forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (size_t i = 0; i < ST_NFORWARDED; i++) {
		sigaction(st_forwarded[i], NULL, &g_saved[i]);
		/* One the caller ignores (nohup) stays ignored, and is not
		 * passed on. */
		if (g_saved[i].sa_handler != SIG_IGN)
			sigaction(st_forwarded[i], &sa, NULL);
	}
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &g_savedpipe);
	if (st_start(&addr, alen, path, pargv, envp) != 0) {
		alone(&old);
		return run_alone(path, pargv, envp, 1);
	}

	char buf[512];
	int got = st_decide(buf, sizeof buf - 1);
	if (got == ST_NONE) {
		/* No answer, and the launcher never had descriptors 0-2:
		 * closing the connection keeps it from starting the program. */
		close(st_conn);
		alone(&old);
		return run_alone(path, pargv, envp, 1);
	}
	if (got == ST_DECLINED) {
		close(st_conn);
		alone(&old);
		return run_alone(path, pargv, envp, 0);
	}
	if (got == ST_HELD) {
		/* The launcher took descriptors 0-2 and may yet start the
		 * program: running it here too could run it twice. */
		close(st_conn);
		fprintf(stderr, "envsieve-start: %s: the launcher decided but did not start the program in time\n", path);
		return 125;
	}
	if (got != ST_BEGUN) {
		fprintf(stderr, "envsieve-start: %s: a malformed answer from the launcher\n", path);
		return 125;
	}
	st_joined = buf[2] == 'g';
	sigprocmask(SIG_SETMASK, &old, NULL);
	st_wait(path);
}
