/*
 * grantfloor-server: a minimal C stand-in for the launcher's end of the
 * shim's socket, to measure the floor of a granted exec's round trip
 * (bench/grantfloor/README.md). Not part of envsieve: no policy, no
 * decision, no peer checks beyond what the kernel does.
 *
 *   grantfloor-server [-decline] SOCKET [KEY=VALUE ...]
 *
 * (SIGTERM: it prints how many programs it started, and exits)
 *
 * listens on SOCKET (SOCK_SEQPACKET, as internal/shimwire/server.go does), accepts the
 * real shim's start request (wire version 3, internal/shimwire/wire.go: 'S'
 * head with SCM_RIGHTS for the working directory, then 'C' body packets:
 * path, argc, argv..., env...), answers 'G', takes the caller's stdio from
 * its 'F' packet, starts path with argv and the fixed environment given on
 * the command line by posix_spawn (the received stdio as 0-2, the received
 * directory by fchdir, in the caller's process group), answers 'B' "g"
 * with the program's pid, waits on its pidfd and answers 'E' "x<code>" or
 * "s<sig>" as the Go launcher does. Access and notice packets are read
 * and dropped. 'K' packets are passed on with pidfd_send_signal. One
 * thread, one poll loop. -decline answers every complete request 'D'
 * at once (the caller then execs the program itself): the request's half
 * of the round trip alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION 3
#define MAX_MSG 16384
#define MAX_START (1 << 20)
#define MAX_CONNS 256
#define MAX_ARGV 4096

enum { HEAD, BODY, FILES, RUNNING };

struct conn {
	int fd;
	int state;
	int fds[3]; /* received with 'F': stdio as named by which */
	int nfds;
	int dir; /* received with 'S': the working directory */
	char which[4];
	pid_t peer;
	size_t len, got;
	char *body;
	int pidfd;
};

static struct conn conns[MAX_CONNS];
static int nconns;
static char **fixed_env;
static int decline;
static char pkt[MAX_MSG + 1];
static unsigned long started, reports; /* programs begun, reports dropped: printed on SIGTERM */
static volatile sig_atomic_t stop;

static void on_term(int sig) {
	(void)sig;
	stop = 1;
}

static void drop(struct conn *c) {
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	if (c->dir >= 0)
		close(c->dir);
	if (c->pidfd >= 0) {
		/* The stand-in went away first: nothing waits for the program. */
		syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
		close(c->pidfd);
	}
	free(c->body);
	close(c->fd);
	*c = conns[--nconns];
}

static void answer(int fd, const char *msg, size_t n) { (void)send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT); }

/* start runs the program of a complete request; 0 when it began. */
static int start(struct conn *c) {
	char *b = c->body, *end = b + c->len;
	if (c->len == 0 || end[-1] != 0)
		return -1;
	char *path = b;
	b += strlen(b) + 1;
	if (b >= end)
		return -1;
	long argc = strtol(b, NULL, 10);
	b += strlen(b) + 1;
	if (argc < 1 || argc >= MAX_ARGV)
		return -1;
	char *argv[MAX_ARGV];
	for (long i = 0; i < argc; i++) {
		if (b >= end)
			return -1;
		argv[i] = b;
		b += strlen(b) + 1;
	}
	argv[argc] = NULL;
	/* The caller's environment follows; this server ignores it and gives
	 * the program the fixed one. */

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	int have[3] = {0};
	for (int i = 0; c->which[i]; i++) {
		int target = c->which[i] - '0';
		posix_spawn_file_actions_adddup2(&fa, c->fds[i], target);
		have[target] = 1;
	}
	for (int i = 0; i < 3; i++)
		if (!have[i])
			posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_addfchdir_np(&fa, c->dir);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	pid_t pgid = c->peer > 0 ? getpgid(c->peer) : -1;
	short flags = POSIX_SPAWN_SETSIGMASK;
	if (pgid > 0) {
		posix_spawnattr_setpgroup(&at, pgid);
		flags |= POSIX_SPAWN_SETPGROUP;
	}
	posix_spawnattr_setflags(&at, flags);
	pid_t pid;
	int err = posix_spawn(&pid, path, &fa, &at, argv, fixed_env);
	int joined = pgid > 0;
	if (err == EPERM && pgid > 0) { /* another session: a group of its own */
		posix_spawnattr_setpgroup(&at, 0);
		err = posix_spawn(&pid, path, &fa, &at, argv, fixed_env);
		joined = 0;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	close(c->dir);
	c->dir = -1;
	free(c->body);
	c->body = NULL;
	if (err != 0) {
		char d[] = {VERSION, 'D', 's', 'p', 'a', 'w', 'n', 0};
		answer(c->fd, d, sizeof d);
		return -1;
	}
	c->pidfd = pidfd_open(pid, 0);
	if (c->pidfd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	/* As the Go launcher does where the caller can see the program: its
	 * pid, which the caller polls a pidfd of. */
	char begun[32];
	int nb = snprintf(begun, sizeof begun, "%c%c%c%c%d", VERSION, 'B', joined ? 'g' : 'o', 0, (int)pid);
	answer(c->fd, begun, (size_t)nb + 1);
	c->state = RUNNING;
	started++;
	return 0;
}

/* readable reads what the connection has; 0 keeps it, -1 drops it. */
static int readable(struct conn *c) {
	for (;;) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * 4)];
		} u;
		struct iovec iov = {pkt, sizeof pkt};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
		ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		int got[4], ngot = 0;
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
				int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				for (int i = 0; i < k; i++) {
					int fd;
					memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
					if (ngot < 4)
						got[ngot++] = fd;
					else
						close(fd);
				}
			}
		if (n < 2 || (pkt[1] != 'C' && n < 3) || pkt[0] != VERSION || (pkt[1] != 'C' && pkt[n - 1] != 0) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			for (int i = 0; i < ngot; i++)
				close(got[i]);
			return -1;
		}
		char type = pkt[1];
		if (c->state == HEAD && type == 'S') {
			/* pid \0 length \0, the directory by SCM_RIGHTS */
			char *f1 = pkt + 2, *f2 = f1 + strlen(f1) + 1;
			size_t len = f2 < pkt + n ? (size_t)strtoul(f2, NULL, 10) : 0;
			if (len < 1 || len > MAX_START || ngot != 1) {
				for (int i = 0; i < ngot; i++)
					close(got[i]);
				return -1;
			}
			c->dir = got[0];
			c->len = len;
			c->got = 0;
			if ((c->body = malloc(len)) == NULL)
				return -1;
			c->state = BODY;
			continue;
		}
		if (c->state == FILES && type == 'F') {
			/* which \0: the descriptors of 0-2 that came, in order */
			size_t nw = strlen(pkt + 2);
			if (nw > 3 || (int)nw != ngot) {
				for (int i = 0; i < ngot; i++)
					close(got[i]);
				return -1;
			}
			memcpy(c->which, pkt + 2, nw + 1);
			memcpy(c->fds, got, sizeof(int) * (size_t)ngot);
			c->nfds = ngot;
			if (start(c) != 0)
				return -1;
			continue;
		}
		for (int i = 0; i < ngot; i++)
			close(got[i]);
		if (c->state == BODY && type == 'C') {
			size_t k = (size_t)n - 2;
			if (c->got + k > c->len)
				return -1;
			memcpy(c->body + c->got, pkt + 2, k);
			c->got += k;
			if (c->got < c->len)
				continue;
			if (decline) {
				char d[] = {VERSION, 'D', 'n', 'o', 0};
				answer(c->fd, d, sizeof d);
				return -1; /* the connection is closed */
			}
			/* Granted: the caller sends its stdio ('F'), then it starts. */
			char g[] = {VERSION, 'G', 0};
			answer(c->fd, g, sizeof g);
			c->state = FILES;
			continue;
		}
		if (c->state == RUNNING && type == 'K') {
			int sig = atoi(pkt + 2);
			if (sig > 0 && sig < 65)
				syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0);
			continue;
		}
		/* 'A', 'N' (reports): dropped. */
		reports++;
	}
}

/* ended answers the program's exit and closes the connection. */
static void ended(struct conn *c) {
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) != 0 || si.si_pid == 0)
		return;
	close(c->pidfd);
	c->pidfd = -1;
	char e[32];
	int n;
	if (si.si_code == CLD_EXITED)
		n = snprintf(e, sizeof e, "%c%cx%d", VERSION, 'E', si.si_status & 0xff);
	else
		n = snprintf(e, sizeof e, "%c%cs%d", VERSION, 'E', si.si_status);
	answer(c->fd, e, (size_t)n + 1);
	drop(c);
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "-decline") == 0) {
		decline = 1;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: grantfloor-server [-decline] SOCKET [KEY=VALUE ...]\n");
		return 2;
	}
	fixed_env = argv + 2;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(argv[1]) >= sizeof a.sun_path) {
		fprintf(stderr, "grantfloor-server: socket path too long\n");
		return 2;
	}
	strcpy(a.sun_path, argv[1]);
	int ln = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	unlink(argv[1]);
	if (ln < 0 || bind(ln, (struct sockaddr *)&a, sizeof a) != 0 || listen(ln, 128) != 0) {
		perror("grantfloor-server");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term; /* no SA_RESTART: poll returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	/* Ready: the script waits for this line. */
	printf("ready\n");
	fflush(stdout);
	struct pollfd pf[1 + 2 * MAX_CONNS];
	struct conn *who[1 + 2 * MAX_CONNS];
	for (;;) {
		int np = 0;
		pf[np++] = (struct pollfd){.fd = ln, .events = POLLIN};
		for (int i = 0; i < nconns; i++) {
			who[np] = &conns[i];
			pf[np++] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
			if (conns[i].pidfd >= 0) {
				who[np] = &conns[i];
				pf[np++] = (struct pollfd){.fd = conns[i].pidfd, .events = POLLIN};
			}
		}
		if (stop) {
			struct rusage self, kids;
			getrusage(RUSAGE_SELF, &self);
			getrusage(RUSAGE_CHILDREN, &kids);
#define US(tv) ((double)(tv).tv_sec * 1e6 + (double)(tv).tv_usec)
			fprintf(stderr,
			        "grantfloor-server: %lu programs started, %lu other packets dropped; "
			        "CPU: the server %.0f ms, its programs %.0f ms\n",
			        started, reports, (US(self.ru_utime) + US(self.ru_stime)) / 1e3,
			        (US(kids.ru_utime) + US(kids.ru_stime)) / 1e3);
			unlink(argv[1]);
			return 0;
		}
		if (poll(pf, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("grantfloor-server: poll");
			return 1;
		}
		/* The program's end first: its connection may also be readable
		 * (the stand-in waits, but a 'K' may be queued). Connections are
		 * handled from the last, as drop moves the last into a freed slot;
		 * one event per connection per round. */
		int handled[MAX_CONNS] = {0};
		for (int p = np - 1; p >= 1; p--) {
			if (!pf[p].revents)
				continue;
			struct conn *c = who[p];
			int idx = (int)(c - conns);
			if (handled[idx])
				continue;
			handled[idx] = 1;
			if (pf[p].fd == c->pidfd)
				ended(c);
			else if (readable(c) != 0)
				drop(c);
		}
		if (pf[0].revents & POLLIN) {
			for (;;) {
				int fd = accept4(ln, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (fd < 0)
					break;
				if (nconns >= MAX_CONNS) {
					close(fd);
					continue;
				}
				struct ucred cr;
				socklen_t cl = sizeof cr;
				pid_t peer = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 ? cr.pid : -1;
				struct conn *c = &conns[nconns++];
				*c = (struct conn){.fd = fd, .state = HEAD, .peer = peer, .dir = -1, .pidfd = -1};
				/* The request is sent right after connect: read it now. */
				if (readable(c) != 0)
					drop(c);
			}
		}
	}
}
