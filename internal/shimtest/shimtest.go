// Package shimtest builds libenvsieve.so and small C programs for tests,
// with the system C compiler, once per test binary.
package shimtest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// NoUserNS is the source of testdata/nouserns.c, for [Program]: a wrapper whose
// seccomp filter refuses user namespaces (and with -L, Landlock).
//
//go:embed testdata/nouserns.c
var NoUserNS string

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
// the tests prove.
func Lib(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, err := os.MkdirTemp("", "envsieve-shimtest-")
		if err != nil {
			libErr = err
			return
		}
		libDir = dir
		// Readable by an unprivileged user, for the tests that drop to one.
		os.Chmod(dir, 0o755)
		libPath = filepath.Join(dir, "libenvsieve.so")
		args := append(append([]string{}, CFlags...), "-o", libPath, Source(), "-ldl")
		cmd := exec.Command(cc(), args...)
		cmd.Env = os.Environ() // the compiler's own settings (PATH, TMPDIR), on purpose
		if libOut, libErr = cmd.CombinedOutput(); libErr != nil {
			return
		}
		// envsieve-start goes next to the shim, where the launcher looks.
		start := filepath.Join(filepath.Dir(Source()), "start.c")
		args = append(append([]string{}, StartCFlags...), "-o", filepath.Join(dir, "envsieve-start"), start)
		cmd = exec.Command(staticCC(), args...)
		cmd.Env = os.Environ()
		if libOut, libErr = cmd.CombinedOutput(); libErr != nil {
			return
		}
		// So does envsieve-init, an isolated launch's init.
		init := filepath.Join(filepath.Dir(Source()), "init.c")
		args = append(append([]string{}, StartCFlags...), "-o", filepath.Join(dir, "envsieve-init"), init)
		if os.Getenv("ENVSIEVE_TEST_INIT_PER_ENTRY") == "1" {
			// The init that never makes the overlay of HOME (init.c), so
			// that every test of the seal can run its fallback too.
			args = append(args, "-DENVSIEVE_INIT_NO_OVERLAY")
		}
		cmd = exec.Command(staticCC(), args...)
		cmd.Env = os.Environ()
		libOut, libErr = cmd.CombinedOutput()
	})
	if libErr != nil {
		t.Fatalf("build libenvsieve.so: %v\n%s", libErr, libOut)
	}
	return libPath
}

// Program compiles the C source src into an executable in a test directory
// readable by everyone and returns its path.
func Program(t testing.TB, name, src string, extra ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "envsieve-prog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-std=c11", "-O2", "-Wall", "-o", out, c}, extra...)
	cmd := exec.Command(cc(), args...)
	cmd.Env = os.Environ()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, b)
	}
	return out
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
