/*
 * envsieve-init: the init of an isolated launch's namespaces, in C, so that
 * a sealed or isolated start does not pay a second Go start (about 1.2 ms
 * on our test VM). It does what launch.IsolateInit does, in the same order,
 * and the launcher uses it when it is installed beside the shim (else it
 * re-executes itself as the init):
 *
 *   1. make the mount tree private and mount a /proc of the new pid
 *      namespace;
 *   2. apply the seal given in ENVSIEVE_INIT_SEAL ("m PATH" masks, "r PATH"
 *      read-only, "w PATH" writable beneath a read-only path, one per line;
 *      package seal): a masked directory gets an empty read-only tmpfs, a
 *      masked file /dev/null bound read-only; then each read-only and
 *      write path, the deepest first, is bound on itself, read-only or as
 *      it is; a path that does not exist is skipped, any other failure
 *      ends the init (exit 125) before the program starts;
 *   3. drop every capability (ambient, bounding, inheritable), so that the
 *      program holds none, even as uid 0 in the namespace; then enter the
 *      Landlock ruleset ENVSIEVE_INIT_LANDLOCK names, when it names one
 *      (the masks' own domain: seal.MaskRuleset);
 *   4. start the program with its environment (ENVSIEVE_INIT_SEAL and
 *      ENVSIEVE_INIT_LANDLOCK removed,
 *      ENVSIEVE_INIT_LD_PRELOAD put back as LD_PRELOAD), pass the launcher's
 *      signals on to it, reap every orphan as pid 1, and exit with the
 *      program's status (128+N for a signal; 127 not found, 126 not
 *      executable, 125 its own errors).
 *
 * Usage (by the launcher only): envsieve-init PATH ARGV0 [ARG...], as the
 * launcher's child, in the namespaces it made; or, exec'd in the launcher's
 * place when nothing else needs a resident launcher,
 * envsieve-init --unshare FALLBACK PATH ARGV0 [ARG...], which makes the
 * namespaces itself and runs the steps above as its child, pid 1
 * (unshare_main).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEAL_VAR "ENVSIEVE_INIT_SEAL="
#define PRELOAD_VAR "ENVSIEVE_INIT_LD_PRELOAD="
#define LANDLOCK_VAR "ENVSIEVE_INIT_LANDLOCK="

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
/* Landlock's rule of a file and what lies beneath it (linux/landlock.h),
 * declared here as the capabilities are. */
#define LANDLOCK_RULE_PATH_BENEATH 1
#define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
struct landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

extern char **environ;

static volatile pid_t child;

static int fail(const char *what, const char *path) {
	if (path)
		fprintf(stderr, "envsieve: isolate: %s %s: %s\n", what, path, strerror(errno));
	else
		fprintf(stderr, "envsieve: isolate: %s: %s\n", what, strerror(errno));
	return 125;
}

static int read_only_bind(const char *src, const char *dst) {
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
		return -1;
	return mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
}

/* bind_order sorts read-only ("r") and write ("w") lines the deepest
 * first (a longer clean path is never above a shorter one), and at the
 * same path the write line first, so that read-only wins: as seal.binds. */
static int bind_order(const void *a, const void *b) {
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return (x[0] == 'r') - (y[0] == 'r');
}

/* seal applies the spec as seal.Apply does: the masks first, then each
 * read-only and write path, the deepest first, bound on itself
 * (recursively, so that what is bound beneath it stays), read-only or as
 * it is. The spec is modified in place (its lines split). */
static int seal(char *spec) {
	size_t n = 0;
	for (char *c = spec; *c; c++)
		n += *c == '\n';
	char **binds = calloc(n + 1, sizeof *binds);
	if (binds == NULL)
		return fail("seal: allocate", NULL);
	size_t nb = 0;
	for (char *line = spec; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if ((line[0] != 'm' && line[0] != 'r' && line[0] != 'w') || line[1] != ' ' || line[2] != '/') {
			free(binds);
			errno = EINVAL;
			return fail("seal: a malformed spec line", NULL);
		}
		const char *p = line + 2;
		struct stat st;
		if (line[0] != 'm') {
			binds[nb++] = line;
		} else if (stat(p, &st) != 0) { /* follows links: the target is masked */
			if (errno != ENOENT && errno != ENOTDIR) {
				free(binds);
				return fail("seal", p);
			}
		} else if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0500") != 0) {
				free(binds);
				return fail("seal", p);
			}
		} else if (read_only_bind("/dev/null", p) != 0) {
			free(binds);
			return fail("seal", p);
		}
		line = next;
	}
	qsort(binds, nb, sizeof *binds, bind_order);
	for (size_t i = 0; i < nb; i++) {
		const char *p = binds[i] + 2;
		int write = binds[i][0] == 'w';
		struct stat st;
		if (stat(p, &st) != 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
		} else if (write ? mount(p, p, NULL, MS_BIND | MS_REC, NULL) == 0 : read_only_bind(p, p) == 0) {
			continue;
		}
		int e = errno;
		free(binds);
		errno = e;
		return fail(write ? "seal writable" : "seal read-only", p);
	}
	free(binds);
	return 0;
}

/* capget and capset, version 3, declared here: musl's headers do not
 * carry the kernel's <linux/capability.h>. */
#define CAPABILITY_VERSION_3 0x20080522
struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};

static int drop_capabilities(void) {
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
		return fail("clear ambient capabilities", NULL);
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
			return fail("drop a capability from the bounding set", NULL);
	struct cap_header hdr = {CAPABILITY_VERSION_3, 0};
	struct cap_data data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return fail("capget", NULL);
	data[0].inheritable = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return fail("capset", NULL);
	return 0;
}

/* enter_ruleset puts this process, and the program, in the Landlock
 * domain of the ruleset whose descriptor number is text (the launcher made
 * it: seal.MaskRuleset), and closes it: after the mounts, which a domain
 * forbids. The masks then hold by the files they lie beneath, whatever
 * happens to their names outside the tree. */
static int enter_ruleset(const char *text) {
	char *end;
	errno = 0;
	long fd = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != 0 || fd < 3 || fd > 1 << 20) {
		errno = EINVAL;
		return fail("seal: a malformed Landlock ruleset descriptor", NULL);
	}
	/* The namespace's own /proc was mounted after the ruleset was made: no
	 * rule names its root, and Landlock passes over its mount point to the
	 * directory above it, so it is made readable here (seal.EnterRuleset). */
	int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0)
		return fail("seal: open", "/proc");
	struct landlock_path_beneath_attr rule = {LANDLOCK_ACCESS_FS_READ_FILE, proc};
	if (syscall(SYS_landlock_add_rule, (int)fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
		return fail("seal: landlock_add_rule", "/proc");
	close(proc);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return fail("seal: no_new_privs", NULL);
	if (syscall(SYS_landlock_restrict_self, (int)fd, 0) != 0)
		return fail("seal: landlock_restrict_self", NULL);
	close((int)fd);
	return 0;
}

static void forward(int sig) {
	if (child > 0)
		kill(child, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

/* exit_status is the status a wait reported, as a shell gives it: the
 * code, or 128+N for a signal. */
static int exit_status(int ws) { return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws); }

/* block_forwarded blocks the forwarded signals; old, when not NULL, gets
 * the mask before. */
static void block_forwarded(sigset_t *old) {
	sigset_t fw;
	sigemptyset(&fw);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&fw, forwarded[i]);
	sigprocmask(SIG_BLOCK, &fw, old);
}

/* handle_forwarded gives every forwarded signal handler (SA_RESTART), or
 * its default with SIG_DFL. */
static void handle_forwarded(void (*handler)(int)) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = handler == SIG_DFL ? 0 : SA_RESTART;
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaction(forwarded[i], &sa, NULL);
}

/* init_main is the init, pid 1 of the namespaces: argv[1] is the
 * program's path, argv[2] on its argv. mask is the signal mask the program
 * starts with (the forwarded signals may be blocked on entry). */
static int init_main(int argc, char **argv, const sigset_t *mask) {
	if (argc < 3) {
		fprintf(stderr, "envsieve: isolate init: no program\n");
		return 125;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail("make mounts private", NULL);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		return fail("mount /proc", NULL);

	/* The program's environment: the init's own variables out. */
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof *env);
	if (env == NULL)
		return fail("allocate the environment", NULL);
	char *spec = NULL, *ruleset = NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char *kv = environ[i];
		if (strncmp(kv, SEAL_VAR, sizeof SEAL_VAR - 1) == 0) {
			spec = kv + sizeof SEAL_VAR - 1;
		} else if (strncmp(kv, LANDLOCK_VAR, sizeof LANDLOCK_VAR - 1) == 0) {
			ruleset = kv + sizeof LANDLOCK_VAR - 1;
		} else if (strncmp(kv, PRELOAD_VAR, sizeof PRELOAD_VAR - 1) == 0) {
			/* "ENVSIEVE_INIT_LD_PRELOAD=v" becomes "LD_PRELOAD=v", in place. */
			env[k++] = kv + sizeof "ENVSIEVE_INIT_" - 1;
		} else {
			env[k++] = kv;
		}
	}
	env[k] = NULL;
	if (spec && seal(spec) != 0)
		return 125;
	if (drop_capabilities() != 0)
		return 125;
	if (ruleset && enter_ruleset(ruleset) != 0)
		return 125;

	/* Signals the launcher passes on go on to the program; blocked until
	 * its pid is known, so none is lost. */
	sigset_t old = *mask;
	block_forwarded(NULL);
	handle_forwarded(forward);

	int report[2]; /* the exec's errno, when it fails */
	if (pipe2(report, O_CLOEXEC) != 0)
		return fail("pipe", NULL);
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork", NULL);
	if (pid == 0) {
		handle_forwarded(SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(report[0]);
		execve(argv[1], argv + 2, env);
		int e = errno;
		(void)!write(report[1], &e, sizeof e);
		_exit(127);
	}
	child = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(report[1]);
	int e = 0;
	ssize_t got;
	do
		got = read(report[0], &e, sizeof e);
	while (got < 0 && errno == EINTR);
	close(report[0]);
	int exec_failed = got == (ssize_t)sizeof e;

	/* As pid 1, reap every orphan until the program itself exits. */
	for (;;) {
		int ws;
		pid_t w = waitpid(-1, &ws, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 125;
		}
		if (w != pid)
			continue;
		if (exec_failed) {
			/* As launch.execError words it. */
			if (e == ENOENT)
				fprintf(stderr, "envsieve: isolate: %s: command not found in the child's PATH\n", argv[1]);
			else if (e == EACCES || e == ENOEXEC || e == EISDIR)
				fprintf(stderr, "envsieve: isolate: %s: not executable: %s\n", argv[1], strerror(e));
			else
				fprintf(stderr, "envsieve: isolate: exec %s: %s\n", argv[1], strerror(e));
			return e == ENOENT ? 127 : 126;
		}
		return exit_status(ws);
	}
}

/* write_file writes text to path, as the whole of one write. */
static int write_file(const char *path, const char *text) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int e = errno;
	close(fd);
	if (w != (ssize_t)n) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

static volatile sig_atomic_t pass_int_quit = 1;

/* pass_on is the handler of the process in the launcher's place: as the
 * launcher's Supervise does, SIGINT and SIGQUIT go on only when stdin is
 * not a terminal (else the terminal sent them to the whole process group,
 * the program included). */
static void pass_on(int sig) {
	if ((sig == SIGINT || sig == SIGQUIT) && !pass_int_quit)
		return;
	if (child > 0)
		kill(child, sig);
}

/*
 * unshare_main runs in the launcher's place (the launcher exec'd it, same
 * pid), when nothing else needs a resident launcher: argv is
 * "envsieve-init --unshare FALLBACK PATH ARGV0 [ARG...]". It makes the user,
 * mount and pid namespaces itself, maps the user's uid and gid to
 * themselves (setgroups denied first, as an unprivileged process must),
 * turns non-dumpable, and forks pid 1, which is init_main; then it passes
 * the launcher's signals on to pid 1 and exits with its status. pid 1 dies
 * with it (PR_SET_PDEATHSIG), and the namespace with pid 1.
 *
 * Where the namespaces are refused (EPERM, EINVAL, ENOSPC, EUSERS: a
 * limit, a chroot, a security module), FALLBACK, when it is not "-", is
 * envsieve, executed as its Landlock init (launch.ScopeInit) with this
 * same environment: it seals with Landlock from ENVSIEVE_INIT_SEAL, or
 * fails, and the program never starts unsealed. With "-" it fails (125).
 */
static int unshare_main(int argc, char **argv) {
	if (argc < 5) {
		fprintf(stderr, "envsieve: isolate init: no program\n");
		return 125;
	}
	const char *fallback = argv[2];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0) {
		int e = errno;
		int refused = e == EPERM || e == EINVAL || e == ENOSPC || e == EUSERS;
		/* Only a seal falls back: without one, envsieve's Landlock init
		 * would run the program in a domain that seals nothing. */
		if (refused && strcmp(fallback, "-") != 0 && getenv("ENVSIEVE_INIT_SEAL") != NULL) {
			argv[1] = "envsieve";
			argv[2] = "__envsieve-scope-init";
			execve(fallback, argv + 1, environ);
			fprintf(stderr, "envsieve: seal: user namespaces refused at the start (%s), and Landlock's seal could not start: exec %s: %s\n",
				strerror(e), fallback, strerror(errno));
			return 125;
		}
		errno = e;
		if (refused)
			fprintf(stderr, "envsieve: isolate: the kernel refused to create user, pid and mount namespaces: %s (user namespaces may be disabled: see /proc/sys/user/max_user_namespaces)\n", strerror(e));
		else
			fail("unshare", NULL);
		return 125;
	}
	char map[64];
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0)
		return fail("write", "/proc/self/uid_map");
	if (write_file("/proc/self/setgroups", "deny") != 0)
		return fail("write", "/proc/self/setgroups");
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) != 0)
		return fail("write", "/proc/self/gid_map");
	/* The maps are written: nothing outside the tree of the same user may
	 * read this process's memory or environ now, as of the resident
	 * launcher. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return fail("turn non-dumpable", NULL);
	pass_int_quit = !isatty(0);

	sigset_t old;
	block_forwarded(&old);
	handle_forwarded(pass_on);

	int alive[2]; /* its write end closes when this process ends */
	if (pipe2(alive, O_CLOEXEC) != 0)
		return fail("pipe", NULL);
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork", NULL);
	if (pid == 0) {
		/* pid 1. The forwarded signals stay blocked until init_main has
		 * its own handlers in place. */
		handle_forwarded(SIG_DFL);
		close(alive[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			_exit(fail("set the parent-death signal", NULL));
		/* Ended before the line above: nothing would kill this tree. */
		struct pollfd p = {alive[0], POLLIN, 0};
		if (poll(&p, 1, 0) != 0)
			_exit(125);
		close(alive[0]);
		_exit(init_main(argc - 2, argv + 2, &old));
	}
	close(alive[0]);
	child = pid;
	/* This process needs no capability to wait and to signal: it keeps
	 * none. */
	struct cap_header hdr = {CAPABILITY_VERSION_3, 0};
	struct cap_data none[2];
	memset(none, 0, sizeof none);
	if (syscall(SYS_capset, &hdr, none) != 0) {
		kill(pid, SIGKILL);
		return fail("capset", NULL);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (;;) {
		int ws;
		if (waitpid(pid, &ws, 0) < 0) {
			if (errno == EINTR)
				continue;
			return fail("wait", NULL);
		}
		return exit_status(ws);
	}
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "--unshare") == 0)
		return unshare_main(argc, argv);
	sigset_t mask;
	sigprocmask(SIG_SETMASK, NULL, &mask);
	return init_main(argc, argv, &mask);
}
