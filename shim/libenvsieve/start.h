/*
 * start.h: the start request (wire types S, C and, once the launcher has
 * answered G, F) and the stand-in that follows it, shared by envsieve-start (start.c) and libenvsieve.so, which
 * makes the request itself in a forked child (envsieve.c, start_here).
 *
 * The process that makes the request stands in for the program the
 * launcher starts: it passes on the signals sent to it and exits as the
 * program exited. Everything here is async-signal-safe and runs between
 * fork and exec: raw system calls, the request's body in a private
 * mapping, no malloc, no stdio, no locks.
 */
#ifndef ENVSIEVE_START_H
#define ENVSIEVE_START_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wire.h"

#define ANSWER_TIMEOUT_MS 10000 /* the launcher's decision and its fork, in all */

static int st_conn = -1;  /* the start request's own connection */
static int st_joined;     /* the program is in this process's group */
static long st_prog;      /* the program's pid, from "begun", when this process can see it; else 0 */
static int st_pidfd = -1; /* the program's pidfd, with "begun", when this process cannot see it (the namespace seal) */
/* The relays: for descriptors 1 and 2 that are a pipe or a socket (what a
 * reader waits on to its end), the launcher gets the write end of a pipe
 * of this process's, not the descriptor itself; this process keeps the
 * read end (st_relay[k], k 0 for 1, 1 for 2; the same pipe for both when 1
 * and 2 are the same pipe) and copies what arrives to st_relay_to[k]. A
 * launcher stopped with the pipe holds nothing of the caller's: when this
 * process gives up at the bound and exits, the reader sees its end. */
static int st_relay[2] = {-1, -1};
static int st_relay_to[2] = {1, 2};

/* st_unrelay closes the relays' read ends. */
static void st_unrelay(void) {
	for (int k = 0; k < 2; k++)
		if (st_relay[k] >= 0) {
			if (k == 0 || st_relay[1] != st_relay[0])
				close(st_relay[k]);
			st_relay[k] = -1;
		}
}

/* st_pump copies what the relay k holds to its descriptor: 1 while it is
 * open, 0 once it ended (the end of file, or the reader gone: then the
 * read end closes, and the program's next write gets EPIPE). */
static int st_pump(int k) {
	if (st_relay[k] < 0)
		return 0;
	sigset_t pipe_sig, old;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_sig, &old);
	ssize_t n;
	do
		n = splice(st_relay[k], NULL, st_relay_to[k], NULL, 1 << 16, SPLICE_F_MOVE);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EPIPE) {
		struct timespec zero = {0, 0};
		(void)sigtimedwait(&pipe_sig, NULL, &zero);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (n > 0)
		return 1;
	int shared = st_relay[0] == st_relay[1];
	close(st_relay[k]);
	st_relay[k] = -1;
	if (shared)
		st_relay[0] = st_relay[1] = -1;
	return 0;
}

/* st_drain copies what the relays hold now, without waiting for more. */
static void st_drain(void) {
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 1024 && st_relay[k] >= 0; i++) {
			struct pollfd p = {.fd = st_relay[k], .events = POLLIN};
			if (poll(&p, 1, 0) <= 0 || !st_pump(k))
				break;
		}
	}
}

/* st_send sends one packet, retrying an interrupted call. */
static int st_send(int fd, const char *buf, size_t n, int flags) {
	for (;;) {
		if (send(fd, buf, n, flags | MSG_NOSIGNAL) == (ssize_t)n)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* st_forward passes a signal on to the program. One the terminal sent to
 * the whole process group (si_code SI_KERNEL) already reached a program
 * that joined the group. */
static void st_forward(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	if (st_joined && si && si->si_code == SI_KERNEL)
		return;
	int saved = errno;
	char buf[32] = {WIRE_VERSION, 'K'};
	size_t at = put_num(buf, 2, sizeof buf, (unsigned long)sig);
	if (at != (size_t)-1)
		(void)send(st_conn, buf, at, MSG_DONTWAIT | MSG_NOSIGNAL);
	errno = saved;
}

/* the signals passed on to the program */
static const int st_forwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGALRM, SIGCONT};
#define ST_NFORWARDED (sizeof st_forwarded / sizeof st_forwarded[0])

static inline int st_is_forwarded(int sig) {
	for (size_t i = 0; i < ST_NFORWARDED; i++)
		if (st_forwarded[i] == sig)
			return 1;
	return 0;
}

/* st_catcher is the disposition that passes a signal on. */
static void st_catcher(struct sigaction *sa) {
	memset(sa, 0, sizeof *sa);
	sa->sa_sigaction = st_forward;
	sa->sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa->sa_mask);
}

static long st_now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* st_answer waits for one packet from the launcher, up to timeout_ms (-1:
 * forever). Its length, 0 when the launcher closed (a reset too: it closed
 * before reading all this process sent), -1 on a timeout or an error. The
 * one descriptor a packet may carry (the program's pidfd, with "begun")
 * is put in *fd, close-on-exec; -1 when none came. Any more are closed. */
static ssize_t st_answer(char *buf, size_t cap, int timeout_ms, int *fd) {
	*fd = -1;
	long deadline = st_now_ms() + timeout_ms;
	for (;;) {
		int left = timeout_ms < 0 ? -1 : (int)(deadline - st_now_ms());
		if (timeout_ms >= 0 && left <= 0)
			return -1;
		struct pollfd pfd = {.fd = st_conn, .events = POLLIN};
		int r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		union {
			struct cmsghdr c;
			char space[CMSG_SPACE(sizeof(int) * 4)];
		} u;
		struct iovec iov = {.iov_base = buf, .iov_len = cap};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.space, .msg_controllen = sizeof u.space};
		ssize_t n = recvmsg(st_conn, &m, MSG_TRUNC | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k; i++) {
				int got;
				memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
				if (*fd < 0)
					*fd = got;
				else
					close(got);
			}
		}
		if (n >= 0 && (m.msg_flags & MSG_CTRUNC) && *fd >= 0) {
			close(*fd); /* more than this process takes: none is trusted */
			*fd = -1;
		}
		if (n < 0 && errno == ECONNRESET)
			return 0; /* the launcher closed with what this process sent unread */
		if (n < 0 || (size_t)n > cap)
			return -1;
		return n;
	}
}

/* st_start connects to the launcher (st_conn) and sends the start request:
 * a header packet carrying the working directory, then the body (path,
 * argc, argv..., envp...) in continuation packets. Descriptors 0-2 are not
 * sent here: only once the launcher has decided to start the program
 * (st_decide). Everything is laid out before it connects, so the request
 * follows the connection at once and the launcher reads it in one go. A
 * body that fits one packet is built in that packet, on the stack; a
 * larger one in a private anonymous mapping, unmapped before it returns.
 * 0 when sent; -1 (st_conn closed and -1) when not. */
static int st_start(const struct sockaddr_un *addr, socklen_t alen, const char *path, char *const argv[],
                    char *const envp[]) {
	size_t argc = 0, len = strlen(path) + 1 + 24;
	while (argv && argv[argc])
		len += strlen(argv[argc++]) + 1;
	for (char *const *e = envp; e && *e; e++)
		len += strlen(*e) + 1;
	if (len > MAX_START)
		return -1;
	char pkt[MAX_MSG];
	pkt[0] = WIRE_VERSION;
	pkt[1] = 'C';
	int small = len <= MAX_MSG - 2;
	char *body = small ? pkt + 2 : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (body == MAP_FAILED)
		return -1;
	size_t at = put_str(body, 0, len, path);
	at = put_num(body, at, len, argc);
	for (size_t i = 0; i < argc; i++)
		at = put_str(body, at, len, argv[i]);
	for (char *const *e = envp; e && *e; e++)
		at = put_str(body, at, len, *e);
	int cwd = -1, ok = 0;
	if (at == (size_t)-1)
		goto out;
	if ((cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		goto out;

	char head[128] = {WIRE_VERSION, 'S'};
	size_t h = put_num(head, 2, sizeof head, (unsigned long)getpid());
	h = put_num(head, h, sizeof head, at);
	union {
		struct cmsghdr c;
		char space[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = head, .iov_len = h};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.space, .msg_controllen = sizeof u.space};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &cwd, sizeof(int));
	if ((st_conn = wire_dial(addr, alen)) < 0)
		goto out;
	ssize_t sent;
	do
		sent = sendmsg(st_conn, &m, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	ok = sent == (ssize_t)h;
	if (small) {
		ok = ok && st_send(st_conn, pkt, at + 2, 0) == 0;
	} else {
		for (size_t off = 0; ok && off < at; off += MAX_MSG - 2) {
			size_t n = at - off < MAX_MSG - 2 ? at - off : MAX_MSG - 2;
			memcpy(pkt + 2, body + off, n);
			ok = st_send(st_conn, pkt, n + 2, 0) == 0;
		}
	}
out:
	if (cwd >= 0)
		close(cwd);
	if (!small)
		munmap(body, len);
	if (!ok && st_conn >= 0) {
		close(st_conn);
		st_conn = -1;
	}
	return ok ? 0 : -1;
}

/* st_files sends descriptors 0-2 (those open) to the launcher, in one F
 * packet: the reply to its G; for 1 and 2 that are a pipe or a socket, the
 * write end of a relay (st_relay) in their place, so that the launcher
 * never holds what a reader waits on. 0 when sent. */
static int st_files(void) {
	int fds[3], nfds = 0, wr[2] = {-1, -1};
	struct stat one = {0};
	char pkt[8] = {WIRE_VERSION, 'F'};
	for (int i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) >= 0) {
			pkt[2 + nfds] = (char)('0' + i);
			fds[nfds] = i;
			struct stat st;
			if (i > 0 && fstat(i, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
				int k = i - 1, p[2];
				if (k == 1 && wr[0] >= 0 && st.st_dev == one.st_dev && st.st_ino == one.st_ino) {
					st_relay[1] = st_relay[0];
					fds[nfds] = wr[0];
				} else if (pipe2(p, 0) == 0) {
					st_relay[k] = p[0];
					wr[k] = p[1];
					fds[nfds] = p[1];
				}
				if (k == 0)
					one = st;
			}
			nfds++;
		}
	pkt[2 + nfds] = 0;
	union {
		struct cmsghdr c;
		char space[CMSG_SPACE(sizeof fds)];
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = pkt, .iov_len = (size_t)nfds + 3};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0) {
		m.msg_control = u.space;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t sent;
	do
		sent = sendmsg(st_conn, &m, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	for (int k = 0; k < 2; k++)
		if (wr[k] >= 0)
			close(wr[k]);
	return sent == (ssize_t)iov.iov_len ? 0 : -1;
}

/* what st_decide found */
#define ST_NONE 0   /* no answer: nothing was given away, the caller runs the program itself */
#define ST_BEGUN 'B'
#define ST_DECLINED 'D'
#define ST_HELD 'H' /* the launcher has descriptors 0-2 and did not answer in time: it may yet start the program */
#define ST_BAD 'M'  /* a malformed answer */

/* st_decide waits for the launcher's decision on the request st_start
 * sent, ANSWER_TIMEOUT_MS in all. On G (granted) it sends descriptors 0-2
 * (st_files) and waits on for "begun". buf (cap bytes) holds the last
 * answer. Until the descriptors are sent, no answer (a timeout, the
 * launcher gone, a short packet) is ST_NONE: the launcher never had them,
 * and once this process closes st_conn the launcher cannot start the
 * program. After, a timeout is ST_HELD; the launcher closing the
 * connection (it closes the descriptors first) is ST_NONE. */
static int st_decide1(char *buf, size_t cap);
static int st_decide(char *buf, size_t cap) {
	int got = st_decide1(buf, cap);
	if (got != ST_BEGUN)
		st_unrelay(); /* nothing to copy: the caller runs the program itself, or fails closed */
	return got;
}

static int st_decide1(char *buf, size_t cap) {
	long deadline = st_now_ms() + ANSWER_TIMEOUT_MS;
	int sent = 0;
	for (;;) {
		long left = deadline - st_now_ms();
		int fd = -1;
		ssize_t n = left > 0 ? st_answer(buf, cap, (int)left, &fd) : -1;
		/* A descriptor comes only with "begun" (the program's pidfd). */
		if (fd >= 0 && !(n >= 3 && buf[1] == 'B' && sent)) {
			close(fd);
			fd = -1;
		}
		if (n == 0)
			return ST_NONE;
		if (n < 3 || buf[0] != WIRE_VERSION || buf[n - 1] != 0) {
			if (fd >= 0)
				close(fd);
			return sent ? ST_HELD : ST_NONE;
		}
		if (buf[1] == 'G' && n == 3 && !sent) {
			if (st_files() != 0)
				return ST_NONE;
			sent = 1;
			continue;
		}
		if (buf[1] == 'D')
			return ST_DECLINED;
		if (buf[1] == 'B' && sent) {
			/* "g" or "o", then the program's pid where this process
			 * can see it (st_wait) */
			st_prog = 0;
			const char *p = buf + 2;
			while (*p)
				p++;
			if (p + 1 < buf + n) {
				long v = 0;
				int digits = 0;
				for (p++; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
					v = v * 10 + (*p - '0');
				if (digits > 0 && *p == 0)
					st_prog = v;
			}
			/* The pidfd of a program this process cannot see: kept
			 * open (not close-on-exec) past the shim's close_cloexec;
			 * this process never execs once the program has begun. */
			if (fd >= 0 && st_prog == 0 && fcntl(fd, F_SETFD, 0) == 0)
				st_pidfd = fd;
			else if (fd >= 0)
				close(fd);
			return ST_BEGUN;
		}
		return ST_BAD;
	}
}

/* st_finish exits as the program did: its exit code, or its signal. */
__attribute__((noreturn)) static void st_finish(const char *status) {
	const char *p = status + 1;
	long v = 0;
	int digits = 0;
	while (*p >= '0' && *p <= '9' && digits < 4) {
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (digits == 0 || *p != 0)
		_exit(125);
	if (status[0] == 'x' && v >= 0 && v <= 255)
		_exit((int)v);
	if (status[0] == 's' && v > 0 && v < NSIG) {
		struct rlimit no = {0, 0};
		setrlimit(RLIMIT_CORE, &no); /* the program dumped its own core, if any */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction((int)v, &dfl, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, (int)v);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), (int)v);
	}
	_exit(status[0] == 's' && v > 0 && v < NSIG ? 128 + (int)v : 125);
}

/* st_say writes "envsieve-start: PATH: MSG" to stderr, without stdio. */
static void st_say(const char *path, const char *msg) {
	char buf[1024];
	size_t at = 0;
	const char *parts[] = {"envsieve-start: ", path, ": ", msg, "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		size_t n = strlen(parts[i]);
		if (n > sizeof buf - at)
			n = sizeof buf - at;
		memcpy(buf + at, parts[i], n);
		at += n;
	}
	(void)!write(2, buf, at);
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* st_wait waits, after "begun", for the program's exit and exits as it
 * did. Through a pidfd (its own of st_prog where this process can see the
 * program; else the launcher's, st_pidfd, under the namespace seal) it
 * sees the program end without the launcher, and waits for the
 * launcher's word on how it ended (E) at most ANSWER_TIMEOUT_MS more: a
 * launcher stopped then holds it no longer than that, and it fails closed
 * (125). */
__attribute__((noreturn)) static void st_wait(const char *path) {
	char buf[512];
	int pfd = st_pidfd >= 0 ? st_pidfd : st_prog > 0 ? (int)syscall(SYS_pidfd_open, (pid_t)st_prog, 0) : -1;
	long ended = -1; /* when the program was seen to end */
	for (;;) {
		int timeout = -1;
		if (ended >= 0) {
			long left = ended + ANSWER_TIMEOUT_MS - st_now_ms();
			if (left <= 0) {
				st_drain();
				st_say(path, "the program ended, and the launcher did not say how in time (is it stopped?)");
				_exit(125);
			}
			timeout = (int)left;
		}
		struct pollfd p[4] = {{.fd = st_conn, .events = POLLIN},
		                      {.fd = pfd >= 0 && ended < 0 ? pfd : -1, .events = POLLIN},
		                      {.fd = st_relay[0], .events = POLLIN},
		                      {.fd = st_relay[1] != st_relay[0] ? st_relay[1] : -1, .events = POLLIN}};
		int r = poll(p, 4, timeout);
		if (r < 0 && errno != EINTR) {
			st_say(path, "the launcher went away");
			_exit(125);
		}
		if (r <= 0)
			continue;
		if (p[0].revents) {
			ssize_t n = recv(st_conn, buf, sizeof buf - 1, MSG_TRUNC | MSG_DONTWAIT);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n > (ssize_t)(sizeof buf - 1))
				n = -1; /* cut short: not an answer */
			if (n >= 4 && buf[0] == WIRE_VERSION && buf[1] == 'E' && buf[n - 1] == 0) {
				st_drain();
				st_finish(buf + 2);
			}
			if (n <= 0) {
				st_say(path, "the launcher went away");
				_exit(125);
			}
		}
		if (pfd >= 0 && ended < 0 && p[1].revents)
			ended = st_now_ms();
		for (int k = 0; k < 2; k++)
			if (p[2 + k].fd >= 0 && p[2 + k].revents)
				st_pump(k);
	}
}

#endif
