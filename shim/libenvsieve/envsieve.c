/*
 * libenvsieve.so: envsieve's LD_PRELOAD shim. README.md says why it exists
 * and what it guarantees; docs/shim.md has the wire format and what each
 * runtime makes of it.
 *
 * Three jobs, all driven by variables the launcher sets:
 *
 *   ENVSIEVE_SHIM_HIDE=K1,K2  hide these keys: before main they leave
 *                             environ and the initial environment block
 *                             (/proc/self/environ), getenv still returns
 *                             them, children never inherit them.
 *   ENVSIEVE_SHIM_SOCK=PATH   report every getenv, secure_getenv, setenv,
 *                             unsetenv, putenv and clearenv by key name
 *                             (never value) to the launcher listening there.
 *   ENVSIEVE_SHIM_EXEC=1      exec-time grants: an exec or posix_spawn of
 *                             a program a rule may match runs
 *   ENVSIEVE_SHIM_START=PATH  envsieve-start in its place, which has the
 *                             launcher start the program outside the tree
 *                             (start.c); the tree never holds a grant. A
 *                             child fork() made (one thread, a small image)
 *                             makes that request itself and stands in for
 *                             the program (start.h), saving the exec.
 *   ENVSIEVE_SHIM_RULES=G...  the rules' command globs, one per line: only
 *                             a program whose name matches one goes to the
 *                             launcher (unset: every program does).
 *   ENVSIEVE_SHIM_DROP=R...   the rules that only deny keys, one per line
 *                             ("command-glob TAB deny-glob TAB ..."): a
 *                             program no rule in the list above matches,
 *                             and one of these does, runs here without the
 *                             keys its deny globs match (no launcher hop).
 *   ENVSIEVE_SHIM_INTERP=N:P  in the /usr/bin/env of a granted #!/usr/bin/env
 *                             N script: the one exec (N, found at the real
 *                             file P, with env's own argv) that keeps the
 *                             granted keys; removed before main.
 *
 * Rules this file keeps:
 *   - No malloc, stdio, locks or getenv on any path that can run between
 *     fork and exec or in a vfork child: reports and exec requests use raw
 *     system calls and bounded stack buffers. Only the constructor and
 *     setenv/putenv of a hidden key allocate.
 *   - Never re-enter: nothing here calls an interposed function.
 *   - Fail closed and carry on: when the launcher is gone, slow, full,
 *     not a socket or another user's, a report is dropped and a program
 *     runs without grants (minus what the rules deny, and minus the keys
 *     granted to this process, which it must not pass on).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dirent.h>
#include <pthread.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <elf.h>

#include "start.h"
#include "wire.h"

extern char **environ;

#define MAX_ENV 2048          /* entries of an envp we rebuild */
#define MAX_ARGS 4096         /* execl-style argument lists */
#define MAX_HIDE 64           /* hidden keys */
#define MAX_REPORT_NAME 256   /* longer names are cut in reports */
#define SEEN_SLOTS 4096       /* reported (op, name) pairs, per process */

/* ---- state, set once by init ---- */

/* HOT places what the constructor writes and an exec reads in one small
 * section of .data, which shares its page with the .got.plt the loader
 * writes at every start anyway: the constructor's writes then fault in no
 * page of their own, and a forked child's exec reads only pages its parent
 * already has (fork copies those mappings; a page the parent never touched
 * faults again in every child). Big, rarely used tables stay in .bss,
 * where only the pages a process uses cost it. docs/benchmarks.md, "The
 * shim per exec". */
#define HOT __attribute__((section(".data.envsieve")))

static atomic_int g_state HOT;              /* 0 new, 1 running, 2 done */
static struct sockaddr_un g_addr HOT;
static socklen_t g_addrlen HOT;             /* 0: no launcher */
static int g_exec HOT;                      /* ask for exec-time grants */
static int g_secure HOT;                    /* AT_SECURE */
/* The launch's variables, copied by the constructor into the arena below:
 * each "" when unset or too long (the caps are the limits the shim always
 * had). The *env ones are whole "KEY=VALUE" entries carried on to the
 * programs this one starts; the lists point at the value inside. */
#define CAP_PRELOAD 4096                    /* "LD_PRELOAD=..." */
#define CAP_SOCKENV 160                     /* "ENVSIEVE_SHIM_SOCK=..." */
#define CAP_GRANTED 2048                    /* a granted list shorter than this */
#define CAP_LIST 4096                       /* a rules, deny or drop list shorter than this */
#define CAP_START (4096 + 32)               /* "ENVSIEVE_SHIM_START=..." */
static const char *g_preload HOT = "";      /* "LD_PRELOAD=..." to carry on */
static const char *g_sockenv HOT = "";      /* "ENVSIEVE_SHIM_SOCK=..." */
static const char *g_granted HOT = "";      /* names granted to this process, comma-separated */
#define MAX_GRANTED_VALUES 64
#define MIN_GRANTED_VALUE 8                 /* shorter values are not looked for in others */
static char *g_gvals[MAX_GRANTED_VALUES];  /* their values at start, copied */
static size_t g_gvals_len[MAX_GRANTED_VALUES];
static size_t g_ngvals HOT;
static char g_interp_name[256];             /* ENVSIEVE_SHIM_INTERP: the interpreter's name, */
static char g_interp_path[4096];            /* and its real file */
static atomic_int g_interp_armed HOT;       /* 1 until this image's first exec */
static pid_t g_interp_pid;                  /* the process the launcher started */
static int g_argc HOT;                      /* this image's argv, from the kernel */
static char **g_argv HOT;
static const char *g_rules HOT = "";        /* rule command globs, newline-separated */
static int g_rules_known HOT;               /* g_rules lists every rule: ask only on a match */
static const char *g_deny HOT = "";         /* the rules' deny globs, newline-separated */
static const char *g_drop HOT = "";         /* deny-only rules: "command\tdeny\tdeny\n..." */
static pid_t g_hide_pid HOT;                /* the process that hid keys */
static char g_hideenv[MAX_HIDE * (MAX_REPORT_NAME + 1) + 32]; /* "ENVSIEVE_SHIM_HIDE=..." for its own execs */
static int g_hide_over HOT;                 /* the list names more keys than the shim can hold */

/* The arena the launch's variables are copied into: the small part in the
 * hot section holds a usual launch's (a few hundred bytes), the big one
 * whatever does not fit there, up to every cap at once. */
static char g_arena[1024] HOT;
static char g_arena_big[CAP_PRELOAD + CAP_SOCKENV + CAP_GRANTED + 3 * (CAP_LIST + 32) + CAP_START];
static size_t g_arena_at HOT, g_arena_big_at HOT;

/* hidden entries: "KEY=VALUE" copies; a slot's pointer is swapped, never freed */
static _Atomic(char *) g_hidden[MAX_HIDE];
static size_t g_hidden_len[MAX_HIDE];       /* length of KEY */
static size_t g_nhidden HOT;

/* the report connection, shared by the threads of a process */
static atomic_int g_fd = -1;                /* -1 none, -2 connecting, -3 gave up */
static atomic_ulong g_fd_ino;
static _Atomic uint64_t g_seen[SEEN_SLOTS];

/* getenv's fast path: names already reported that live in read-only memory
 * (string literals), by address. A read-only string cannot change, so its
 * address stands for its content. */
#define PTR_SLOTS 1024
static _Atomic(const char *) g_seen_ptr[PTR_SLOTS];
static _Atomic(const char *) g_rw_ptr[PTR_SLOTS]; /* known not to be read-only */
#define MAX_RO 64 /* ranges: an object's read-only segments, merged, are usually one */
static struct {
	uintptr_t lo, hi;
} g_ro[MAX_RO] HOT;
static int g_nro HOT;

/* the real functions */
static char *(*real_getenv)(const char *) HOT;
static int (*real_setenv)(const char *, const char *, int) HOT;
static int (*real_unsetenv)(const char *) HOT;
static int (*real_putenv)(char *) HOT;
static int (*real_clearenv)(void) HOT;
static int (*real_execve)(const char *, char *const[], char *const[]) HOT;
static int (*real_execvpe)(const char *, char *const[], char *const[]) HOT;
static int (*real_fexecve)(int, char *const[], char *const[]) HOT;
static int (*real_posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                               const posix_spawnattr_t *, char *const[], char *const[]) HOT;
static int (*real_posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]) HOT;

static void init(void);

/* ---- small helpers, all async-signal-safe ---- */

/* name_len is the length of the name at the start of s ("KEY" in "KEY=v"). */
static size_t name_len(const char *s) {
	size_t n = 0;
	while (s[n] && s[n] != '=')
		n++;
	return n;
}

/* hash_fast hashes a name of len bytes a word at a time: the cost getenv
 * pays on every call to know whether the name was already reported. */
static inline uint64_t hash_fast(const char *s, size_t len) {
	uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ULL;
	uint64_t w;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	if (i < len) {
		w = 0;
		if (len >= 8)
			memcpy(&w, s + len - 8, 8); /* overlaps what was hashed; never reads past the end */
		else
			for (size_t j = 0; j < len; j++)
				w |= (uint64_t)(unsigned char)s[j] << (8 * j);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	return h;
}

static int in_list(const char *list, const char *key, size_t len) {
	const char *p = list;
	while (*p) {
		const char *q = p;
		while (*q && *q != ',')
			q++;
		if ((size_t)(q - p) == len && memcmp(p, key, len) == 0)
			return 1;
		p = *q ? q + 1 : q;
	}
	return 0;
}

static size_t put_pid(char *buf, size_t at, size_t cap) { return put_num(buf, at, cap, (unsigned long)getpid()); }

/* dial connects to the launcher (see wire_dial). */
static int dial(void) { return wire_dial(&g_addr, g_addrlen); }

/* report_fd returns this process's report connection, or -1. The inode
 * check catches a descriptor that the program closed and reused. */
static int report_fd(void) {
	int fd = atomic_load_explicit(&g_fd, memory_order_acquire);
	if (fd >= 0) {
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (unsigned long)st.st_ino == atomic_load_explicit(&g_fd_ino, memory_order_relaxed))
			return fd;
	} else if (fd != -1) {
		return -1; /* another thread is connecting, or the launcher is gone */
	}
	if (!atomic_compare_exchange_strong(&g_fd, &fd, -2))
		return -1;
	int nfd = dial();
	struct stat st;
	if (nfd < 0 || fstat(nfd, &st) != 0) {
		if (nfd >= 0)
			close(nfd);
		atomic_store(&g_fd, -3);
		return -1;
	}
	atomic_store_explicit(&g_fd_ino, (unsigned long)st.st_ino, memory_order_relaxed);
	atomic_store_explicit(&g_fd, nfd, memory_order_release);
	return nfd;
}

/* send_msg sends one packet without blocking the program for more than a
 * moment: when the launcher's queue is full it waits up to 2 ms for room,
 * then gives up. A launcher that stays full for many packets in a row is
 * given up on for good: reports are dropped, the program goes on. 0 when
 * sent. */
static atomic_int g_fails;

static int send_msg(int fd, const char *buf, size_t n) {
	int saved = errno, ok = 0;
	for (int try = 0; try < 2; try++) {
		if (send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n) {
			ok = 1;
			break;
		}
		if ((errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || atomic_load(&g_fails) > 0)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		(void)poll(&pfd, 1, 2);
	}
	if (ok)
		atomic_store(&g_fails, 0);
	else if (atomic_fetch_add(&g_fails, 1) >= 64)
		atomic_store(&g_fd, -3);
	errno = saved;
	return ok ? 0 : -1;
}

/* report_key is the key of (op, name) in the seen table and the
 * launcher's table of known reports; h is the name's hash_fast. */
/* claim marks a key (report_key) as reported in the seen table and
 * returns its slot; -1 when it was reported already; SEEN_SLOTS when its neighbourhood
 * is full (it is reported again). A report that cannot be sent is
 * released, so that a later access tries again. */
static uint64_t report_key(char op, uint64_t h) {
	h ^= (uint64_t)(unsigned char)op * 0x9E3779B97F4A7C15ULL;
	h ^= h >> 33; /* murmur3's finaliser: every input bit reaches the index */
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h == 0 ? 1 : h;
}

static int claim(uint64_t h) {
	size_t i = (size_t)h & (SEEN_SLOTS - 1);
	for (int probe = 0; probe < 8; probe++, i = (i + 1) & (SEEN_SLOTS - 1)) {
		uint64_t cur = atomic_load_explicit(&g_seen[i], memory_order_relaxed);
		if (cur == h)
			return -1;
		if (cur == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong(&g_seen[i], &zero, h))
				return (int)i;
			if (zero == h)
				return -1;
		}
	}
	return SEEN_SLOTS;
}

static void release(int slot, uint64_t key) {
	if (slot >= 0 && slot < SEEN_SLOTS)
		atomic_compare_exchange_strong(&g_seen[slot], &key, 0);
}

/* The launch's table of known reports: a file "k" beside the launcher's
 * socket, in its private directory, holding the keys (as claim makes them)
 * of the reports the launcher has had from any process of the tree. It is
 * mapped read-only at the first report; a report it holds is not sent, so
 * a process that reads only names the launch knows never connects. The
 * launcher alone writes it (internal/shimwire/known.go); without it, every report is
 * sent. */
#define KNOWN_SLOTS 8192
static _Atomic uintptr_t g_known; /* 0 not looked for, 1 none, else the mapping */

static const _Atomic uint64_t *known_table(void) {
	uintptr_t k = atomic_load_explicit(&g_known, memory_order_acquire);
	if (k != 0)
		return k > 1 ? (const _Atomic uint64_t *)k : NULL;
	uintptr_t m = 1;
	char path[sizeof g_addr.sun_path];
	memcpy(path, g_addr.sun_path, sizeof path);
	char *slash = strrchr(path, '/');
	struct stat st;
	uid_t me = getuid();
	if (slash && slash != path && (size_t)(slash - path) + 3 <= sizeof path) {
		*slash = 0;
		/* Only the user's own private directory: no one else can have put
		 * a table there that would silence reports. */
		int dir_ok = lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == me && (st.st_mode & 077) == 0;
		slash[0] = '/';
		slash[1] = 'k';
		slash[2] = 0;
		int fd = dir_ok ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
		if (fd >= 0) {
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == me &&
			    st.st_size == (off_t)(KNOWN_SLOTS * sizeof(uint64_t))) {
				/* MAP_POPULATE: one call maps every page, where each
				 * lookup would otherwise fault one in (16 pages). */
				void *p = mmap(NULL, KNOWN_SLOTS * sizeof(uint64_t), PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
				if (p != MAP_FAILED)
					m = (uintptr_t)p;
			}
			close(fd);
		}
	}
	uintptr_t none = 0;
	if (!atomic_compare_exchange_strong(&g_known, &none, m)) {
		if (m > 1)
			munmap((void *)m, KNOWN_SLOTS * sizeof(uint64_t));
		m = none;
	}
	return m > 1 ? (const _Atomic uint64_t *)m : NULL;
}

/* known reports whether the launcher has the report of this key. */
static int known(uint64_t key) {
	int saved = errno;
	const _Atomic uint64_t *t = known_table();
	errno = saved;
	if (t == NULL)
		return 0;
	size_t i = (size_t)key & (KNOWN_SLOTS - 1);
	for (int probe = 0; probe < 8; probe++, i = (i + 1) & (KNOWN_SLOTS - 1)) {
		uint64_t cur = atomic_load_explicit(&t[i], memory_order_relaxed);
		if (cur == key)
			return 1;
		if (cur == 0)
			return 0;
	}
	return 0;
}

static void report(char op, const char *name, size_t len, uint64_t h) {
	if (atomic_load_explicit(&g_state, memory_order_acquire) != 2 || g_addrlen == 0)
		return;
	/* The known table first: a report the launcher has is never sent,
	 * so it needs no slot in the seen table either (whose pages a
	 * process then never touches). */
	uint64_t key = report_key(op, h);
	if (known(key))
		return;
	int slot = claim(key);
	if (slot < 0)
		return;
	int saved = errno; /* a failed connect must not show through getenv */
	int fd = report_fd();
	/* Another thread is connecting: give it a moment. */
	for (int spin = 0; fd < 0 && spin < 200 && atomic_load(&g_fd) == -2; spin++) {
		sched_yield();
		fd = report_fd();
	}
	errno = saved;
	if (fd < 0) {
		release(slot, key);
		return;
	}
	char buf[MAX_REPORT_NAME + 64];
	char o[2] = {op, 0};
	size_t at = 2;
	buf[0] = WIRE_VERSION;
	buf[1] = 'A';
	at = put_pid(buf, at, sizeof buf);
	at = put(buf, at, sizeof buf, o, 1);
	at = put(buf, at, sizeof buf, name, len > MAX_REPORT_NAME ? MAX_REPORT_NAME : len);
	if (at == (size_t)-1 || send_msg(fd, buf, at) != 0)
		release(slot, key);
}

/* ---- hidden keys ---- */

static char g_hidden_names[MAX_HIDE][MAX_REPORT_NAME + 1];

static int hidden_slot(const char *name, size_t len) {
	for (size_t i = 0; i < g_nhidden; i++)
		if (g_hidden_len[i] == len && memcmp(g_hidden_names[i], name, len) == 0)
			return (int)i;
	return -1;
}

/* ---- the interposed environment functions ---- */

/* getenv_quiet is getenv without the report. */
static char *getenv_quiet(const char *name, size_t len) {
	if (g_nhidden) {
		int i = hidden_slot(name, len);
		if (i >= 0) {
			char *e = atomic_load(&g_hidden[i]);
			return e ? e + len + 1 : NULL;
		}
	}
	if (real_getenv)
		return real_getenv(name);
	return len && !memchr(name, '=', len) ? value_in(environ, name, len) : NULL;
}

static size_t ptr_slot(const char *p) {
	return (size_t)((uintptr_t)p >> 1) & (PTR_SLOTS - 1);
}

static int read_only(const char *p) {
	for (int i = 0; i < g_nro; i++)
		if ((uintptr_t)p >= g_ro[i].lo && (uintptr_t)p < g_ro[i].hi)
			return 1;
	return 0;
}

/* getenv_slow is getenv's slow path: the first read of a name through this
 * address. Once the shim is ready, a name in read-only memory is remembered
 * by address, and its next reads take the fast path. */
__attribute__((noinline, cold)) static char *getenv_slow(const char *name) {
	size_t len = strlen(name);
	if (atomic_load_explicit(&g_state, memory_order_acquire) == 2) {
		report('g', name, len, hash_fast(name, len));
		size_t slot = ptr_slot(name);
		if (atomic_load_explicit(&g_rw_ptr[slot], memory_order_relaxed) != name) {
			if (read_only(name) && read_only(name + len))
				atomic_store_explicit(&g_seen_ptr[slot], name, memory_order_relaxed);
			else
				atomic_store_explicit(&g_rw_ptr[slot], name, memory_order_relaxed);
		}
	}
	return getenv_quiet(name, len);
}

static char *getenv_hiding(const char *name) { return getenv_quiet(name, strlen(name)); }

/* g_plain is how getenv's fast path looks a name up: the real getenv, or
 * getenv_hiding when keys are hidden (and until the shim is ready). */
static char *(*g_plain)(const char *) HOT = getenv_hiding;

char *getenv(const char *name) {
	if (atomic_load_explicit(&g_seen_ptr[ptr_slot(name)], memory_order_relaxed) != name)
		return getenv_slow(name);
	return g_plain(name);
}

char *secure_getenv(const char *name) {
	size_t len = strlen(name);
	if (g_addrlen)
		report('s', name, len, hash_fast(name, len));
	if (g_secure)
		return NULL;
	return getenv_quiet(name, len);
}

int setenv(const char *name, const char *value, int overwrite) {
	if (atomic_load(&g_state) != 2)
		init();
	size_t len = name ? name_len(name) : 0;
	if (name && len > 0 && name[len] == 0) {
		report('S', name, len, hash_fast(name, len));
		int i = g_nhidden ? hidden_slot(name, len) : -1;
		if (i >= 0) {
			/* A hidden key stays hidden: the new value is private too. */
			if (!overwrite && atomic_load(&g_hidden[i]))
				return 0;
			if (value == NULL) {
				errno = EINVAL;
				return -1;
			}
			size_t vl = strlen(value);
			char *e = malloc(len + vl + 2);
			if (!e) {
				errno = ENOMEM;
				return -1;
			}
			memcpy(e, name, len);
			e[len] = '=';
			memcpy(e + len + 1, value, vl + 1);
			atomic_store(&g_hidden[i], e);
			return 0;
		}
	}
	if (!real_setenv) {
		errno = ENOSYS;
		return -1;
	}
	return real_setenv(name, value, overwrite);
}

int unsetenv(const char *name) {
	if (atomic_load(&g_state) != 2)
		init();
	size_t len = name ? name_len(name) : 0;
	if (name && len > 0 && name[len] == 0) {
		report('U', name, len, hash_fast(name, len));
		int i = g_nhidden ? hidden_slot(name, len) : -1;
		if (i >= 0)
			atomic_store(&g_hidden[i], NULL);
	}
	if (!real_unsetenv) {
		errno = ENOSYS;
		return -1;
	}
	return real_unsetenv(name);
}

int putenv(char *string) {
	if (atomic_load(&g_state) != 2)
		init();
	size_t len = string ? name_len(string) : 0;
	if (string && len > 0) {
		report('P', string, len, hash_fast(string, len));
		int i = g_nhidden && string[len] == '=' ? hidden_slot(string, len) : -1;
		if (i >= 0) {
			atomic_store(&g_hidden[i], string);
			return 0;
		}
	}
	if (!real_putenv) {
		errno = ENOSYS;
		return -1;
	}
	return real_putenv(string);
}

int clearenv(void) {
	if (atomic_load(&g_state) != 2)
		init();
	report('C', "", 0, 0);
	for (size_t i = 0; i < g_nhidden; i++)
		atomic_store(&g_hidden[i], NULL);
	if (!real_clearenv) {
		environ = NULL;
		return 0;
	}
	return real_clearenv();
}

/* ---- exec-time grants ---- */

/* search resolves file the way execvp does (PATH of the calling process,
 * default "/bin:/usr/bin"), into out. */
static const char *search(const char *file, char *out, size_t cap) {
	if (file == NULL || *file == 0)
		return file;
	if (strchr(file, '/'))
		return file;
	const char *path = VALUE_OF(environ, "PATH");
	if (path == NULL)
		path = "/bin:/usr/bin";
	size_t fl = strlen(file);
	const char *p = path;
	for (;;) {
		const char *q = p;
		while (*q && *q != ':')
			q++;
		size_t dl = (size_t)(q - p);
		if (dl == 0) {
			dl = 1;
			p = ".";
		}
		if (dl + 1 + fl + 1 <= cap) {
			memcpy(out, p, dl);
			out[dl] = '/';
			memcpy(out + dl + 1, file, fl + 1);
			if (access(out, X_OK) == 0)
				return out;
		}
		if (*q == 0)
			break;
		p = q + 1;
	}
	return file;
}

struct edit {
	char *envp[MAX_ENV + 8];
	char *argv[MAX_ARGS + 3]; /* envsieve-start's: its path, the program's path, the program's argv */
	int fd;                   /* the checked program to execveat, or -1 */
	int start;                /* run envsieve-start with argv instead of the program */
	int interp;               /* run g_interp_path, with the granted keys */
};

/* interp_exec reports whether this exec is the one ENVSIEVE_SHIM_INTERP
 * names: in the process the launcher started (an env running a granted
 * #!/usr/bin/env NAME script, which the kernel gave the argv "env NAME
 * SCRIPT ARGS..."), its first exec, of exactly its own argv minus env's
 * name (so no option, assignment or -S of env's own), whose argv[0] is
 * NAME and whose file is the real file the launcher checked (same device
 * and inode: a NAME the tree planted earlier in PATH is not it). That exec
 * keeps the granted keys, and runs that file. Every later exec, and any
 * other, loses them, as in any granted program. */
static int interp_exec(const char *path, int fd, char *const argv[]) {
	int armed = 1;
	if (!atomic_compare_exchange_strong(&g_interp_armed, &armed, 0))
		return 0; /* once: the first exec decides */
	if (fd >= 0 || path == NULL || argv == NULL || g_argv == NULL || g_argc < 2 || getpid() != g_interp_pid ||
	    strcmp(g_argv[1], g_interp_name) != 0)
		return 0;
	size_t i = 0;
	while (argv[i] && i + 1 < (size_t)g_argc && g_argv[i + 1] && strcmp(argv[i], g_argv[i + 1]) == 0)
		i++;
	if (argv[i] != NULL || i + 1 != (size_t)g_argc)
		return 0;
	struct stat a, b;
	return stat(path, &a) == 0 && stat(g_interp_path, &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static void notice(const char *path, const char *reason) {
	char buf[1024];
	size_t at = 2;
	size_t pl = path ? strlen(path) : 0;
	buf[0] = WIRE_VERSION;
	buf[1] = 'N';
	at = put_pid(buf, at, sizeof buf);
	at = put(buf, at, sizeof buf, path ? path : "", pl > 512 ? 512 : pl);
	at = put_str(buf, at, sizeof buf, reason);
	int fd = report_fd();
	if (fd >= 0 && at != (size_t)-1)
		(void)send_msg(fd, buf, at);
}

/* start_argv prepares ed->argv for envsieve-start: "envsieve-start PATH
 * ARGV...". 0 when it fits. */
static int start_argv(const char *path, char *const argv[], struct edit *ed) {
	size_t n = 0;
	ed->argv[n++] = (char *)"envsieve-start";
	ed->argv[n++] = (char *)path;
	for (size_t i = 0; argv && argv[i]; i++) {
		if (n >= MAX_ARGS + 2) {
			notice(path, "argv-too-large");
			return -1;
		}
		ed->argv[n++] = argv[i];
	}
	ed->argv[n] = NULL;
	return 0;
}

/* base_name returns the last element of path and its length in *n: the
 * shim's own loop, where strrchr would fault in a page of libc in each
 * forked child. */
static const char *base_name(const char *path, size_t *n) {
	const char *base = path, *p = path;
	for (; *p; p++)
		if (*p == '/')
			base = p + 1;
	*n = (size_t)(p - base);
	return base;
}

/* rule_may_match reports whether a rule could apply to the program at
 * path: its basename matches a rule's command glob. Without the list, any
 * program may match. */
static int rule_may_match(const char *path) {
	if (!g_rules_known)
		return 1;
	if (path == NULL)
		return 0;
	size_t n;
	const char *base = base_name(path, &n);
	return any_glob(g_rules, base, n);
}

/* ---- carrying hidden keys into a new image ---- */

#if defined(__x86_64__)
#define EM_NATIVE EM_X86_64
#elif defined(__aarch64__)
#define EM_NATIVE EM_AARCH64
#elif defined(__i386__)
#define EM_NATIVE EM_386
#else
#define EM_NATIVE EM_NONE /* an unknown machine: never carry */
#endif
#if __SIZEOF_POINTER__ == 8
#define ELFCLASS_NATIVE ELFCLASS64
#else
#define ELFCLASS_NATIVE ELFCLASS32
#endif
#define MAX_SHEBANG 4 /* the kernel follows as many #! interpreters */

/* loads_shim reports whether the file open at fd, once executed, is certain
 * to load this shim again (1) or not (0): a regular file that is neither
 * setuid, setgid nor carries file capabilities (the loader ignores
 * LD_PRELOAD paths in a secure-execution program), and either an ELF
 * program of this machine's kind with a program interpreter, or a #! script
 * whose absolute interpreter is such a file. *is_elf says which. Anything
 * it cannot read or does not know is "not certain". */
static int loads_shim(int fd, int depth, int *is_elf) {
	struct stat st;
	*is_elf = 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID)) != 0)
		return 0;
	if (fgetxattr(fd, "security.capability", NULL, 0) >= 0 || (errno != ENODATA && errno != ENOTSUP))
		return 0;
	char head[256];
	ssize_t n = pread(fd, head, sizeof head - 1, 0);
	if (n < 4)
		return 0;
	head[n] = 0;
	if (head[0] == '#' && head[1] == '!') {
		if (depth >= MAX_SHEBANG)
			return 0;
		char *p = head + 2;
		while (*p == ' ' || *p == '\t')
			p++;
		char *q = p;
		while (*q && *q != ' ' && *q != '\t' && *q != '\n')
			q++;
		if (*p != '/' || (*q == 0 && n == (ssize_t)sizeof head - 1))
			return 0; /* relative, or longer than we read */
		*q = 0;
		int ifd = open(p, O_RDONLY | O_CLOEXEC);
		if (ifd < 0)
			return 0;
		int elf, ok = loads_shim(ifd, depth + 1, &elf);
		close(ifd);
		return ok;
	}
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph[64];
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS_NATIVE || eh.e_machine != EM_NATIVE ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > 64)
		return 0;
	size_t len = (size_t)eh.e_phnum * sizeof(ElfW(Phdr));
	if (pread(fd, ph, len, (off_t)eh.e_phoff) != (ssize_t)len)
		return 0;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_INTERP) {
			*is_elf = 1;
			return 1;
		}
	return 0;
}

/* preload_is_shim reports whether envp leaves LD_PRELOAD exactly as this
 * shim had it, or unset (the shim then adds its own). */
static int preload_is_shim(char *const envp[]) {
	for (size_t i = 0; envp && envp[i]; i++)
		if (STARTS_WITH(envp[i], "LD_PRELOAD="))
			return g_preload[0] && strcmp(envp[i], g_preload) == 0;
	return g_preload[0] != 0;
}

/* may_carry decides whether the hidden keys go into the image about to
 * replace this process. When they do and the program is an ELF file,
 * ed->fd holds it open for execveat, so the file checked is the file run
 * (a path swapped in between cannot be). fd >= 0 checks that descriptor
 * (fexecve) instead of path. */
static int may_carry(const char *path, int fd, char *const envp[], struct edit *ed) {
	if (!preload_is_shim(envp) || g_hideenv[0] == 0 || g_hide_over)
		return 0;
	int own = fd < 0;
	if (own) {
		if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return 0;
	}
	int elf, ok = loads_shim(fd, 0, &elf);
	if (own) {
		if (ok && elf)
			ed->fd = fd;
		else
			close(fd);
	}
	return ok;
}

/* raw_syscall makes a system call without libc: it touches none of libc's
 * pages (a forked child faults in each one it runs: fork does not copy the
 * mappings of files) and leaves errno alone. -errno on failure. */
static inline long raw_syscall(long n, long a, long b, long c, long d) {
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#else
	int saved = errno;
	long r = syscall(n, a, b, c, d);
	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
#endif
}

/* static_program reports whether path is an ELF file without PT_INTERP: the
 * shim cannot load into it, so the programs it starts are not intercepted. */
static int static_program(const char *path) {
	if (path == NULL)
		return 0;
	int fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	/* The program headers are read 8 at a time: a small frame, which a
	 * forked child's exec writes on fewer fresh pages of stack. */
	Elf64_Ehdr eh;
	Elf64_Phdr ph[8];
	int result = 0;
	if (raw_syscall(SYS_pread64, fd, (long)&eh, sizeof eh, 0) == (long)sizeof eh &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum <= 64) {
		result = 1;
		for (int at = 0; result == 1 && at < eh.e_phnum; at += 8) {
			int k = eh.e_phnum - at < 8 ? eh.e_phnum - at : 8;
			long n = (long)k * (long)sizeof(Elf64_Phdr);
			if (raw_syscall(SYS_pread64, fd, (long)ph, n, (long)(eh.e_phoff + (Elf64_Off)at * sizeof(Elf64_Phdr))) != n)
				result = 0;
			for (int i = 0; result == 1 && i < k; i++)
				if (ph[i].p_type == PT_INTERP)
					result = 0;
		}
	}
	raw_syscall(SYS_close, fd, 0, 0, 0);
	return result;
}

static const char *g_rulesenv HOT = "";     /* "ENVSIEVE_SHIM_RULES=..." */
static const char *g_denyenv HOT = "";      /* "ENVSIEVE_SHIM_DENY=..." */
static const char *g_dropenv HOT = "";      /* "ENVSIEVE_SHIM_DROP=..." */
static const char *g_startenv HOT = "";     /* "ENVSIEVE_SHIM_START=..." */
static const char *g_start HOT;             /* envsieve-start, inside g_startenv */
#define NCARRIED 7
static const char *const carried[NCARRIED] = {"LD_PRELOAD",          "ENVSIEVE_SHIM_SOCK", "ENVSIEVE_SHIM_EXEC",
                                              "ENVSIEVE_SHIM_RULES", "ENVSIEVE_SHIM_DENY", "ENVSIEVE_SHIM_START",
                                              "ENVSIEVE_SHIM_DROP"};
/* carried_env is what carried names, set by init: "" for what is not carried. */
static const char *carried_env[NCARRIED] HOT;

/* drop_line returns the deny globs (up to the end of their line) of the
 * first deny-only rule whose command glob matches the n bytes at base, or
 * NULL. Such a rule changes nothing but removes keys: it is applied here,
 * in the calling process, with no launcher hop (docs/shim.md). */
static const char *drop_line(const char *base, size_t n) {
	for (const char *p = g_drop; *p;) {
		const char *e = p, *tab = NULL;
		while (*e && *e != '\n') {
			if (!tab && *e == '\t')
				tab = e;
			e++;
		}
		if (tab && glob(p, tab, base, n))
			return tab + 1;
		p = *e ? e + 1 : e;
	}
	return NULL;
}

/* dropped reports whether the key of len bytes at k matches one of the
 * tab-separated deny globs of line (up to its newline). */
static int dropped(const char *line, const char *k, size_t len) {
	for (const char *p = line; *p && *p != '\n';) {
		const char *e = p;
		while (*e && *e != '\t' && *e != '\n')
			e++;
		if (e > p && glob(p, e, k, len))
			return 1;
		p = *e == '\t' ? e + 1 : e;
	}
	return 0;
}

/* holds_granted reports whether the value v holds one of the values
 * granted to this process: a copy under another name (npm gives the
 * scripts it runs each config value it expanded as npm_config_KEY, so
 * x=${NPM_TOKEN} in a project's .npmrc would pass the token on) goes
 * where the key itself does not. */
static int holds_granted(const char *v) {
	if (g_ngvals == 0)
		return 0;
	size_t n = strlen(v);
	for (size_t i = 0; i < g_ngvals; i++)
		if (n >= g_gvals_len[i] && memmem(v, n, g_gvals[i], g_gvals_len[i]) != NULL)
			return 1;
	return 0;
}

/* rewrite returns the envp the program starts with, and decides how it
 * starts.
 *
 * With grants on, a program a rule may match is not run here: ed->start is
 * set, and the caller runs envsieve-start with ed->argv instead, which asks
 * the launcher to start the program outside the tree (the tree never holds
 * a granted value). allow_start 0 (envsieve-start could not run), no
 * envsieve-start, or an argv too long for it: the program runs here minus
 * every key a rule's deny matches (fail closed). Either way it loses the
 * names granted to this process, which it must not pass on, and every
 * variable holding one of their values (holds_granted), but for the one
 * exec ENVSIEVE_SHIM_INTERP names (interp_exec); the shim's own variables
 * are carried on.
 *
 * An exec of the process that hid keys (not of a child it forked: is_exec
 * and the same pid, as in `env node` or bash's `exec`) is the same process
 * going on: its hidden keys go with it, to be hidden again, but only into
 * an image certain to load this shim (may_carry); else they are dropped.
 * fd >= 0 is the program's descriptor (fexecve).
 *
 * Returns envp itself when there is nothing to do, NULL (errno set) when
 * envp is too large to rewrite. */
static char *const *rewrite(const char *path, int fd, char *const argv[], char *const envp[], struct edit *ed,
                            int is_exec, int allow_start) {
	ed->fd = -1;
	ed->start = 0;
	ed->interp = 0;
	if (atomic_load(&g_state) != 2)
		return envp;
	/* errno is saved only around the calls that may set it: a forked
	 * child's exec that asks nothing then touches no libc page for it
	 * (static_program uses raw system calls). */
	int saved;
	int asked = 0;
	if (is_exec && atomic_load(&g_interp_armed)) {
		saved = errno;
		ed->interp = interp_exec(path, fd, argv);
		errno = saved;
	}
	if (ed->interp) {
		/* The launcher already granted to this interpreter: no request. */
		path = g_interp_path;
	} else if (g_exec) {
		if (static_program(path)) {
			saved = errno;
			notice(path, "static-program");
			errno = saved;
		}
		asked = rule_may_match(path);
		if (asked && allow_start && g_start && path) {
			saved = errno;
			ed->start = access(path, X_OK) == 0 && start_argv(path, argv, ed) == 0;
			errno = saved;
		}
	}
	int carry = 0;
	if (!ed->start && is_exec && g_nhidden && getpid() == g_hide_pid) {
		saved = errno;
		carry = may_carry(path, fd, envp, ed);
		errno = saved;
	}
	if (!g_exec && !carry)
		return envp;
	int strip_denies = asked && !ed->start && g_deny[0];
	/* Matched by no rule that may grant: a deny-only rule that matches is
	 * applied here. The launcher lists every rule in ENVSIEVE_SHIM_RULES
	 * or none (then every program is asked about), so !asked means the
	 * list is known. */
	const char *drop = NULL;
	if (g_exec && !asked && g_drop[0] && path) {
		size_t n;
		const char *base = base_name(path, &n);
		drop = drop_line(base, n);
	}
	if (!carry && !strip_denies && !drop && g_granted[0] == 0)
		return envp;
	size_t n = 0;
	int have[NCARRIED] = {0};
	for (size_t i = 0; envp && envp[i]; i++) {
		const char *e = envp[i];
		size_t len = 0;
		while (e[len] && e[len] != '=')
			len++;
		if (!ed->interp && (in_list(g_granted, e, len) || (e[len] == '=' && holds_granted(e + len + 1))))
			continue;
		if (strip_denies && any_glob(g_deny, e, len))
			continue;
		if (drop && dropped(drop, e, len))
			continue;
		if (carry && (hidden_slot(e, len) >= 0 || IS_KEY(e, len, "ENVSIEVE_SHIM_HIDE")))
			continue;
		for (int c = 0; c < NCARRIED; c++)
			if (strlen(carried[c]) == len && memcmp(e, carried[c], len) == 0)
				have[c] = 1;
		if (n >= MAX_ENV) {
			errno = E2BIG;
			return NULL;
		}
		ed->envp[n++] = (char *)e;
	}
	if (carry) {
		for (size_t i = 0; i < g_nhidden && n < MAX_ENV; i++) {
			char *e = atomic_load(&g_hidden[i]);
			if (e)
				ed->envp[n++] = e;
		}
		if (n < MAX_ENV && g_hideenv[0])
			ed->envp[n++] = g_hideenv;
	}
	if (n + NCARRIED >= MAX_ENV + 8) {
		errno = E2BIG;
		return NULL;
	}
	for (int c = 0; c < NCARRIED; c++)
		if (!have[c] && carried_env[c][0] && (g_exec || c == 0))
			ed->envp[n++] = (char *)carried_env[c];
	ed->envp[n] = NULL;
	return ed->envp;
}

/* ---- starting a granted program from a forked child ---- */

/* g_fork_pid is the pid fork() returned 0 to in this image: set by the
 * atfork handler, so it is never set in a vfork or posix_spawn child (they
 * run no atfork handlers) and an exec wipes it. */
static __thread pid_t g_fork_pid __attribute__((tls_model("initial-exec")));

/* fork_child writes the thread's own block (beside the thread descriptor
 * the kernel writes the child's tid into), not a page of the shim's data
 * the child would copy, and asks for its pid with no libc call. */
static void fork_child(void) { g_fork_pid = (pid_t)raw_syscall(SYS_getpid, 0, 0, 0, 0); }

/* fork_prepare runs in the parent before its first fork: it binds the libc
 * functions a forked child's exec goes through (lazy binding would
 * otherwise look each up again in every child, from pages fork does not
 * copy: ~12 page faults per exec of a bash loop, docs/benchmarks.md
 * "The shim per exec"). Each call fails at once, with no effect. A process
 * that never forks pays nothing. */
static atomic_int g_forked;
static void fork_prepare(void) {
	/* A load first: a write after a fork would copy the page each time. */
	if (atomic_load_explicit(&g_forked, memory_order_relaxed) || atomic_exchange(&g_forked, 1))
		return;
	int saved = errno;
	char c;
	const char *volatile empty = "";
	volatile size_t none = 0;
	if (syscall(SYS_getpid) < 0 || pread(-1, &c, 0, 0) >= 0 || close(-1) == 0 || open(empty, O_RDONLY | O_CLOEXEC) >= 0 ||
	    access(empty, X_OK) == 0 || strrchr(empty, '/') != NULL || strlen(empty) != 0 || getpid() < 0 ||
	    memcmp(empty, empty, none) != 0 || strncmp(empty, empty, none) != 0 || memmem(empty, none, empty, none) == NULL) {
		/* every test is false, so every call is made; none has an effect */
	}
	errno = saved;
}

#define START_HERE_MAX_RSS (32L << 20) /* bytes of the caller's image kept while the program runs */

/* may_start_here reports whether this process can make the start request
 * itself and stand in for the program, instead of exec'ing envsieve-start:
 * it is a child fork() made (not a vfork or posix_spawn child, whose memory
 * is its parent's), it has one thread, and its image is small (the copy of
 * the caller's memory it keeps while the program runs). On 1, *fds is
 * /proc/self/fd, open, for close_cloexec. */
static int may_start_here(int *fds) {
	if (g_fork_pid == 0 || g_fork_pid != (pid_t)syscall(SYS_getpid))
		return 0;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* after the command's ")": field 3 on; num_threads is field 20, rss
	 * (pages) field 24 */
	char *p = strrchr(buf, ')');
	long threads = -1, rss = -1;
	for (int field = 2; p && *p; field++) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
		if (field + 1 == 20 || field + 1 == 24) {
			long v = 0;
			for (; *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (*p - '0');
			if (field + 1 == 20)
				threads = v;
			else
				rss = v;
		}
		if (field + 1 >= 24)
			break;
	}
	long page = sysconf(_SC_PAGESIZE);
	if (threads != 1 || rss < 0 || page <= 0 || rss > START_HERE_MAX_RSS / page)
		return 0;
	*fds = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return *fds >= 0;
}

/* close_cloexec closes what an exec would: every descriptor marked
 * close-on-exec, but keep and the directory listing them. */
static void close_cloexec(int dir, int keep) {
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
		if (n <= 0)
			break;
		for (long at = 0; at < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + at);
			at += d->d_reclen;
			const char *c = d->d_name;
			if (*c < '0' || *c > '9')
				continue;
			long fd = 0;
			for (; *c >= '0' && *c <= '9'; c++)
				fd = fd * 10 + (*c - '0');
			if (fd == dir || fd == keep)
				continue;
			int flags = fcntl((int)fd, F_GETFD);
			if (flags >= 0 && (flags & FD_CLOEXEC))
				close((int)fd);
		}
	}
	close(dir);
}

/* stand_in gives the signals the dispositions an exec would (handled ones
 * to their default, ignored ones stay ignored) except that those passed on
 * are caught, as envsieve-start has them; then it restores the caller's
 * mask, so a signal held meanwhile is passed on. */
static void stand_in(const sigset_t *old) {
	struct sigaction fwd, dfl, ign, cur;
	st_catcher(&fwd);
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &cur) != 0 || cur.sa_handler == SIG_IGN)
			continue;
		if (st_is_forwarded(sig))
			sigaction(sig, &fwd, NULL);
		else if (sig == SIGPIPE)
			sigaction(sig, &ign, NULL);
		else if (cur.sa_handler != SIG_DFL)
			sigaction(sig, &dfl, NULL);
	}
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* start_here is envsieve-start's work done in this forked child, which
 * saves an exec (may_start_here says when it may; fds is /proc/self/fd).
 * It sends the start request for path with argv and env (what
 * envsieve-start would have been given), with every signal held. Begun:
 * it closes what an exec would have closed, stands in for the program
 * and never returns. Otherwise it returns with the caller's signal
 * dispositions and mask untouched: 0 declined (run the program here, with
 * env), -1 no answer (run it here minus what the rules deny). */
static int start_here(int fds, const char *path, char *const argv[], char *const env[]) {
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	int got = ST_NONE;
	char buf[512];
	if (st_start(&g_addr, g_addrlen, path, argv, env) == 0)
		got = st_decide(buf, sizeof buf - 1);
	if (got == ST_BEGUN) {
		st_joined = buf[2] == 'g';
		close_cloexec(fds, st_conn);
		stand_in(&old);
		st_wait(path);
	}
	if (got == ST_HELD) {
		/* The launcher took descriptors 0-2 and may yet start the
		 * program: running it here too could run it twice. */
		st_say(path, "the launcher decided but did not start the program in time");
		_exit(125);
	}
	if (got != ST_NONE && got != ST_DECLINED) {
		st_say(path, "a malformed answer from the launcher");
		_exit(125);
	}
	/* No answer, and the launcher never had descriptors 0-2: closing the
	 * connection keeps it from starting the program. */
	if (st_conn >= 0)
		close(st_conn);
	st_conn = -1;
	close(fds);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return got == ST_DECLINED ? 0 : -1;
}

/* exec_checked runs the program may_carry checked, by its descriptor. */
static int exec_checked(struct edit *ed, char *const argv[], char *const env[]) {
	syscall(SYS_execveat, ed->fd, "", argv, env, AT_EMPTY_PATH);
	int saved = errno;
	close(ed->fd);
	errno = saved;
	return -1;
}

/* plain_exec reports whether rewrite would leave this exec as it is asked
 * for: the usual exec in a tree (a program no rule names, in a process
 * that holds no hidden or granted keys). It decides without struct edit,
 * whose 49 KiB of stack put every frame below it on pages a forked child
 * has never touched (three page faults per exec), and makes the
 * static-program check rewrite would have made. 0: rewrite decides. */
static int plain_exec(const char *path) {
	if (atomic_load(&g_state) != 2 || atomic_load(&g_interp_armed) || !g_exec || g_nhidden || g_granted[0] ||
	    path == NULL || rule_may_match(path))
		return 0;
	if (g_drop[0]) {
		size_t n;
		const char *base = base_name(path, &n);
		if (drop_line(base, n))
			return 0;
	}
	if (static_program(path)) {
		int saved = errno;
		notice(path, "static-program");
		errno = saved;
	}
	return 1;
}

static int exec_edited(const char *path, int fd, const char *file, char *const argv[], char *const envp[]);

/* exec_as execs path as rewrite decides: through envsieve-start, by the
 * checked descriptor, or as asked: by fd when fd >= 0 (fexecve), by a PATH
 * search for file when it is set (execvpe), else by path. When
 * envsieve-start cannot run, the program runs here after all. */
static int exec_as(const char *path, int fd, const char *file, char *const argv[], char *const envp[]) {
	if (!real_execve || !real_fexecve || !real_execvpe) {
		errno = ENOSYS;
		return -1;
	}
	if (!plain_exec(path))
		return exec_edited(path, fd, file, argv, envp);
	if (fd >= 0)
		return real_fexecve(fd, argv, envp);
	if (file)
		return real_execvpe(file, argv, envp);
	return real_execve(path, argv, envp);
}

/* exec_edited is exec_as for an exec rewrite may change. */
__attribute__((noinline)) static int exec_edited(const char *path, int fd, const char *file, char *const argv[],
                                                 char *const envp[]) {
	struct edit ed;
	char *const *env = rewrite(path, fd, argv, envp, &ed, 1, 1);
	if (env == NULL)
		return -1;
	int fds;
	if (ed.start && may_start_here(&fds)) {
		/* Declined: the program runs here as envsieve-start would run it. */
		if (start_here(fds, path, argv, env) == 0)
			ed.start = 0;
		else if ((env = rewrite(path, fd, argv, envp, &ed, 1, 0)) == NULL)
			return -1;
	}
	if (ed.start) {
		real_execve(g_start, ed.argv, env);
		notice(path, "start-helper-failed");
		if ((env = rewrite(path, fd, argv, envp, &ed, 1, 0)) == NULL)
			return -1;
	}
	if (ed.fd >= 0)
		return exec_checked(&ed, argv, env);
	if (ed.interp)
		return real_execve(g_interp_path, argv, env);
	if (fd >= 0)
		return real_fexecve(fd, argv, env);
	if (file)
		return real_execvpe(file, argv, env);
	return real_execve(path, argv, env);
}

int execve(const char *path, char *const argv[], char *const envp[]) { return exec_as(path, -1, NULL, argv, envp); }

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

int execvpe(const char *file, char *const argv[], char *const envp[]) {
	char buf[4096];
	return exec_as(search(file, buf, sizeof buf), -1, file, argv, envp);
}

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

int fexecve(int fd, char *const argv[], char *const envp[]) {
	char link[32] = "/proc/self/fd/";
	char path[4096];
	put_num(link, 14, sizeof link, (unsigned long)(fd < 0 ? 0 : fd));
	ssize_t l = readlink(link, path, sizeof path - 1);
	path[l > 0 ? l : 0] = 0;
	return exec_as(path, fd, NULL, argv, envp);
}

/* collect gathers execl-style arguments into argv; envp receives the
 * pointer after the terminating NULL when want_env is set. */
#define COLLECT(first, ap, argv, n)                                                                   \
	do {                                                                                          \
		argv[0] = (char *)(first);                                                            \
		n = 1;                                                                                \
		if (first) {                                                                          \
			char *a;                                                                      \
			while ((a = va_arg(ap, char *)) != NULL) {                                    \
				if (n >= MAX_ARGS) {                                                  \
					va_end(ap);                                                   \
					errno = E2BIG;                                                \
					return -1;                                                    \
				}                                                                     \
				argv[n++] = a;                                                        \
			}                                                                             \
		}                                                                                     \
		argv[n] = NULL;                                                                       \
	} while (0)

int execl(const char *path, const char *arg, ...) {
	char *argv[MAX_ARGS + 1];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT(arg, ap, argv, n);
	va_end(ap);
	return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...) {
	char *argv[MAX_ARGS + 1];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT(arg, ap, argv, n);
	va_end(ap);
	return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...) {
	char *argv[MAX_ARGS + 1];
	size_t n;
	va_list ap;
	va_start(ap, arg);
	COLLECT(arg, ap, argv, n);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* spawn_as spawns path as rewrite decides (see exec_as). */
static int spawn_as(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                    const posix_spawnattr_t *attr, char *const argv[], char *const envp[],
                    int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                const posix_spawnattr_t *, char *const[], char *const[]),
                    const char *as) {
	struct edit ed;
	char *const *env = rewrite(path, -1, argv, envp, &ed, 0, 1);
	if (env == NULL)
		return E2BIG;
	if (ed.start) {
		int err = real_posix_spawn(pid, g_start, fa, attr, ed.argv, env);
		if (err == 0)
			return 0;
		notice(path, "start-helper-failed");
		if ((env = rewrite(path, -1, argv, envp, &ed, 0, 0)) == NULL)
			return E2BIG;
	}
	return real(pid, as, fa, attr, argv, env);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
	if (!real_posix_spawn)
		return ENOSYS;
	return spawn_as(pid, path, fa, attr, argv, envp, real_posix_spawn, path);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
	char buf[4096];
	if (!real_posix_spawn || !real_posix_spawnp)
		return ENOSYS;
	const char *path = search(file, buf, sizeof buf);
	return spawn_as(pid, path, fa, attr, argv, envp, real_posix_spawnp, file);
}

/* ---- start-up ---- */

/* env_block finds the initial environment block in /proc/self/stat
 * (fields 50 and 51, env_start and env_end). */
static int env_block(uintptr_t *start, uintptr_t *end) {
	char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	int field = 2;
	uintptr_t vals[2] = {0, 0};
	for (p++; *p; p++) {
		if (*p == ' ') {
			field++;
			if (field == 50 || field == 51) {
				uintptr_t v = 0;
				for (char *q = p + 1; *q >= '0' && *q <= '9'; q++)
					v = v * 10 + (uintptr_t)(*q - '0');
				vals[field - 50] = v;
			}
		}
	}
	if (vals[0] == 0 || vals[1] <= vals[0])
		return -1;
	*start = vals[0];
	*end = vals[1];
	return 0;
}

/* readonly_segments records the read-only loaded segments of the program
 * and its libraries, for getenv's fast path. Segments are mapped whole
 * pages at a time, so one that starts on the page where the last range
 * ends (rounded up) extends it: an object's read-only segments take one
 * range, not three. */
static int readonly_segments(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	uintptr_t page = *(const uintptr_t *)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (g_nro > 0 && lo >= g_ro[g_nro - 1].hi && lo <= ((g_ro[g_nro - 1].hi + page - 1) & ~(page - 1))) {
			g_ro[g_nro - 1].hi = hi;
			continue;
		}
		if (g_nro >= MAX_RO)
			break;
		g_ro[g_nro].lo = lo;
		g_ro[g_nro].hi = hi;
		g_nro++;
	}
	return 0;
}

/* arena_alloc takes n bytes of the arena (the hot part first), or NULL. */
static char *arena_alloc(size_t n) {
	char *p = NULL;
	if (n <= sizeof g_arena - g_arena_at) {
		p = g_arena + g_arena_at;
		g_arena_at += n;
	} else if (n <= sizeof g_arena_big - g_arena_big_at) {
		p = g_arena_big + g_arena_big_at;
		g_arena_big_at += n;
	}
	return p;
}

/* keep_env copies "KEY=VALUE" into the arena and returns the copy, or ""
 * when it takes more than cap bytes (with its NUL). */
static const char *keep_env(const char *key, const char *val, size_t cap) {
	size_t kl = strlen(key), vl = strlen(val);
	char *dst = kl + 1 + vl + 1 <= cap ? arena_alloc(kl + 1 + vl + 1) : NULL;
	if (dst == NULL)
		return "";
	memcpy(dst, key, kl);
	dst[kl] = '=';
	memcpy(dst + kl + 1, val, vl + 1);
	return dst;
}

static void copy_env(char *dst, size_t cap, const char *key, const char *val) {
	size_t kl = strlen(key), vl = strlen(val);
	if (kl + 1 + vl + 1 > cap) {
		dst[0] = 0;
		return;
	}
	memcpy(dst, key, kl);
	dst[kl] = '=';
	memcpy(dst + kl + 1, val, vl + 1);
}

/* resolve_real looks up libc's own functions behind the shim's; each
 * real_* is then libc's or NULL, which the wrappers check. */
static void resolve_real(void) {
	real_getenv = dlsym(RTLD_NEXT, "getenv");
	real_setenv = dlsym(RTLD_NEXT, "setenv");
	real_unsetenv = dlsym(RTLD_NEXT, "unsetenv");
	real_putenv = dlsym(RTLD_NEXT, "putenv");
	real_clearenv = dlsym(RTLD_NEXT, "clearenv");
	real_execve = dlsym(RTLD_NEXT, "execve");
	real_execvpe = dlsym(RTLD_NEXT, "execvpe");
	real_fexecve = dlsym(RTLD_NEXT, "fexecve");
	real_posix_spawn = dlsym(RTLD_NEXT, "posix_spawn");
	real_posix_spawnp = dlsym(RTLD_NEXT, "posix_spawnp");
}

/* keep_launcher keeps the launcher's address, LD_PRELOAD and the exec
 * switch; g_exec is set only when the address is usable. */
static void keep_launcher(void) {
	const char *sock = VALUE_OF(environ, "ENVSIEVE_SHIM_SOCK");
	if ((g_addrlen = wire_addr(sock, &g_addr)) != 0)
		g_sockenv = keep_env("ENVSIEVE_SHIM_SOCK", sock, CAP_SOCKENV);
	const char *pre = VALUE_OF(environ, "LD_PRELOAD");
	if (pre)
		g_preload = keep_env("LD_PRELOAD", pre, CAP_PRELOAD);
	const char *ex = VALUE_OF(environ, "ENVSIEVE_SHIM_EXEC");
	g_exec = ex && ex[0] == '1' && g_addrlen != 0;
}

/* keep_list keeps the list in the variable key, shorter than CAP_LIST,
 * as "KEY=LIST" in *env and returns the list inside it; NULL when it is
 * unset or too long (*env stays ""). */
static const char *keep_list(const char *key, size_t klen, const char **env) {
	const char *v = value_in(environ, key, klen);
	if (v == NULL || strlen(v) >= CAP_LIST)
		return NULL;
	const char *e = keep_env(key, v, CAP_LIST + 32);
	if (e[0] == 0)
		return NULL;
	*env = e;
	return e + klen + 1;
}

/* keep_lists keeps the rule, deny and drop lists and envsieve-start's
 * path; a list too long to keep leaves the rules unknown (fail closed:
 * the launcher is asked about every program). */
static void keep_lists(void) {
	const char *rules = keep_list("ENVSIEVE_SHIM_RULES", LIT("ENVSIEVE_SHIM_RULES"), &g_rulesenv);
	if (rules) {
		g_rules = rules;
		g_rules_known = 1;
	}
	const char *deny = keep_list("ENVSIEVE_SHIM_DENY", LIT("ENVSIEVE_SHIM_DENY"), &g_denyenv);
	if (deny)
		g_deny = deny;
	const char *drop = keep_list("ENVSIEVE_SHIM_DROP", LIT("ENVSIEVE_SHIM_DROP"), &g_dropenv);
	if (drop)
		g_drop = drop;
	else if (VALUE_OF(environ, "ENVSIEVE_SHIM_DROP"))
		g_rules_known = 0; /* fail closed: ask the launcher about every program */
	const char *st = VALUE_OF(environ, "ENVSIEVE_SHIM_START");
	if (st && *st == '/' && strlen(st) < CAP_START - 32) {
		g_startenv = keep_env("ENVSIEVE_SHIM_START", st, CAP_START);
		if (g_startenv[0])
			g_start = g_startenv + LIT("ENVSIEVE_SHIM_START=");
	}
	const char *const env[NCARRIED] = {g_preload, g_sockenv, "ENVSIEVE_SHIM_EXEC=1", g_rulesenv,
	                                   g_denyenv, g_startenv, g_dropenv};
	memcpy(carried_env, env, sizeof env);
}

/* keep_granted keeps the granted names and copies their values to the
 * heap, before hiding takes any out of environ: what this process starts
 * then gets no variable that holds one. */
static void keep_granted(void) {
	const char *gr = VALUE_OF(environ, "ENVSIEVE_SHIM_GRANTED");
	size_t gl = gr ? strlen(gr) : 0;
	char *kept = gr && gl < CAP_GRANTED ? arena_alloc(gl + 1) : NULL;
	if (kept) {
		memcpy(kept, gr, gl + 1);
		g_granted = kept;
	}
	for (const char *p = g_granted; *p && g_ngvals < MAX_GRANTED_VALUES;) {
		const char *q = p;
		while (*q && *q != ',')
			q++;
		const char *v = q > p ? value_in(environ, p, (size_t)(q - p)) : NULL;
		size_t vl = v ? strlen(v) : 0;
		if (vl >= MIN_GRANTED_VALUE) {
			char *c = malloc(vl + 1);
			if (c) {
				memcpy(c, v, vl + 1);
				g_gvals[g_ngvals] = c;
				g_gvals_len[g_ngvals++] = vl;
			}
		}
		p = *q ? q + 1 : q;
	}
}

/* arm_interp arms the interpreter hand-over for this process only, and
 * only when a grant exists and the marker is well formed. */
static void arm_interp(void) {
	const char *in = VALUE_OF(environ, "ENVSIEVE_SHIM_INTERP");
	const char *colon = in ? strchr(in, ':') : NULL;
	if (colon && colon > in && (size_t)(colon - in) < sizeof g_interp_name && colon[1] == '/' &&
	    strlen(colon + 1) < sizeof g_interp_path && g_granted[0]) {
		memcpy(g_interp_name, in, (size_t)(colon - in));
		g_interp_name[colon - in] = 0;
		memcpy(g_interp_path, colon + 1, strlen(colon + 1) + 1);
		g_interp_pid = getpid();
		atomic_store(&g_interp_armed, 1);
	}
}

/* keep_hidden keeps the names of the hide list and copies their entries
 * to the heap (the list lives in the block about to be wiped), marks a
 * list it cannot hold whole as over, and makes this process non-dumpable
 * so no process of the user can read those copies. */
static void keep_hidden(const char *hide) {
	const char *p = hide;
	while (*p && g_nhidden < MAX_HIDE) {
		const char *q = p;
		while (*q && *q != ',')
			q++;
		size_t len = (size_t)(q - p);
		if (len > MAX_REPORT_NAME)
			g_hide_over = 1;
		if (len > 0 && len <= MAX_REPORT_NAME) {
			memcpy(g_hidden_names[g_nhidden], p, len);
			g_hidden_names[g_nhidden][len] = 0;
			g_hidden_len[g_nhidden] = len;
			char *v = value_in(environ, p, len);
			if (v) {
				char *e = malloc(len + strlen(v) + 2);
				if (e) {
					memcpy(e, p, len);
					e[len] = '=';
					memcpy(e + len + 1, v, strlen(v) + 1);
				}
				atomic_store(&g_hidden[g_nhidden], e);
			}
			g_nhidden++;
		}
		p = *q ? q + 1 : q;
	}
	if (*p)
		g_hide_over = 1;
	g_hide_pid = getpid();
	/* The values now live in this heap: no process of the user may
	 * read it through /proc/PID/mem, nor this process's environ. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	copy_env(g_hideenv, sizeof g_hideenv, "ENVSIEVE_SHIM_HIDE", hide);
}

/* wipe_hidden takes the hide list and every hidden entry out of environ
 * and zeroes those that lie in the initial environment block. */
static void wipe_hidden(void) {
	uintptr_t bs = 0, be = 0;
	int have_block = env_block(&bs, &be) == 0;
	size_t w = 0;
	for (size_t r = 0; environ[r]; r++) {
		char *e = environ[r];
		size_t len = 0;
		while (e[len] && e[len] != '=')
			len++;
		/* A key the shim cannot hold (past MAX_HIDE, or a name too
		 * long) is dropped outright rather than left listed: the
		 * launcher refuses such lists, so only a hand-made one gets
		 * here. */
		int drop = IS_KEY(e, len, "ENVSIEVE_SHIM_HIDE") || hidden_slot(e, len) >= 0 ||
		           (g_hide_over && g_hideenv[0] && in_list(g_hideenv + LIT("ENVSIEVE_SHIM_HIDE="), e, len));
		if (!drop) {
			environ[w++] = e;
			continue;
		}
		size_t n = strlen(e);
		if (have_block && (uintptr_t)e >= bs && (uintptr_t)e + n <= be)
			memset(e, 0, n);
	}
	environ[w] = NULL;
}

/* own_last moves the shim's own variables (at most 8) to the end of
 * environ, so that libc's getenv, which scans from the start, does not
 * step over them, and drops the interpreter marker, which is for this
 * image only: nothing inherits it. */
static void own_last(void) {
	char *own[8];
	size_t nown = 0, w = 0;
	for (size_t r = 0; environ[r]; r++) {
		char *e = environ[r];
		if (STARTS_WITH(e, "ENVSIEVE_SHIM_INTERP="))
			continue;
		if (nown < 8 && (STARTS_WITH(e, "LD_PRELOAD=") || STARTS_WITH(e, "ENVSIEVE_SHIM_")))
			own[nown++] = e;
		else
			environ[w++] = e;
	}
	for (size_t i = 0; i < nown; i++)
		environ[w++] = own[i];
	environ[w] = NULL;
}

/* init runs once (g_state 0 -> 1 -> 2): it keeps what the launcher put in
 * the environment, hides what it lists, and only then publishes state 2. */
static void init(void) {
	int expect = 0;
	if (!atomic_compare_exchange_strong(&g_state, &expect, 1))
		return;
	resolve_real();
	pthread_atfork(fork_prepare, NULL, fork_child);
	g_secure = getauxval(AT_SECURE) != 0;
	uintptr_t page = (uintptr_t)getauxval(AT_PAGESZ);
	if (page == 0 || (page & (page - 1)) != 0)
		page = 1; /* no rounding: each segment its own range */
	dl_iterate_phdr(readonly_segments, &page);
	keep_launcher();
	keep_lists();
	keep_granted();
	arm_interp();
	const char *hide = VALUE_OF(environ, "ENVSIEVE_SHIM_HIDE");
	if (hide && environ) {
		keep_hidden(hide);
		wipe_hidden();
	}
	if (environ)
		own_last();
	if (g_nhidden == 0 && real_getenv)
		g_plain = real_getenv;
	atomic_store_explicit(&g_state, 2, memory_order_release);
}

/* glibc gives an ELF constructor the program's argc and argv: kept for
 * interp_exec, which compares env's exec with them. */
__attribute__((constructor(101))) static void envsieve_init(int argc, char **argv, char **envp) {
	(void)envp;
	g_argc = argc;
	g_argv = argv;
	init();
}
