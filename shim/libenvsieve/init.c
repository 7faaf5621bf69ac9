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
 *      the user works (seal.Apply) - or, where the kernel allows it, HOME
 *      is covered by one read-only overlay whose top layer holds the
 *      masked names (struct overlay, seal), with the write places bound
 *      back on it; a path that does not exist is skipped,
 *      any other failure ends the init (exit 125) before the program
 *      starts; then the init enters its working directory again by its
 *      path, through the seal's mounts (enter_sealed_cwd);
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
 * (unshare_main). "envsieve-init --landlock PATH ARGV0 [ARG...]" is the
 * reaper of a tree sealed or scoped by Landlock instead (landlock_main).
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
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
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

/* mask_mount hides the masked path p by a mount, as seal.Apply does: an
 * empty read-only tmpfs over a directory, the fake (or /dev/null) bound
 * read-only over a file. Links are followed: the target is masked. A path
 * that does not exist is skipped. */
static int mask_mount(const char *p, const char *fake) {
	struct stat st;
	if (stat(p, &st) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (S_ISDIR(st.st_mode))
		return mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0500");
	return read_only_bind(fake ? fake : "/dev/null", p);
}

/* beneath reports whether the clean absolute path is dir or beneath it
 * (strictly beneath, with strict). */
static int beneath(const char *path, const char *dir, int strict) {
	size_t n = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || (!strict && path[n] == 0));
}

/* resolve puts in out (PATH_MAX bytes) the path p names with every link
 * followed, as the kernel gives it for a descriptor; it fails as open
 * does. */
static int resolve(const char *p, char *out) {
	int fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char link[sizeof "/proc/self/fd/" + 12];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, PATH_MAX - 1);
	int e = errno;
	close(fd);
	if (n < 0 || n >= PATH_MAX - 1) {
		errno = n < 0 ? e : ENAMETOOLONG;
		return -1;
	}
	out[n] = 0;
	return 0;
}

/* add appends a copy of s to the list *v of *n. */
static int add(char ***v, size_t *n, const char *s) {
	char **more = realloc(*v, (*n + 1) * sizeof **v);
	if (more == NULL)
		return -1;
	*v = more;
	if ((more[*n] = strdup(s)) == NULL)
		return -1;
	(*n)++;
	return 0;
}

/* mounts_beneath adds to *v the mount points of this namespace strictly
 * beneath dir (a resolved path), as /proc/self/mountinfo lists them (its
 * fifth field, with its octal escapes undone). */
static int mounts_beneath(const char *dir, char ***v, size_t *n) {
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0, cap = 16384;
	char *text = malloc(cap);
	for (ssize_t got = 1; text && got > 0;) {
		if (len + 1 == cap) {
			char *more = realloc(text, cap *= 2);
			if (more == NULL)
				free(text);
			text = more;
			if (text == NULL)
				break;
		}
		got = read(fd, text + len, cap - 1 - len);
		if (got < 0 && errno != EINTR) {
			free(text);
			text = NULL;
		}
		if (got > 0)
			len += got;
	}
	close(fd);
	if (text == NULL)
		return -1;
	text[len] = 0;
	int ret = 0;
	char point[PATH_MAX];
	for (char *line = text; ret == 0 && *line;) {
		char *end = strchr(line, '\n'), *f = line;
		if (end)
			*end = 0;
		for (int field = 0; field < 4 && f; field++)
			if ((f = strchr(f, ' ')) != NULL)
				f++;
		size_t k = 0;
		for (; f && *f && *f != ' ' && k < sizeof point - 1; f++) {
			if (f[0] == '\\' && f[1] >= '0' && f[1] <= '3' && f[2] >= '0' && f[2] <= '7' && f[3] >= '0' && f[3] <= '7') {
				point[k++] = (char)((f[1] - '0') << 6 | (f[2] - '0') << 3 | (f[3] - '0'));
				f += 3;
			} else {
				point[k++] = *f;
			}
		}
		point[k] = 0;
		if (k > 0 && beneath(point, dir, 1))
			ret = add(v, n, point);
		line = end ? end + 1 : line + strlen(line);
	}
	free(text);
	return ret;
}

/*
 * The overlay of HOME. The held root (the shallowest "h" line: HOME) is
 * covered by one read-only overlay whose upper lower layer, a small tmpfs,
 * holds an entry for each masked name beneath it: an empty file (0400) for
 * a file, an empty opaque directory (0500) for a directory, and a whiteout
 * where the masked path does not exist (at its first missing component).
 * The overlay finds a name in that layer first, whatever happens to it in
 * HOME outside, so a mask holds with one mount instead of a tmpfs copy of
 * each held directory. An overlay shows none of the mounts beneath its
 * lower layer: those (the read-only and write binds, the user's own mounts,
 * the masks beneath them) are its grafts, bound back on top, the outermost
 * ones, with the held directories at or beneath them frozen as before.
 * Where the overlay cannot be made (an old kernel, a filesystem it refuses
 * as a lower layer, a nesting too deep, a link on the way to a mask), the
 * seal is made per entry (freeze), as before.
 */
struct overlay {
	const char *root;   /* the held root, as the spec names it */
	char real[PATH_MAX]; /* the same, resolved */
	char **grafts;      /* the mounts beneath it, resolved */
	size_t ng;
	char *bind;         /* each "r" and "w" line: 1 when bound on itself first */
	char **rel;         /* each mask's place in the layer, relative, or NULL */
	char *kind;         /* each mask's entry: 'f' file, 'd' directory, 'w' whiteout */
	char **known;       /* directories on the way the plan found, relative */
	size_t nk;
	char **missing;     /* names on the way the plan found missing, relative */
	size_t nmissing;
};

/* in_graft reports whether the resolved path p is at or beneath a graft. */
static int in_graft(const struct overlay *o, const char *p) {
	for (size_t i = 0; i < o->ng; i++)
		if (beneath(p, o->grafts[i], 0))
			return 1;
	return 0;
}

/* set_place sets mask k's entry in the layer, rel (beneath the root) of
 * kind, unless a graft covers it: a mount masks it there. */
static int set_place(struct overlay *o, size_t k, const char *rel, char kind) {
	char real[PATH_MAX];
	if ((size_t)snprintf(real, sizeof real, "%s/%s", strcmp(o->real, "/") ? o->real : "", rel) >= sizeof real)
		return errno = ENAMETOOLONG, -1;
	if (in_graft(o, real))
		return 0;
	if ((o->rel[k] = strdup(rel)) == NULL)
		return -1;
	o->kind[k] = kind;
	return 0;
}

/* place_beneath sets where mask k, the path rel beneath the root (HOME),
 * goes in the layer, walking its names from the root's descriptor with
 * one fstatat each that follows no link at its last name: where a name
 * is missing, that name gets the whiteout; where a name on the way is a
 * link (or the mask itself is one), the seal is made per entry; beneath
 * a file nothing can be made. A directory on the way an earlier mask's
 * walk found (o->known), and a name it found missing (o->missing, whose
 * whiteout hides this mask too), are not asked again: on a HOME where
 * most of the list does not exist, that is one call a name of the list,
 * not an openat2, an fstat and a close a mask. Returns as layer_place. */
static int place_beneath(struct overlay *o, size_t k, int root, const char *rel) {
	char name[PATH_MAX];
	struct stat st;
	if (strlen(rel) >= sizeof name)
		return errno = ENAMETOOLONG, -1;
	for (size_t c = 0;; c++) {
		c += strcspn(rel + c, "/");
		int last = rel[c] == 0, known = 0;
		memcpy(name, rel, c);
		name[c] = 0;
		for (size_t i = 0; i < o->nk && !last && !known; i++)
			known = strcmp(o->known[i], name) == 0;
		if (known)
			continue;
		for (size_t i = 0; i < o->nmissing; i++)
			if (strcmp(o->missing[i], name) == 0)
				goto whiteout;
		if (fstatat(root, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOTDIR)
				return 0; /* beneath a file: nothing can be made there */
			if (errno != ENOENT || add(&o->missing, &o->nmissing, name) != 0)
				return -1;
			goto whiteout;
		}
		if (S_ISLNK(st.st_mode))
			return 1; /* a link on the way, or the mask one: per entry */
		if (last)
			break;
		if (!S_ISDIR(st.st_mode))
			return 0; /* beneath a file */
		if (add(&o->known, &o->nk, name) != 0)
			return -1;
	}
	return set_place(o, k, rel, S_ISDIR(st.st_mode) ? 'd' : 'f');
whiteout:
	return set_place(o, k, name, 'w');
}

/* layer_place sets where mask k goes in the layer (o->rel, o->kind), or
 * nothing when a mount masks it (outside the root, or in a graft) or it
 * is nothing to hide. Returns 0, 1 where the overlay cannot keep the mask
 * as a copy would (a link beneath the root on the way to it), or -1. */
static int layer_place(struct overlay *o, size_t k, const char *m) {
	char r[PATH_MAX], up[PATH_MAX], want[PATH_MAX];
	const char *lexical = m; /* the deepest existing path on the way */
	int missing = 0;
	struct stat st;
	if (resolve(m, r) != 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return -1;
		/* Its deepest existing directory, and the first name missing. */
		if (strlen(m) >= sizeof up)
			return errno = ENAMETOOLONG, -1;
		strcpy(up, m);
		const char *name;
		do {
			char *cut = strrchr(up, '/');
			if (cut == NULL)
				return 0;
			name = m + (cut - up) + 1;
			cut[cut == up] = 0; /* "/x" leaves "/" */
		} while (resolve(up, r) != 0);
		if (stat(r, &st) != 0 || !S_ISDIR(st.st_mode))
			return 0; /* beneath a file: nothing can be made there */
		int c = (int)strcspn(name, "/");
		if ((size_t)snprintf(want, sizeof want, "%s/%.*s", strcmp(r, "/") ? r : "", c, name) >= sizeof want)
			return errno = ENAMETOOLONG, -1;
		if (lstat(want, &st) == 0)
			return beneath(m, o->root, 1); /* a dangling link */
		strcpy(r, want);
		lexical = up;
		missing = 1;
	}
	/* A link beneath the root on the way: the tree could follow it where
	 * the user points it later, which a copy of the directory would not. */
	if (beneath(lexical, o->root, 1)) {
		if ((size_t)snprintf(want, sizeof want, "%s%s", o->real, lexical + strlen(o->root)) >= sizeof want)
			return errno = ENAMETOOLONG, -1;
		if (!beneath(r, want, 0))
			return 1;
	}
	if (!beneath(r, o->real, 1) || in_graft(o, r))
		return 0;
	if ((o->rel[k] = strdup(r + strlen(o->real) + (strcmp(o->real, "/") != 0))) == NULL)
		return -1;
	o->kind[k] = missing ? 'w' : stat(r, &st) == 0 && S_ISDIR(st.st_mode) ? 'd' : 'f';
	return 0;
}

/* overlay_plan finds the root's grafts and each mask's place. The root
 * is read-only in the overlay, so only some read-only and write lines need
 * their bind on themselves (o->bind): a read-only path with a write path
 * beneath it, or in a mount of the user's own beneath the root, and a write
 * path in one of those; the others are grafts bound from where they are,
 * or (read-only paths) nothing at all. Returns 0, 1 where the seal must be
 * made per entry, or -1. */
static int overlay_plan(struct overlay *o, char **masks, size_t nm, char **binds, size_t nb) {
	if (resolve(o->root, o->real) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 1 : -1;
	if (mounts_beneath(o->real, &o->grafts, &o->ng) != 0)
		return -1;
	size_t own = o->ng; /* the user's own mounts, first in grafts */
	char **real = calloc(nb + 1, sizeof *real);
	if (real == NULL)
		return -1;
	int ret = 0;
	for (size_t i = 0; i < nb && ret == 0; i++) {
		char r[PATH_MAX];
		if (resolve(binds[i] + 2, r) == 0 && beneath(r, o->real, 1) && (real[i] = strdup(r)) == NULL)
			ret = -1;
	}
	/* binds are sorted the deepest first: a read-only line's write lines
	 * come before it. */
	for (size_t i = nb; i-- > 0 && ret == 0;) {
		if (real[i] == NULL) { /* outside the root: as before; the root's own: the overlay */
			o->bind[i] = strcmp(binds[i] + 2, o->root) != 0;
			continue;
		}
		int in_own = 0, in_bound_ro = 0, has_write = 0;
		for (size_t g = 0; g < own; g++)
			in_own |= beneath(real[i], o->grafts[g], 0);
		for (size_t j = 0; j < nb; j++) {
			if (real[j] == NULL || j == i)
				continue;
			if (binds[j][0] == 'r' && o->bind[j] && beneath(real[i], real[j], 1))
				in_bound_ro = 1;
			if (binds[j][0] == 'w' && beneath(real[j], real[i], 1))
				has_write = 1;
		}
		if (binds[i][0] == 'r')
			o->bind[i] = (char)(has_write || in_own);
		else
			o->bind[i] = (char)(in_bound_ro || in_own);
		if ((binds[i][0] == 'w' || o->bind[i]) && add(&o->grafts, &o->ng, real[i]) != 0)
			ret = -1;
	}
	for (size_t i = 0; i < nb; i++)
		free(real[i]);
	free(real);
	int root = ret == 0 ? open(o->root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (root < 0)
		return -1;
	for (size_t k = 0; k < nm && ret == 0; k++) {
		const char *m = masks[k] + 2;
		if (beneath(m, o->root, 1))
			ret = place_beneath(o, k, root, m + strlen(o->root) + (strcmp(o->root, "/") != 0));
		else
			ret = layer_place(o, k, m); /* outside HOME lexically: rare */
	}
	close(root);
	return ret;
}

/* by_depth sorts the layer's entries (indices into sort_rel) the
 * shallowest first, or with by_depth_down the deepest first. */
static char **sort_rel;
static int by_depth(const void *a, const void *b) {
	size_t la = strlen(sort_rel[*(const size_t *)a]), lb = strlen(sort_rel[*(const size_t *)b]);
	return la < lb ? -1 : la > lb;
}
static int by_depth_down(const void *a, const void *b) { return by_depth(b, a); }

/* layer_build fills the mask layer, the directory ldir, with each mask's
 * entry and the directories on the way, which get the modes of HOME's own
 * (home, a descriptor) once all is made: the init may hold no capability
 * to write in a directory whose mode forbids it. */
static int layer_build(const struct overlay *o, int ldir, int home, size_t nm) {
	size_t *order = calloc(nm + 1, sizeof *order), n = 0, nd = 0;
	char **dirs = NULL; /* the directories made, relative */
	mode_t *modes = NULL;
	if (order == NULL)
		return -1;
	for (size_t k = 0; k < nm; k++)
		if (o->rel[k])
			order[n++] = k;
	sort_rel = o->rel;
	qsort(order, n, sizeof *order, by_depth);
	int ret = 0, fd;
	char dir[PATH_MAX];
	struct stat st;
	for (size_t i = 0; i < n && ret == 0; i++) {
		const char *rel = o->rel[order[i]];
		int hidden = 0; /* made already, or beneath a masked directory or a whiteout */
		for (size_t j = 0; j < i && !hidden; j++)
			hidden = beneath(rel, o->rel[order[j]], 0); /* nothing is beneath a file */
		if (hidden)
			continue;
		/* The directories on the way. */
		for (const char *s = strchr(rel, '/'); s && ret == 0; s = strchr(s + 1, '/')) {
			snprintf(dir, sizeof dir, "%.*s", (int)(s - rel), rel);
			int made = 0; /* already, for a mask before it: no call that fails */
			for (size_t d = 0; d < nd && !made; d++)
				made = strcmp(dirs[d], dir) == 0;
			if (made)
				continue;
			if (mkdirat(ldir, dir, 0700) == 0) {
				mode_t *more = realloc(modes, (nd + 1) * sizeof *modes);
				if (more == NULL || (modes = more, fstatat(home, dir, &st, 0) != 0) || add(&dirs, &nd, dir) != 0)
					ret = -1;
				else
					modes[nd - 1] = st.st_mode & 07777;
			} else if (errno != EEXIST) {
				ret = -1;
			}
		}
		if (ret != 0)
			break;
		switch (o->kind[order[i]]) {
		case 'w':
			if (mknodat(ldir, rel, S_IFCHR | 0600, 0) != 0 && errno != EEXIST)
				ret = -1;
			break;
		case 'd':
			if (mkdirat(ldir, rel, 0700) != 0 || (fd = openat(ldir, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
				ret = errno == EEXIST ? 0 : -1;
				break;
			}
			ret = fsetxattr(fd, "user.overlay.opaque", "y", 1, 0);
			if (ret == 0)
				ret = fchmod(fd, 0500);
			close(fd);
			break;
		default:
			if ((fd = openat(ldir, rel, O_CREAT | O_WRONLY | O_CLOEXEC, 0400)) < 0)
				ret = -1;
			else
				close(fd);
		}
	}
	/* The modes, the deepest first. */
	size_t *down = calloc(nd + 1, sizeof *down);
	if (down == NULL && ret == 0)
		ret = -1;
	for (size_t i = 0; down && i < nd; i++)
		down[i] = i;
	sort_rel = dirs;
	if (down)
		qsort(down, nd, sizeof *down, by_depth_down);
	for (size_t i = 0; down && i < nd && ret == 0; i++)
		ret = fchmodat(ldir, dirs[down[i]], modes[down[i]], 0);
	int e = errno;
	for (size_t i = 0; i < nd; i++)
		free(dirs[i]);
	free(dirs);
	free(down);
	free(modes);
	free(order);
	errno = e;
	return ret;
}

/* fd_path is the name of descriptor fd in /proc, in buf. */
static const char *fd_path(char *buf, size_t size, int fd) {
	snprintf(buf, size, "/proc/self/fd/%d", fd);
	return buf;
}

/* overlay_mount covers the root with its overlay (see struct overlay),
 * binds the grafts back and each fake of a mask in the layer on it.
 * Returns 0, 1 where the kernel refuses it (nothing of it is left
 * mounted: the caller seals per entry), or -1. */
static int overlay_mount(const struct overlay *o, char **fakes, size_t nm) {
	int ret = -1, refused = 0, home = -1, ldir = -1, e;
	int *gfd = calloc(o->ng + 1, sizeof *gfd), *ffd = calloc(nm + 1, sizeof *ffd);
	char from[sizeof "/proc/self/fd/" + 12], to[PATH_MAX];
	struct stat st;
	if (gfd == NULL || ffd == NULL)
		goto out;
	for (size_t i = 0; i < o->ng; i++)
		gfd[i] = -1;
	for (size_t k = 0; k < nm; k++)
		ffd[k] = -1;
	/* 1. Descriptors of all the overlay will cover: HOME, the grafts (the
	 * outermost), the fakes. */
	if ((home = open(o->root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(home, &st) != 0)
		goto out;
	for (size_t i = 0; i < o->ng; i++) {
		int outer = 1;
		for (size_t j = 0; j < o->ng && outer; j++)
			outer = !(beneath(o->grafts[i], o->grafts[j], 1) || (j < i && strcmp(o->grafts[i], o->grafts[j]) == 0));
		if (outer && (gfd[i] = open(o->grafts[i], O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 && errno != ENOENT)
			goto out;
	}
	for (size_t k = 0; k < nm; k++)
		if (o->rel[k] && fakes[k] && o->kind[k] == 'f' && (ffd[k] = open(fakes[k], O_PATH | O_CLOEXEC)) < 0)
			goto out;
	/* 2. The mask layer, a tmpfs over the root for now. */
	if (mount("tmpfs", o->root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0)
		goto out;
	if ((ldir = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || layer_build(o, ldir, home, nm) != 0 ||
	    fchmod(ldir, st.st_mode & 07777) != 0) {
		refused = errno == EOPNOTSUPP || errno == EPERM; /* a tmpfs without user xattrs */
		goto undo;
	}
	/* 3. The overlay: read-only, since it has no upper layer. */
	char opts[sizeof "lowerdir=/proc/self/fd/:/proc/self/fd/,userxattr" + 24];
	snprintf(opts, sizeof opts, "lowerdir=/proc/self/fd/%d:/proc/self/fd/%d,userxattr", ldir, home);
#ifdef ENVSIEVE_INIT_NO_OVERLAY
	/* A build for the tests of the seal per entry. */
	errno = EPERM;
	if (1) {
#else
	if (mount("overlay", o->root, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) != 0) {
#endif
		refused = errno == EINVAL || errno == EPERM || errno == ENODEV || errno == EOPNOTSUPP || errno == ELOOP;
		goto undo;
	}
	/* 4. The grafts back on top, and the fakes on their masks. */
	for (size_t i = 0; i < o->ng; i++)
		if (gfd[i] >= 0 && mount(fd_path(from, sizeof from, gfd[i]), o->grafts[i], NULL, MS_BIND | MS_REC, NULL) != 0 &&
		    errno != ENOENT)
			goto out;
	for (size_t k = 0; k < nm; k++) {
		if (ffd[k] < 0)
			continue;
		if ((size_t)snprintf(to, sizeof to, "%s/%s", o->real, o->rel[k]) >= sizeof to) {
			errno = ENAMETOOLONG;
			goto out;
		}
		if (read_only_bind(fd_path(from, sizeof from, ffd[k]), to) != 0)
			goto out;
	}
	ret = 0;
	goto out;
undo:
	e = errno;
	if (umount2(o->root, MNT_DETACH) != 0)
		refused = 0;
	errno = e;
	if (refused)
		ret = 1;
out:
	e = errno;
	if (ldir >= 0)
		close(ldir);
	if (home >= 0)
		close(home);
	for (size_t i = 0; gfd && i < o->ng; i++)
		if (gfd[i] >= 0)
			close(gfd[i]);
	for (size_t k = 0; ffd && k < nm; k++)
		if (ffd[k] >= 0)
			close(ffd[k]);
	free(gfd);
	free(ffd);
	errno = e;
	return ret;
}

/* bind_paths binds each read-only and write line on itself, the deepest
 * first (binds is sorted so), recursively, so that what is bound beneath
 * it stays, read-only or as it is: those whose flag in chosen is set, with
 * chosen NULL all of them. A path that does not exist is skipped. *at is
 * the path of a failure. */
static int bind_paths(char **binds, size_t nb, const char *chosen, char set, const char **at) {
	for (size_t i = 0; i < nb; i++) {
		const char *p = *at = binds[i] + 2;
		if (chosen && chosen[i] != set)
			continue;
		struct stat st;
		if (stat(p, &st) != 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			return -1;
		}
		if ((binds[i][0] == 'w' ? mount(p, p, NULL, MS_BIND | MS_REC, NULL) : read_only_bind(p, p)) != 0)
			return -1;
	}
	return 0;
}

/* seal applies the spec as seal.Apply does, in steps:
 *
 *   1. read the lines: masks ("m", each with the fake of an "s" line just
 *      before it), read-only and write paths ("r", "w"), held directories
 *      ("h");
 *   2. plan the overlay of the held root (struct overlay);
 *   3. mask by a mount each masked path the overlay's layer does not hold
 *      (all of them, per entry);
 *   4. bind each read-only and write path on itself, the deepest first
 *      (recursively, so that what is bound beneath it stays), read-only or
 *      as it is (the root's own read-only line is the overlay's, when made);
 *   5. cover the root with the overlay; per entry, or where it is refused,
 *      mask the rest by mounts, bind the root read-only and replace each
 *      held directory, the shallowest first, by its copy (freeze); with
 *      the overlay, only those in its grafts.
 *
 * The spec is modified in place (its lines split). */
static int seal(char *spec) {
	size_t n = 1;
	for (char *c = spec; *c; c++)
		n += *c == '\n';
	char **binds = calloc(n, sizeof *binds), **masks = calloc(n, sizeof *masks), **holds = calloc(n, sizeof *holds);
	char **fakes = calloc(n, sizeof *fakes), *src = NULL;
	struct overlay o = {0};
	o.rel = calloc(n, sizeof *o.rel);
	o.kind = calloc(n, 1);
	o.bind = calloc(n, 1);
	size_t nb = 0, nm = 0, nh = 0;
	const char *what = "seal", *p = NULL;
	int ret = -1, per_entry = 1;
	if (binds == NULL || masks == NULL || holds == NULL || fakes == NULL || o.rel == NULL || o.kind == NULL ||
	    o.bind == NULL) {
		what = "seal: allocate";
		goto out;
	}
	/* 1. The lines. */
	for (char *line = spec; line && *line;) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!strchr("mrwhs", line[0]) || line[1] != ' ' || line[2] != '/' || (src && line[0] != 'm')) {
			errno = EINVAL;
			what = "seal: a malformed spec line";
			goto out;
		}
		if (line[0] == 's') {
			src = line + 2; /* the fake of the next line's mask */
		} else if (line[0] == 'h') {
			holds[nh++] = line + 2;
		} else if (line[0] != 'm') {
			binds[nb++] = line;
		} else {
			fakes[nm] = src;
			src = NULL;
			masks[nm++] = line;
		}
		line = next;
	}
	qsort(binds, nb, sizeof *binds, bind_order);
	qsort(holds, nh, sizeof *holds, by_length);

	/* 2. The overlay's plan. */
	if (nh > 0) {
		o.root = holds[0];
		p = o.root;
		if ((per_entry = overlay_plan(&o, masks, nm, binds, nb)) < 0)
			goto out;
	}
	/* 3. The masks the layer does not hold. */
	for (size_t k = 0; k < nm; k++) {
		p = masks[k] + 2;
		if ((per_entry || o.rel[k] == NULL) && mask_mount(p, fakes[k]) != 0)
			goto out;
	}
	/* 4. The read-only and write paths (with the overlay, those it needs). */
	if (bind_paths(binds, nb, per_entry ? NULL : o.bind, 1, &p) != 0) {
		what = "seal: bind";
		goto out;
	}
	/* 5. The overlay, or the copies. */
	what = "seal";
	if (!per_entry) {
		p = o.root;
		what = "seal: overlay";
		if ((per_entry = overlay_mount(&o, fakes, nm)) < 0)
			goto out;
		if (per_entry) { /* refused: the masks it held, by mounts, and the binds it did not need */
			what = "seal";
			for (size_t k = 0; k < nm; k++)
				if (o.rel[k] && mask_mount(p = masks[k] + 2, fakes[k]) != 0)
					goto out;
			if (bind_paths(binds, nb, o.bind, 0, &p) != 0) {
				what = "seal: bind";
				goto out;
			}
		}
	}
	what = "seal";
	for (size_t i = 0; i < nh; i++) {
		p = holds[i];
		if (!per_entry && beneath(p, o.root, 0)) {
			char real[PATH_MAX];
			snprintf(real, sizeof real, "%s%s", o.real, p + strlen(o.root));
			if (!in_graft(&o, real))
				continue; /* the overlay holds it */
		}
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
	for (size_t i = 0; i < o.ng; i++)
		free(o.grafts[i]);
	for (size_t i = 0; i < o.nk; i++)
		free(o.known[i]);
	free(o.known);
	for (size_t i = 0; i < o.nmissing; i++)
		free(o.missing[i]);
	free(o.missing);
	for (size_t k = 0; o.rel && k < nm; k++)
		free(o.rel[k]);
	free(o.grafts);
	free(o.rel);
	free(o.kind);
	free(o.bind);
	free(binds);
	free(masks);
	free(holds);
	free(fakes);
	return ret == 0 ? 0 : 125;
}

/* enter_sealed_cwd moves the init into its working directory as the
 * sealed view names it. The directory it was started in is the real one
 * beneath the seal's mounts (HOME itself, a held or masked directory
 * beneath it), and a relative path from it would reach the real files: a
 * credential the view masks, a start-up file it keeps read-only. The same
 * path is looked up again, now through the mounts; where it no longer
 * leads anywhere (masked, or gone), the program does not start. */
static int enter_sealed_cwd(void) {
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof cwd) == NULL || cwd[0] != '/') {
		if (errno == 0)
			errno = ENOENT;
		return fail("seal: find the working directory", NULL);
	}
	if (chdir(cwd) != 0)
		return fail("seal: enter the working directory in the sealed view", cwd);
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
	/* The kernel's capabilities are numbered from 0 without a gap: the
	 * first it calls invalid (EINVAL) is past its last one. */
	for (int c = 0; c <= 63; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL && c > 0)
			break;
		return fail("drop a capability from the bounding set", NULL);
	}
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

/* program_env returns the program's environment: this process's, without
 * the init's own variables (the "NAME=" prefixes in own, a NULL-ended
 * list), whose values it puts in val, the last of each (NULL where there
 * is none), and with ENVSIEVE_INIT_LD_PRELOAD put back as LD_PRELOAD. NULL
 * when it cannot allocate. */
static char **program_env(const char *const *own, const char **val) {
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof *env);
	if (env == NULL)
		return NULL;
	for (size_t j = 0; own[j]; j++)
		val[j] = NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char *kv = environ[i];
		int mine = 0;
		for (size_t j = 0; own[j] && !mine; j++) {
			size_t len = strlen(own[j]);
			if (strncmp(kv, own[j], len) == 0) {
				val[j] = kv + len;
				mine = 1;
			}
		}
		if (mine)
			continue;
		if (strncmp(kv, PRELOAD_VAR, sizeof PRELOAD_VAR - 1) == 0)
			/* "ENVSIEVE_INIT_LD_PRELOAD=v" becomes "LD_PRELOAD=v", in place. */
			kv += sizeof "ENVSIEVE_INIT_" - 1;
		env[k++] = kv;
	}
	env[k] = NULL;
	return env;
}

/* exec_failed says why the program at path could not be executed (errno
 * e), as launch.execError words it, after prefix ("isolate: " or ""), and
 * returns its status: 127 not found, 126 not executable. */
static int exec_failed(const char *prefix, const char *path, int e) {
	if (e == ENOENT)
		fprintf(stderr, "envsieve: %s%s: command not found in the child's PATH\n", prefix, path);
	else if (e == EACCES || e == ENOEXEC || e == EISDIR)
		fprintf(stderr, "envsieve: %s%s: not executable: %s\n", prefix, path, strerror(e));
	else
		fprintf(stderr, "envsieve: %sexec %s: %s\n", prefix, path, strerror(e));
	return e == ENOENT ? 127 : 126;
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
	static const char *const own[] = {SEAL_VAR, NULL};
	const char *val[1];
	char **env = program_env(own, val);
	if (env == NULL)
		return fail("allocate the environment", NULL);
	char *spec = (char *)val[0];
	if (spec && seal(spec) != 0)
		return 125;
	if (spec && enter_sealed_cwd() != 0)
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
	int exec_error = got == (ssize_t)sizeof e;

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
		if (exec_error)
			return exec_failed("isolate: ", argv[1], e);
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

/* hold_namespaces forks a process that holds the new user and mount
 * namespaces until this one has exited, then ends with them. Their end
 * (unmounting the seal's overlay, its layer, its grafts and every mount
 * the namespace copied, with the RCU grace period an unmount waits for:
 * about half a millisecond on our test VM) is then paid by it, beside the
 * launcher's caller seeing the launch end, not by this process's exit
 * before that. It keeps no capability, no descriptor (the launch's output
 * pipe closes when the program's tree is done, not later), is outside the
 * tree's pid namespace (forked before it is made), and ends at this
 * process's end (PR_SET_PDEATHSIG). Where the fork fails, this process
 * ends with the namespaces itself, as before. */
static void hold_namespaces(void) {
	pid_t parent = getpid();
	if (fork() != 0)
		return;
	struct cap_header hdr = {CAPABILITY_VERSION_3, 0};
	struct cap_data none[2];
	memset(none, 0, sizeof none);
	if (syscall(SYS_capset, &hdr, none) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
	    getppid() != parent)
		_exit(0);
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
	if (syscall(SYS_close_range, 0, ~0U, 0) != 0)
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (;;)
		pause();
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
 * "envsieve-init --unshare FALLBACK PATH ARGV0 [ARG...]". It makes the user
 * and mount namespaces itself, maps the user's uid and gid to themselves
 * (setgroups denied first, as an unprivileged process must), turns
 * non-dumpable, forks their holder (hold_namespaces), makes the pid
 * namespace and forks its pid 1, which is init_main; then it passes
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
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
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
	hold_namespaces();
	/* The pid namespace after the holder: it is not in it. */
	if (unshare(CLONE_NEWPID) != 0)
		return fail("unshare the pid namespace (refused where user and mount namespaces were not)", NULL);
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

/*
 * The Landlock init: "envsieve-init --landlock PATH ARGV0 [ARG...]", with
 * ENVSIEVE_INIT_LANDLOCK=FD naming a Landlock ruleset the launcher built
 * (package seal: the seal's rules, or a scope's empty domain) and left
 * open across the exec. It does what envsieve's Go ScopeInit does, in C,
 * without a second Go start:
 *
 *   - it is a child subreaper, so whatever the tree detaches (setsid, a
 *     double fork) is reparented to it and reaped while the launch runs;
 *   - it forks the program, which alone enters the domain (no_new_privs,
 *     landlock_restrict_self) before its exec: this process stays outside
 *     it, and the tree cannot ptrace it nor read its /proc files;
 *   - it passes the launcher's signals on to the program (SIGINT and
 *     SIGQUIT only when stdin is not a terminal, as Supervise does);
 *   - when the program exits it kills and reaps whatever is left of the
 *     tree, then exits with the program's status: the reaper by the
 *     program's signal, if one ended it (as envsieve's Go reaper), the
 *     init in the launcher's place with 128+N (as the launcher);
 *   - with ENVSIEVE_INIT_PARENT=PID (a resident launcher that started it),
 *     it watches that process (a pidfd) and ends the tree the moment it
 *     ends, even by SIGKILL. Without it (exec'd in the launcher's place),
 *     it forks such a reaper of the tree itself, watching this process,
 *     and waits for it: killing either ends the tree (the one left ends
 *     it), as killing a resident launcher or its Go init does.
 *
 * Its own failures exit 125 before the program starts; the program's
 * exec's exit 127 (not found) or 126 (not executable).
 */
#define LANDLOCK_VAR "ENVSIEVE_INIT_LANDLOCK="
#define PARENT_VAR "ENVSIEVE_INIT_PARENT="
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* end_within bounds how long ending a tree may take, in milliseconds
 * (proc.endWithin). */
enum { end_within = 5000 };

/* kill_children sends SIGKILL to every child of this single-threaded
 * process and returns how many it found: from the kernel's list
 * (/proc/self/task/TID/children), else from every process's parent in
 * /proc/PID/stat. Only this process waits for its children, so no pid it
 * signals can have been reused. */
static int kill_children(void) {
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int n = 0;
	if (fd >= 0) {
		/* One read: a longer list is finished by the next round, and
		 * its last number, perhaps cut short, is left to it too. */
		ssize_t got = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (got >= 0) {
			buf[got] = 0;
			if (got == (ssize_t)sizeof buf - 1) {
				char *last = strrchr(buf, ' ');
				*(last ? last : buf) = 0;
			}
			for (char *p = buf, *end; *p; p = end) {
				long pid = strtol(p, &end, 10);
				if (end == p)
					break;
				if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
					n++;
			}
			return n;
		}
	}
	DIR *d = opendir("/proc");
	if (d == NULL)
		return 0;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		long p = atol(e->d_name);
		snprintf(path, sizeof path, "/proc/%ld/stat", p);
		int sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (sfd < 0)
			continue;
		ssize_t got = read(sfd, buf, sizeof buf - 1);
		close(sfd);
		if (got <= 0)
			continue;
		buf[got] = 0;
		/* "pid (comm) state ppid": comm may hold spaces and parentheses. */
		char *rp = strrchr(buf, ')');
		if (rp == NULL || rp[1] != ' ' || rp[2] == 0 || rp[3] != ' ')
			continue;
		char *end;
		long ppid = strtol(rp + 4, &end, 10);
		if (end != rp + 4 && ppid == self) {
			if (kill((pid_t)p, SIGKILL) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

/* end_children kills every child of this process, and every process that
 * becomes its child meanwhile (reparented orphans), and reaps them until
 * none is left, or end_within has passed. */
static void end_children(void) {
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w;
		while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (w < 0 && errno == ECHILD)
			return;
		int left = kill_children();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > end_within) {
			fprintf(stderr, "envsieve: scope: %d processes of the tree did not end within %ds of SIGKILL\n", left,
				end_within / 1000);
			return;
		}
		usleep(2000);
	}
}

/* end_by ends this process by sig, as the process it waited for ended, so
 * that whoever waits for it sees the signal and not 128+N; without a core
 * (the program dumped its own, if any). It returns 128+N where the signal
 * does not end it. */
static int end_by(int sig) {
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	kill(getpid(), sig);
	return 128 + sig;
}

/* reap waits for pid, this process's main child, as a child subreaper:
 * it reaps every orphan meanwhile, passes the forwarded signals read from
 * sfd on to pid, and kills pid when watch (a pidfd, or -1) says its
 * process ended. Then it ends the rest (end_children) and returns the
 * wait status of pid, or -1 when waiting failed. */
static int reap(pid_t pid, int sfd, int watch) {
	int status = -1;
	for (;;) {
		struct pollfd p[2] = {{sfd, POLLIN, 0}, {watch, POLLIN, 0}};
		if (poll(p, watch >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (watch >= 0 && p[1].revents) {
			/* The launcher is gone: end the program, and the rest below. */
			kill(pid, SIGKILL);
			close(watch);
			watch = -1;
		}
		if (!p[0].revents)
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		int sig = (int)si.ssi_signo;
		if (sig != SIGCHLD) {
			if ((sig == SIGINT || sig == SIGQUIT) && !pass_int_quit)
				continue;
			kill(pid, sig);
			continue;
		}
		int ws;
		pid_t w;
		int done = 0;
		while ((w = waitpid(-1, &ws, WNOHANG)) > 0) {
			if (w == pid) {
				status = ws;
				done = 1;
			}
		}
		if (done || (w < 0 && errno == ECHILD))
			break;
	}
	if (watch >= 0)
		close(watch);
	end_children();
	return status;
}

/* finish turns the wait status of the process this one waited for into
 * its own end: the same code, or the same signal. */
static int finish(int ws) {
	if (ws == -1)
		return 125;
	if (WIFSIGNALED(ws))
		return end_by(WTERMSIG(ws));
	return WEXITSTATUS(ws);
}

/* parse_number reads a number of at most 9 digits from text, all digits,
 * and at least min; -1 for anything else. */
static int parse_number(const char *text, int min) {
	if (*text == 0 || strlen(text) > 9)
		return -1;
	int n = 0;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n >= min ? n : -1;
}

static int landlock_main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "envsieve: scope init: no program\n");
		return 125;
	}
	const char *path = argv[2];
	char **pargv = argv + 3;

	/* The program's environment: the init's own variables out. */
	static const char *const own[] = {LANDLOCK_VAR, PARENT_VAR, SEAL_VAR, NULL};
	const char *val[3];
	char **env = program_env(own, val);
	if (env == NULL)
		return fail("allocate the environment", NULL);
	/* SEAL_VAR (val[2]) is not this init's: its ruleset is made already. */
	int rfd = -1;
	if (val[0] && (rfd = parse_number(val[0], 3)) < 0) {
		fprintf(stderr, "envsieve: scope init: %s is not a descriptor\n", LANDLOCK_VAR);
		return 125;
	}
	pid_t launcher = 0;
	if (val[1] && (launcher = (pid_t)parse_number(val[1], 1)) < 0) {
		fprintf(stderr, "envsieve: scope init: %s is not a pid\n", PARENT_VAR);
		return 125;
	}
	/* Without its domain the program must not start. */
	if (rfd < 0) {
		fprintf(stderr, "envsieve: scope init: no Landlock ruleset (%s)\n", LANDLOCK_VAR);
		return 125;
	}
	if (fcntl(rfd, F_SETFD, FD_CLOEXEC) != 0)
		return fail("the Landlock ruleset's descriptor", NULL);
	/* As the resident launcher, and the namespaces' init in its place:
	 * the user's other processes cannot read this one's memory or
	 * environ (the tree cannot anyway: it is outside the domain). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return fail("turn non-dumpable", NULL);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return fail("become a child subreaper", NULL);
	pass_int_quit = !isatty(0);

	/* The forwarded signals and SIGCHLD are read from a signalfd: blocked
	 * here, put back as they were in the program. */
	sigset_t old, set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		return fail("signalfd", NULL);

	if (launcher == 0) {
		/* In the launcher's place: the tree's reaper is a child, which
		 * watches this process; this one waits for it, passes signals
		 * on, and is the subreaper of what outlives it. */
		launcher = getpid();
		pid_t r = fork();
		if (r < 0)
			return fail("fork", NULL);
		if (r > 0) {
			/* 128+N for a signal, as the launcher and the namespaces'
			 * init in its place give it. */
			close(rfd);
			int ws = reap(r, sfd, -1);
			return ws == -1 ? 125 : exit_status(ws);
		}
	}
	/* The tree's reaper (a fork is no subreaper: set again). Opened before
	 * the check: a launcher gone before it is seen as gone, never mistaken
	 * for the pid's next holder. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return fail("become a child subreaper", NULL);
	int watch = (int)syscall(SYS_pidfd_open, launcher, 0);
	if (watch < 0) {
		/* No pidfd (a kernel before 5.3): the launcher's death kills
		 * this process, and the program with it (PR_SET_PDEATHSIG). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			return fail("set the parent-death signal", NULL);
	}
	if (getppid() != launcher) {
		fprintf(stderr, "envsieve: scope: the launcher ended before the program started\n");
		return 125;
	}
	if (watch >= 0)
		fcntl(watch, F_SETFD, FD_CLOEXEC);

	int report[2]; /* what failed before the program ran: {stage, errno} */
	if (pipe2(report, O_CLOEXEC) != 0)
		return fail("pipe", NULL);
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork", NULL);
	if (pid == 0) {
		close(report[0]);
		int stage = 0, e = 0;
		/* Killed with its reaper, whoever kills it: what the program
		 * started is reparented to the launcher, which ends it. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() == 1)
			stage = 1;
		else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			stage = 2;
		else if (syscall(SYS_landlock_restrict_self, rfd, 0) != 0)
			stage = 3;
		if (stage == 0) {
			close(rfd);
			sigprocmask(SIG_SETMASK, &old, NULL);
			execve(path, pargv, env);
			stage = 4;
		}
		e = errno;
		int msg[2] = {stage, e};
		(void)!write(report[1], msg, sizeof msg);
		_exit(125);
	}
	close(rfd);
	close(report[1]);
	int msg[2] = {0, 0};
	ssize_t got;
	do
		got = read(report[0], msg, sizeof msg);
	while (got < 0 && errno == EINTR);
	close(report[0]);
	int ws = reap(pid, sfd, watch);
	if (got != (ssize_t)sizeof msg)
		return finish(ws);
	errno = msg[1];
	switch (msg[0]) {
	case 1:
		return fail("set the program's parent-death signal", NULL);
	case 2:
		return fail("seal: no_new_privs", NULL);
	case 3:
		return fail("seal: landlock_restrict_self", NULL);
	}
	return exec_failed("", path, msg[1]);
}


int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "--landlock") == 0)
		return landlock_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--unshare") == 0)
		return unshare_main(argc, argv);
	sigset_t mask;
	sigprocmask(SIG_SETMASK, NULL, &mask);
	return init_main(argc, argv, &mask);
}
