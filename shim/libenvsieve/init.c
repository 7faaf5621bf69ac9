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
 *      read-only, "w PATH" writable beneath a read-only path, "h PATH" held,
 *      "s SOURCE" the fake of the mask on the next line, one per line;
 *      package seal): a masked directory gets an empty read-only tmpfs, a
 *      masked file /dev/null (or its fake) bound read-only; then each read-only and
 *      write path, the deepest first, is bound on itself, read-only or as
 *      it is; then each held directory ("h PATH": HOME and those between
 *      it and a mask) is replaced by a read-only tmpfs copy of its entries,
 *      bound back, the masked ones left empty (or their fakes), so that a mask holds while
 *      the user works (seal.Apply); a path that does not exist is skipped,
 *      any other failure ends the init (exit 125) before the program
 *      starts;
 *   3. drop every capability (ambient, bounding, inheritable), so that the
 *      program holds none, even as uid 0 in the namespace;
 *   4. start the program with its environment (ENVSIEVE_INIT_SEAL removed,
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
#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#define SEAL_VAR "ENVSIEVE_INIT_SEAL="
#define PRELOAD_VAR "ENVSIEVE_INIT_LD_PRELOAD="

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

/* by_length sorts paths the shallowest first (as seal.sortShallowFirst:
 * a shorter clean path is never beneath a longer one). */
static int by_length(const void *a, const void *b) {
	size_t la = strlen(*(const char *const *)a), lb = strlen(*(const char *const *)b);
	return la < lb ? -1 : la > lb;
}

/* freeze replaces dir by a read-only tmpfs holding its entries as they are
 * now, as seal.freeze does: each bound back from where it is (through the
 * descriptor of the directory, recursively), a symbolic link made anew, a
 * masked one (named in masks, "m PATH" lines) an empty file or directory
 * in its place, or for a file with a fake (its source in fakes, NULL for
 * none) the fake bound read-only on it. So the masks hold while the user works outside the tree:
 * what happens to the real directory's names does not reach the copy. An
 * entry that cannot be reached is left out, or stays an empty stand-in. A
 * directory that does not exist is skipped. Returns 0, or -1 with errno
 * set. */
static int freeze(const char *dir, char **masks, char **fakes, size_t nm) {
	int src = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	int ret = -1, e = 0;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct stat st;
	char from[PATH_MAX], p[PATH_MAX];
	snprintf(from, sizeof from, "/proc/self/fd/%d", src);
	DIR *d = NULL;
	if (fstat(src, &st) != 0 || (d = opendir(from)) == NULL)
		goto out;
	for (struct dirent *ent; (errno = 0, ent = readdir(d)) != NULL;) {
		if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **more = realloc(names, cap * sizeof *names);
			if (more == NULL)
				goto out;
			names = more;
		}
		if ((names[n] = strdup(ent->d_name)) == NULL)
			goto out;
		n++;
	}
	if (errno != 0)
		goto out;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct stat est;
		if (fstatat(src, names[i], &est, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* gone since the listing, or unreachable: left out */
		if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, names[i]) >= sizeof p ||
		    (size_t)snprintf(from, sizeof from, "/proc/self/fd/%d/%s", src, names[i]) >= sizeof from) {
			errno = ENAMETOOLONG;
			goto out;
		}
		if (S_ISLNK(est.st_mode)) {
			char target[PATH_MAX];
			ssize_t got = readlinkat(src, names[i], target, sizeof target - 1);
			if (got < 0)
				continue;
			target[got] = 0;
			if (symlink(target, p) != 0)
				goto out;
			continue;
		}
		if (S_ISDIR(est.st_mode)) {
			if (mkdir(p, 0500) != 0)
				goto out;
		} else {
			int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0400);
			if (fd < 0)
				goto out;
			close(fd);
		}
		int is_masked = 0;
		const char *fake = NULL;
		for (size_t k = 0; k < nm && !is_masked; k++)
			if ((is_masked = strcmp(masks[k] + 2, p) == 0))
				fake = fakes[k];
		/* One that cannot be bound back (unreachable) stays an empty
		 * stand-in: nothing of it shows. */
		if (!is_masked)
			(void)!mount(from, p, NULL, MS_BIND | MS_REC, NULL);
		else if (fake && !S_ISDIR(est.st_mode) && read_only_bind(fake, p) != 0)
			goto out;
	}
	if (chmod(dir, st.st_mode & 07777) != 0)
		goto out;
	ret = mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
out:
	e = errno;
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(src);
	errno = e;
	return ret;
}

/* seal applies the spec as seal.Apply does: the masks first (a file with
 * a fake, its "s SOURCE" line just before its "m PATH", gets the fake
 * bound read-only on it instead of /dev/null), then each
 * read-only and write path, the deepest first, bound on itself
 * (recursively, so that what is bound beneath it stays), read-only or as
 * it is; then each held directory ("h PATH"), the shallowest first, is
 * replaced by its copy (freeze). The spec is modified in place (its lines
 * split). */
static int seal(char *spec) {
	size_t n = 1;
	for (char *c = spec; *c; c++)
		n += *c == '\n';
	char **binds = calloc(n, sizeof *binds), **masks = calloc(n, sizeof *masks), **holds = calloc(n, sizeof *holds);
	char **fakes = calloc(n, sizeof *fakes), *src = NULL;
	size_t nb = 0, nm = 0, nh = 0;
	const char *what = "seal", *p = NULL;
	int ret = -1;
	if (binds == NULL || masks == NULL || holds == NULL || fakes == NULL) {
		what = "seal: allocate";
		goto out;
	}
	for (char *line = spec; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!strchr("mrwhs", line[0]) || line[1] != ' ' || line[2] != '/' || (src && line[0] != 'm')) {
			errno = EINVAL;
			what = "seal: a malformed spec line";
			goto out;
		}
		p = line + 2;
		struct stat st;
		if (line[0] == 's') {
			src = line + 2; /* the fake of the next line's mask */
		} else if (line[0] == 'h') {
			holds[nh++] = line + 2;
		} else if (line[0] != 'm') {
			binds[nb++] = line;
		} else if (fakes[nm] = src, src = NULL, masks[nm++] = line, stat(p, &st) != 0) { /* follows links: the target is masked */
			if (errno != ENOENT && errno != ENOTDIR)
				goto out;
		} else if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0500") != 0)
				goto out;
		} else if (read_only_bind(fakes[nm - 1] ? fakes[nm - 1] : "/dev/null", p) != 0) {
			goto out;
		}
		line = next;
	}
	qsort(binds, nb, sizeof *binds, bind_order);
	for (size_t i = 0; i < nb; i++) {
		p = binds[i] + 2;
		int write = binds[i][0] == 'w';
		what = write ? "seal writable" : "seal read-only";
		struct stat st;
		if (stat(p, &st) != 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			goto out;
		}
		if ((write ? mount(p, p, NULL, MS_BIND | MS_REC, NULL) : read_only_bind(p, p)) != 0)
			goto out;
	}
	qsort(holds, nh, sizeof *holds, by_length);
	what = "seal";
	for (size_t i = 0; i < nh; i++) {
		p = holds[i];
		if (freeze(p, masks, fakes, nm) != 0)
			goto out;
	}
	ret = 0;
out:
	if (ret != 0) {
		int e = errno;
		fail(what, p);
		errno = e;
	}
	free(binds);
	free(masks);
	free(holds);
	free(fakes);
	return ret == 0 ? 0 : 125;
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
	char *spec = NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char *kv = environ[i];
		if (strncmp(kv, SEAL_VAR, sizeof SEAL_VAR - 1) == 0) {
			spec = kv + sizeof SEAL_VAR - 1;
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
