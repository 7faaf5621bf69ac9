// Package shimtest builds libenvsieve.so and small C programs for tests,
// with the system C compiler: the shim once per change of its sources
// (a cache in /var/tmp shared by the packages and runs), a program once
// per test.
package shimtest

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// NoUserNS is the source of testdata/nouserns.c, for [Program]: a wrapper whose
// seccomp filter refuses user namespaces (and with -L, Landlock).
//
//go:embed testdata/nouserns.c
var NoUserNS string

// UsernsOff is the source of testdata/usernsoff.c, for [Program]: a
// wrapper under which /proc/sys/user/max_user_namespaces reads 0, so
// that envsieve chooses the Landlock seal before it starts anything; as
// root it runs its program as the uid it is given.
//
//go:embed testdata/usernsoff.c
var UsernsOff string

// NoUnixSock is the source of testdata/nounixsock.c, for [Program]: a
// wrapper that runs a command as Claude Code's Linux sandbox does, unable
// to create a unix socket and with no descriptor inherited but stdio.
//
//go:embed testdata/nounixsock.c
var NoUnixSock string

// CFlags are the flags the shim is built with; the Makefile in
// shim/libenvsieve uses the same.
var CFlags = []string{"-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
	"-Wno-nonnull-compare", "-fno-delete-null-pointer-checks"}

var (
	once    sync.Once
	libDir  string
	libPath string
	libErr  error
	libOut  []byte
)

// Main runs the tests of a package that uses [Lib] and removes what Lib
// built; a package's TestMain calls it: os.Exit(shimtest.Main(m)). Lib's
// directory outlives each test (it is built once for all), so only the end
// of the run can remove it.
func Main(m interface{ Run() int }) int {
	code := m.Run()
	Cleanup()
	return code
}

// Cleanup removes what [Lib] built. A later Lib builds it again.
func Cleanup() {
	if libDir != "" {
		os.RemoveAll(libDir)
	}
	once, libDir, libPath, libErr, libOut = sync.Once{}, "", "", nil, nil
}

// StartCFlags are the flags envsieve-start is built with: statically, so
// that LD_PRELOAD never loads the shim into it.
var StartCFlags = []string{"-std=c11", "-O2", "-static", "-Wall", "-Wextra", "-Werror"}

// Source returns the path of the shim's C source.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "shim", "libenvsieve", "envsieve.c")
}

// Lib returns the path of a libenvsieve.so built from the source tree,
// with envsieve-start and envsieve-init beside it. It
// fails the test when no C compiler is found: the shim is part of what
// the tests prove. The build is cached (see [cachedBuild]): the packages
// that test the shim, and the next run, share one.
func Lib(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if dir, ok := cachedBuild(); ok {
			libPath = filepath.Join(dir, "libenvsieve.so")
			return
		}
		dir, err := os.MkdirTemp("", "envsieve-shimtest-")
		if err != nil {
			libErr = err
			return
		}
		libDir = dir
		// Readable by an unprivileged user, for the tests that drop to one.
		os.Chmod(dir, 0o755)
		libPath = filepath.Join(dir, "libenvsieve.so")
		libOut, libErr = builder(dir)
	})
	if libErr != nil {
		t.Fatalf("build libenvsieve.so: %v\n%s", libErr, libOut)
	}
	return libPath
}

// builder is build; a test of the cache replaces it.
var builder = build

// build compiles the shim, envsieve-start and envsieve-init into dir.
func build(dir string) ([]byte, error) {
	args := append(append([]string{}, CFlags...), "-o", filepath.Join(dir, "libenvsieve.so"), Source(), "-ldl")
	cmd := exec.Command(cc(), args...)
	cmd.Env = os.Environ() // the compiler's own settings (PATH, TMPDIR), on purpose
	if out, err := cmd.CombinedOutput(); err != nil {
		return out, err
	}
	// envsieve-start goes next to the shim, where the launcher looks.
	start := filepath.Join(filepath.Dir(Source()), "start.c")
	args = append(append([]string{}, StartCFlags...), "-o", filepath.Join(dir, "envsieve-start"), start)
	cmd = exec.Command(staticCC(), args...)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return out, err
	}
	// So does envsieve-init, an isolated launch's init.
	init := filepath.Join(filepath.Dir(Source()), "init.c")
	args = append(append([]string{}, StartCFlags...), "-o", filepath.Join(dir, "envsieve-init"), init)
	args = append(args, initFlags()...)
	cmd = exec.Command(staticCC(), args...)
	cmd.Env = os.Environ()
	return cmd.CombinedOutput()
}

// initFlags are envsieve-init's extra flags: with
// ENVSIEVE_TEST_INIT_PER_ENTRY=1, the init that never makes the overlay of
// HOME (init.c), so that every test of the seal can run its fallback too.
func initFlags() []string {
	if os.Getenv("ENVSIEVE_TEST_INIT_PER_ENTRY") == "1" {
		return []string{"-DENVSIEVE_INIT_NO_OVERLAY"}
	}
	return nil
}

// cacheRoot holds the cache: /var/tmp, for temporary files kept between
// runs, and not TMPDIR, which a test may point at a directory of its own
// to see what the code under test leaves there (LeavesNothing).
var cacheRoot = "/var/tmp"

// cacheKeep is how long a cached build nobody used stays.
const cacheKeep = 24 * time.Hour

// cachedBuild returns the directory of the cached build of today's
// sources (see [cached]), with libOut and libErr set when it failed; ok
// false when there is no cache to use.
func cachedBuild() (dir string, ok bool) {
	key, err := sourceKey()
	if err != nil {
		return "", false
	}
	dir, ok, libOut, libErr = cached(key, builder)
	return dir, ok
}

// cached returns the directory of the cache's entry key, made by build
// when it is missing: one C build (the shim's takes about 2.5 s of CPU)
// per change of what key hashes instead of one per test package and run.
// The cache is in cacheRoot. An entry is made in a directory of its own
// and renamed into place, so that packages building at once never see
// half of one. The cache is this user's: a directory another user owns
// or may write is not used (ok false: the caller builds in a directory
// of its own, as without the cache). A build that fails is returned
// (out, err), not cached.
func cached(key string, build func(dir string) ([]byte, error)) (dir string, ok bool, out []byte, err error) {
	base := filepath.Join(cacheRoot, "envsieve-shimtest-cache-"+strconv.Itoa(os.Getuid()))
	_ = os.Mkdir(base, 0o755)
	if !ownDir(base) {
		return "", false, nil, nil
	}
	final := filepath.Join(base, key)
	if ownDir(final) {
		now := time.Now()
		_ = os.Chtimes(final, now, now) // in use: not pruned
		return final, true, nil, nil
	}
	tmp, err := os.MkdirTemp(base, "build-")
	if err != nil {
		return "", false, nil, nil
	}
	// Readable by an unprivileged user, for the tests that drop to one.
	os.Chmod(tmp, 0o755)
	if out, err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", true, out, err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another package built it meanwhile.
		os.RemoveAll(tmp)
		if !ownDir(final) {
			return "", false, nil, nil
		}
	}
	prune(base, key)
	return final, true, nil, nil
}

// prune removes the cache's entries but keep that no one used for
// cacheKeep.
func prune(base, keep string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Name() == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > cacheKeep {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// compilers writes each compiler's path, size and time to w.
func compilers(w io.Writer, ccs ...string) error {
	for _, c := range ccs {
		p, err := exec.LookPath(c)
		if err != nil {
			return err
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return nil
}

// sourceKey hashes what a build is made from: the files of
// shim/libenvsieve, the flags, and each compiler's path, size and time.
func sourceKey() (string, error) {
	h := sha256.New()
	src := filepath.Dir(Source())
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%q %q %q\n", CFlags, StartCFlags, initFlags())
	if err := compilers(h, cc(), staticCC()); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Program compiles the C source src into an executable in a directory
// readable by everyone and returns its path. The build is cached as
// Lib's is (see [cached]), keyed by name, src, extra and the compiler: a
// test must not change the file it returns (copy it first).
func Program(t testing.TB, name, src string, extra ...string) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", name, src, extra)
	if compilers(h, cc()) == nil {
		dir, ok, out, err := cached("prog-"+hex.EncodeToString(h.Sum(nil)), func(dir string) ([]byte, error) {
			return compile(dir, name, src, extra)
		})
		if ok && err != nil {
			t.Fatalf("cc %s: %v\n%s", name, err, out)
		}
		if ok {
			return filepath.Join(dir, name)
		}
	}
	dir, err := os.MkdirTemp("", "envsieve-prog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if out, err := compile(dir, name, src, extra); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, out)
	}
	return filepath.Join(dir, name)
}

// compile writes src to dir/name.c and compiles it to dir/name.
func compile(dir, name, src string, extra []string) ([]byte, error) {
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		return nil, err
	}
	args := append([]string{"-std=c11", "-O2", "-Wall", "-o", filepath.Join(dir, name), c}, extra...)
	cmd := exec.Command(cc(), args...)
	cmd.Env = os.Environ()
	return cmd.CombinedOutput()
}

// staticCC is the compiler of the static helpers, as the Makefile picks
// it: musl-gcc where it is installed (a static musl program starts in
// about 0.25 ms where a static glibc one takes 0.6, probing the CPU), else
// cc.
func staticCC() string {
	if p, err := exec.LookPath("musl-gcc"); err == nil {
		return p
	}
	return cc()
}

func cc() string {
	if p, err := exec.LookPath("cc"); err == nil {
		return p
	}
	return "gcc"
}

// SocketDir returns a new directory for a test's unix sockets, removed when
// the test ends: in the temporary directory when a socket's path fits
// beneath it, else in /tmp (a long TMPDIR must not break a test).
func SocketDir(t testing.TB, prefix string) string {
	t.Helper()
	parent := os.TempDir()
	if len(parent) > 60 {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// leavesEnv marks the child run of [LeavesNothing].
const leavesEnv = "ENVSIEVE_TEST_LEAVES_NOTHING"

// LeavesNothing runs this test binary again, its tests matching run, with
// TMPDIR a new directory too deep for a unix socket's path beneath it, and
// fails t unless they pass and leave that directory empty: what the tests
// make they remove, even what outlives each test (a TestMain's), and every
// socket they make is placed where its path fits.
func LeavesNothing(t *testing.T, run string) {
	if os.Getenv(leavesEnv) != "" {
		// The child run: the tests it re-runs are checked by the parent,
		// which runs this one only to run them.
		return
	}
	base := t.TempDir()
	// Reachable by the tests that drop to an unprivileged user.
	for d := base; d != filepath.Clean(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	tmp := filepath.Join(base, "a-temporary-directory-deeper-than-a-unix-socket-path-may-be-"+
		"which-every-socket-of-the-tests-must-avoid")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, leavesEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests %s with TMPDIR=%s (%d bytes): %v\n%s", run, tmp, len(tmp), err, out)
	}
	if !strings.Contains(string(out), "--- PASS") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the tests %s ran nothing, or skipped:\n%s", run, out)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		t.Errorf("the tests %s left %q in TMPDIR", run, left)
	}
}
