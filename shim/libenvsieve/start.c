/*
 * envsieve-start: how a program a rule grants real values to is started
 * from inside an agent's tree without the tree ever holding those values.
 *
 * The shim execs it in place of such a program, with argv "envsieve-start
 * PATH ARGV...". It asks the launcher (ENVSIEVE_SHIM_SOCK) to start the
 * program itself, outside the tree, with this process's descriptors 0-2,
 * working directory and process group, then stands in for it: it forwards
 * the signals sent to it and exits as the program exited. The launcher
 * answers only "begun", "declined" or the exit status, never a value.
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

#include "wire.h"

#define ANSWER_TIMEOUT_MS 10000 /* the launcher's decision and its fork */

static int g_conn = -1;
static int g_joined; /* the program is in this process's group */

/* send_packet sends one packet, retrying an interrupted call. */
static int send_packet(int fd, const char *buf, size_t n, int flags) {
	for (;;) {
		if (send(fd, buf, n, flags | MSG_NOSIGNAL) == (ssize_t)n)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* forward passes a signal on to the program. One the terminal sent to the
 * whole process group (si_code SI_KERNEL) already reached a program that
 * joined the group. */
static void forward(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	if (g_joined && si && si->si_code == SI_KERNEL)
		return;
	int saved = errno;
	char buf[32] = {WIRE_VERSION, 'K'};
	size_t at = put_num(buf, 2, sizeof buf, (unsigned long)sig);
	if (at != (size_t)-1)
		(void)send(g_conn, buf, at, MSG_DONTWAIT | MSG_NOSIGNAL);
	errno = saved;
}

static const int forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM, SIGCONT};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])
/* the dispositions this process started with (the caller's, across the
 * exec: an ignored signal stays ignored), and SIGPIPE's */
static struct sigaction g_saved[NFORWARDED], g_savedpipe;

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* answer waits for one packet from the launcher, up to timeout_ms (-1:
 * forever). Its length, 0 when the launcher closed, -1 on a timeout or an
 * error. */
static ssize_t answer(char *buf, size_t cap, int timeout_ms) {
	long deadline = now_ms() + timeout_ms;
	for (;;) {
		int left = timeout_ms < 0 ? -1 : (int)(deadline - now_ms());
		if (timeout_ms >= 0 && left <= 0)
			return -1;
		struct pollfd pfd = {.fd = g_conn, .events = POLLIN};
		int r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		ssize_t n = recv(g_conn, buf, cap, MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (size_t)n > cap)
			return -1;
		return n;
	}
}

/* request sends the start request: a header packet carrying the
 * descriptors, then the body in continuation packets. 0 when sent. */
static int request(const char *path, char **argv, char **envp) {
	size_t argc = 0, len = strlen(path) + 1 + 24;
	while (argv[argc])
		len += strlen(argv[argc++]) + 1;
	for (char **e = envp; e && *e; e++)
		len += strlen(*e) + 1;
	if (len > MAX_START)
		return -1;
	char *body = malloc(len);
	if (body == NULL)
		return -1;
	size_t at = put_str(body, 0, len, path);
	at = put_num(body, at, len, argc);
	for (size_t i = 0; i < argc; i++)
		at = put_str(body, at, len, argv[i]);
	for (char **e = envp; e && *e; e++)
		at = put_str(body, at, len, *e);
	if (at == (size_t)-1) {
		free(body);
		return -1;
	}

	int fds[4], nfds = 0;
	char which[4];
	for (int i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) >= 0) {
			which[nfds] = (char)('0' + i);
			fds[nfds++] = i;
		}
	which[nfds] = 0;
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0) {
		free(body);
		return -1;
	}
	fds[nfds++] = cwd;

	char head[128] = {WIRE_VERSION, 'S'};
	size_t h = put_num(head, 2, sizeof head, (unsigned long)getpid());
	h = put_str(head, h, sizeof head, which);
	h = put_num(head, h, sizeof head, at);
	union {
		struct cmsghdr c;
		char space[CMSG_SPACE(sizeof fds)];
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = head, .iov_len = h};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.space,
	                   .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	ssize_t sent;
	do
		sent = sendmsg(g_conn, &m, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	close(cwd);
	int ok = sent == (ssize_t)h;
	char pkt[MAX_MSG];
	pkt[0] = WIRE_VERSION;
	pkt[1] = 'C';
	for (size_t off = 0; ok && off < at; off += MAX_MSG - 2) {
		size_t n = at - off < MAX_MSG - 2 ? at - off : MAX_MSG - 2;
		memcpy(pkt + 2, body + off, n);
		ok = send_packet(g_conn, pkt, n + 2, 0) == 0;
	}
	free(body);
	return ok ? 0 : -1;
}

/* alone gives the signals back the dispositions and the mask this process
 * started with, before it runs the program itself: the program inherits
 * what the caller had, and a signal held meanwhile acts as it would have
 * on the caller. */
static void alone(const sigset_t *old) {
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &g_saved[i], NULL);
	sigaction(SIGPIPE, &g_savedpipe, NULL);
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* run_alone execs the program in this process, as the caller would have;
 * strip removes what the rules deny first. Returns only on failure. */
static int run_alone(const char *path, char **argv, char **envp, int strip) {
	if (strip) {
		const char *deny = value_in(envp, "ENVSIEVE_SHIM_DENY", 18);
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

/* finish exits as the program did: its exit code, or its signal. */
static void finish(const char *status) {
	long v = strtol(status + 1, NULL, 10);
	if (status[0] == 'x' && v >= 0 && v <= 255)
		_exit((int)v);
	if (status[0] == 's' && v > 0 && v < NSIG) {
		struct rlimit no = {0, 0};
		setrlimit(RLIMIT_CORE, &no); /* the program dumped its own core, if any */
		signal((int)v, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, (int)v);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), (int)v);
		_exit(128 + (int)v);
	}
	_exit(125);
}

int main(int argc, char **argv, char **envp) {
	if (argc < 2) {
		fprintf(stderr, "envsieve-start: run by libenvsieve.so only\n");
		return 125;
	}
	const char *path = argv[1];
	char **pargv = argv + 2;
	struct sockaddr_un addr;
	socklen_t alen = wire_addr(value_in(envp, "ENVSIEVE_SHIM_SOCK", 18), &addr);
	g_conn = wire_dial(&addr, alen);
	if (g_conn < 0)
		return run_alone(path, pargv, envp, 1);

	/* Signals are caught, and held, from before the request: one sent
	 * while the launcher decides reaches the program once it has begun
	 * (or this process, as the caller would have, when it runs alone). */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (size_t i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &g_saved[i]);
		/* One the caller ignores (nohup) stays ignored, and is not
		 * passed on. */
		if (g_saved[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &g_savedpipe);
	if (request(path, pargv, envp) != 0) {
		close(g_conn);
		alone(&old);
		return run_alone(path, pargv, envp, 1);
	}

	char buf[512];
	ssize_t n = answer(buf, sizeof buf - 1, ANSWER_TIMEOUT_MS);
	if (n < 3 || buf[0] != WIRE_VERSION || buf[n - 1] != 0) {
		/* No answer: closing the connection stops anything begun. */
		close(g_conn);
		alone(&old);
		return run_alone(path, pargv, envp, 1);
	}
	if (buf[1] == 'D') {
		close(g_conn);
		alone(&old);
		return run_alone(path, pargv, envp, 0);
	}
	if (buf[1] != 'B') {
		fprintf(stderr, "envsieve-start: %s: a malformed answer from the launcher\n", path);
		return 125;
	}
	g_joined = buf[2] == 'g';
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (;;) {
		n = answer(buf, sizeof buf - 1, -1);
		if (n >= 4 && buf[0] == WIRE_VERSION && buf[1] == 'E' && buf[n - 1] == 0)
			finish(buf + 2);
		if (n <= 0) {
			fprintf(stderr, "envsieve-start: %s: the launcher went away\n", path);
			return 125;
		}
	}
}
