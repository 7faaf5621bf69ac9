/*
 * wire.h: what libenvsieve.so and envsieve-start share: the wire format's
 * version and limits (docs/shim.md), and the small helpers both speak it
 * with. Every function here is async-signal-safe: raw system calls and
 * bounded buffers, no malloc, no stdio, no locks.
 */
#ifndef ENVSIEVE_WIRE_H
#define ENVSIEVE_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define WIRE_VERSION 3
#define MAX_MSG 16384     /* one packet */
#define MAX_START 1048576 /* the body of one start request: path, argv, environment */

/* LIT is the length of a string literal without its NUL, counted by the
 * compiler; the "" refuses anything but a literal. */
#define LIT(s) (sizeof("" s) - 1)
/* STARTS_WITH says whether s begins with the literal prefix lit. */
#define STARTS_WITH(s, lit) (strncmp((s), (lit), LIT(lit)) == 0)
/* IS_KEY says whether the len bytes at e are exactly the literal lit. */
#define IS_KEY(e, len, lit) ((len) == LIT(lit) && memcmp((e), (lit), LIT(lit)) == 0)
/* VALUE_OF is value_in for a literal key. */
#define VALUE_OF(env, lit) value_in((env), (lit), LIT(lit))

/* value_in returns the value of key (len bytes) in env, or NULL. */
static inline char *value_in(char *const *env, const char *key, size_t len) {
	if (env == NULL)
		return NULL;
	for (; *env; env++) {
		const char *e = *env;
		if (e[0] == key[0] && strncmp(e, key, len) == 0 && e[len] == '=')
			return (char *)e + len + 1;
	}
	return NULL;
}

/* put appends n bytes of s and a NUL to buf; (size_t)-1 once it overflows. */
static inline size_t put(char *buf, size_t at, size_t cap, const char *s, size_t n) {
	if (at == (size_t)-1 || at + n + 1 > cap)
		return (size_t)-1;
	memcpy(buf + at, s, n);
	buf[at + n] = 0;
	return at + n + 1;
}

static inline size_t put_str(char *buf, size_t at, size_t cap, const char *s) {
	return put(buf, at, cap, s, strlen(s));
}

/* put_num appends v in decimal. */
static inline size_t put_num(char *buf, size_t at, size_t cap, unsigned long v) {
	char rev[24], tmp[24];
	int n = 0;
	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && n < 20);
	for (int i = 0; i < n; i++)
		tmp[i] = rev[n - 1 - i];
	return put(buf, at, cap, tmp, (size_t)n);
}

/* wire_addr fills a with the socket path sock; 0 when it does not fit. */
static inline socklen_t wire_addr(const char *sock, struct sockaddr_un *a) {
	size_t n = sock ? strlen(sock) : 0;
	if (n == 0 || n >= sizeof a->sun_path)
		return 0;
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, sock, n + 1);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* wire_door hands the launcher one end of a socket pair through its door,
 * a datagram socket beside its socket (named "d"), and returns the other
 * end: for a process that may not create a unix socket (Claude Code's
 * sandbox refuses socket(AF_UNIX) with a seccomp filter, but not
 * socketpair). A datagram's receiver cannot be asked who it is, so the door
 * is used only when it and its directory are this user's and the
 * directory is private (0700): no other user can then have put it there. */
static inline int wire_door(const struct sockaddr_un *a) {
	struct sockaddr_un d = *a;
	char *slash = strrchr(d.sun_path, '/');
	if (slash == NULL || slash == d.sun_path || (size_t)(slash - d.sun_path) + 3 > sizeof d.sun_path)
		return -1;
	struct stat st;
	uid_t me = getuid();
	*slash = 0;
	if (lstat(d.sun_path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 077) != 0)
		return -1;
	slash[0] = '/';
	slash[1] = 'd';
	slash[2] = 0;
	if (lstat(d.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != me)
		return -1;
	socklen_t dlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)(slash - d.sun_path) + 3);
	int sv[2], dg[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg) != 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	char open_msg[2] = {WIRE_VERSION, 'O'};
	struct iovec iov = {open_msg, sizeof open_msg};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_name = &d;
	m.msg_namelen = dlen;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &sv[1], sizeof(int));
	ssize_t n = sendmsg(dg[0], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(dg[0]);
	close(dg[1]);
	close(sv[1]);
	if (n != (ssize_t)sizeof open_msg) {
		close(sv[0]);
		return -1;
	}
	return sv[0];
}

/* wire_dial connects to the launcher. The listener must be this process's
 * own user (or root): once the launcher has exited and its directory is
 * gone, another user could listen at the same path and answer. Where
 * creating a unix socket is refused (EPERM, EACCES: a sandbox's seccomp
 * filter), it goes through the launcher's door (wire_door). */
static inline int wire_dial(const struct sockaddr_un *a, socklen_t len) {
	if (len == 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return (errno == EPERM || errno == EACCES) ? wire_door(a) : -1;
	struct ucred cred;
	socklen_t cl = sizeof cred;
	if (connect(fd, (const struct sockaddr *)a, len) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
	    (cred.uid != getuid() && cred.uid != geteuid() && cred.uid != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* glob matches the n bytes at s against a pattern of '*' (any run of
 * bytes) and '?' (one byte), as internal/pattern does; the pattern is
 * [p, pe). */
static inline int glob(const char *p, const char *pe, const char *s, size_t n) {
	const char *star = NULL, *retry = NULL, *se = s + n;
	while (s < se) {
		if (p < pe && (*p == '?' || *p == *s)) {
			p++;
			s++;
		} else if (p < pe && *p == '*') {
			star = p++;
			retry = s;
		} else if (star) {
			p = star + 1;
			s = ++retry;
		} else {
			return 0;
		}
	}
	while (p < pe && *p == '*')
		p++;
	return p == pe;
}

/* any_glob reports whether the n bytes at s match a line of list. */
static inline int any_glob(const char *list, const char *s, size_t n) {
	for (const char *p = list; *p;) {
		const char *e = p;
		while (*e && *e != '\n')
			e++;
		if (glob(p, e, s, n))
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

#endif
