//go:build linux

package seal

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// landlockHelper is the variable that makes the test binary a sealed
// probe: it restricts itself to the spec the variable holds and runs the
// shell command of its last argument as nobody.
const landlockHelper = "ENVSIEVE_TEST_LANDLOCK_SPEC"

func TestMain(m *testing.M) {
	if text, ok := os.LookupEnv(landlockHelper); ok {
		runtime.LockOSThread()
		spec, err := Decode(text)
		if err == nil {
			err = restrictSelf(spec)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		argv := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", os.Args[len(os.Args)-1]}
		err = syscall.Exec("/usr/bin/setpriv", argv, []string{"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME")})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(126)
	}
	os.Exit(m.Run())
}

// restrictSelf enters the domain of spec's ruleset, as proc.Restrict does
// (proc imports this package).
func restrictSelf(spec Spec) error {
	rfd, err := Ruleset(spec)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rfd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// sealHome makes a HOME holding credential files, an envsieve config dir
// and ordinary files, owned by nobody, in directories nobody can reach.
func sealHome(t *testing.T) (home string, spec Spec) {
	t.Helper()
	if err := LandlockAvailable(); err != nil {
		t.Fatalf("this test needs Landlock: %v", err)
	}
	if os.Getuid() != 0 {
		t.Fatalf("this test runs its probe as nobody, and needs root to set it up")
	}
	top := t.TempDir()
	// The directories t.TempDir made, up to the temporary directory.
	for d := top; d != filepath.Clean(os.TempDir()) && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	home = filepath.Join(top, "home")
	files := map[string]string{
		".netrc": "canary", ".aws/credentials": "canary", ".aws/config": "ordinary", ".gnupg/private-keys-v1.d/k.key": "canary",
		".config/envsieve/policy.yaml": "version: 1\n", ".config/envsieve/secrets.age": "canary",
		".local/share/envsieve/store.key": "canary", "notes.txt": "ordinary", "proj/main.go": "ordinary",
	}
	for f, body := range files {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link in HOME to a masked file, and a linked directory whose
	// target is masked through its link's name.
	os.Symlink(".netrc", filepath.Join(home, "netrc-link"))
	os.MkdirAll(filepath.Join(top, "elsewhere/kube"), 0o700)
	os.WriteFile(filepath.Join(top, "elsewhere/kube/config"), []byte("canary\n"), 0o600)
	os.Symlink(filepath.Join(top, "elsewhere/kube"), filepath.Join(home, ".kube"))
	filepath.Walk(top, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	return home, Default(home, filepath.Join(home, ".config/envsieve"), filepath.Join(home, ".local/share/envsieve"), nil)
}

// TestLandlockPlan: the rules of a seal give every right to what is not
// near a sealed path, nothing to a masked path or a directory above one,
// reading only beneath the read-only config dir, and follow no link.
func TestLandlockPlan(t *testing.T) {
	home, spec := sealHome(t)
	rules, err := planLandlock(spec, llHandled)
	defer func() {
		for _, r := range rules {
			syscall.Close(r.fd)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, r := range rules {
		if _, dup := got[r.path]; dup {
			t.Errorf("two rules for %s", r.path)
		}
		got[r.path] = r.access
	}
	top := filepath.Dir(home)
	for _, tt := range []struct {
		path string
		want uint64 // 0: no rule
	}{
		{"/", 0},
		{"/usr", llHandled},
		{filepath.Dir(top), 0}, // above HOME: on the spine
		{home, 0},
		{home + "/.netrc", 0},
		{home + "/netrc-link", 0},
		{home + "/.kube", 0},
		{top + "/elsewhere", 0},
		{top + "/elsewhere/kube", 0},
		{home + "/.aws", 0},
		{home + "/.aws/credentials", 0},
		{home + "/.aws/config", llFile},
		{home + "/.gnupg", 0},
		{home + "/.config", 0},
		{home + "/.config/envsieve", 0},
		{home + "/.config/envsieve/policy.yaml", llRead},
		{home + "/.config/envsieve/secrets.age", 0},
		{home + "/.local/share/envsieve", 0},
		{home + "/notes.txt", llFile},
		{home + "/proj", llHandled},
	} {
		if g := got[tt.path]; g != tt.want {
			t.Errorf("%s: access %#x, want %#x", tt.path, g, tt.want)
		}
	}
}

// TestLandlockPlanWrites: with HOME read-only, its entries get reading
// only, but for the write places beneath it, which get every right, and
// the directories between (walked) reading only; the config dir stays
// read-only beneath a write place, and a write place in a masked path
// gets nothing.
func TestLandlockPlanWrites(t *testing.T) {
	home, spec := sealHome(t)
	for _, d := range []string{"go/pkg/mod", "go/bin", ".cache"} {
		os.MkdirAll(filepath.Join(home, d), 0o700)
	}
	spec.ReadOnly = append(spec.ReadOnly, home)
	spec.Write = []string{home + "/proj", home + "/go/pkg/mod", home + "/.cache", home + "/.config", home + "/.gnupg/x"}
	rules, err := planLandlock(spec, llHandled)
	defer func() {
		for _, r := range rules {
			syscall.Close(r.fd)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, r := range rules {
		got[r.path] = r.access
	}
	for _, tt := range []struct {
		path string
		want uint64
	}{
		{"/usr", llHandled},
		{home, 0},
		{home + "/notes.txt", llRead},
		{home + "/proj", llHandled},
		{home + "/go", llRead},
		{home + "/go/pkg", llRead},
		{home + "/go/pkg/mod", llHandled},
		{home + "/go/bin", llRead},
		{home + "/.cache", llHandled},
		{home + "/.config", 0}, // a write place above sealed paths: walked
		{home + "/.config/envsieve", 0},
		{home + "/.config/envsieve/policy.yaml", llRead},
		{home + "/.gnupg", 0},
	} {
		if g := got[tt.path]; g != tt.want {
			t.Errorf("%s: access %#x, want %#x", tt.path, g, tt.want)
		}
	}
}

// TestLandlockSeal plays the tree of a Landlock-sealed launch, as nobody:
// it cannot read a masked file by its name, a link, a hard link it makes,
// a move, or /proc/self/root, nor change the config dir in any way; it
// reads and writes its project and HOME's ordinary files as before. Each
// check is made once without the seal, where all of it works.
func TestLandlockSeal(t *testing.T) {
	home, spec := sealHome(t)
	text, err := spec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ".config/envsieve"
	denied := []string{
		"cat .netrc", "cat netrc-link", "cat .aws/credentials", "cat .gnupg/private-keys-v1.d/k.key",
		"cat .kube/config", "cat " + cfg + "/secrets.age", "cat .local/share/envsieve/store.key",
		"cat /proc/self/root$HOME/.netrc",
		"ln .netrc proj/hard && cat proj/hard",
		"echo 'mode: audit' >> " + cfg + "/policy.yaml",
		": > " + cfg + "/policy.yaml",
		"truncate -s 0 " + cfg + "/policy.yaml",
		"touch " + cfg + "/new.yaml",
		"mv proj/main.go " + cfg + "/policy.yaml",
		"rm " + cfg + "/policy.yaml",
		"echo x > .aws/credentials",
		// The documented cost: a new entry directly in a directory
		// above a sealed path cannot be made.
		"touch new-in-home",
		"mv .netrc proj/moved",
		"mv " + cfg + " proj/cfg",
	}
	allowed := []string{
		"cat .aws/config", "cat notes.txt", "echo more >> notes.txt", "cat " + cfg + "/policy.yaml",
		"echo x > proj/new && cat proj/new", "mkdir -p proj/d && mv proj/new proj/d/ && cat proj/d/new",
		"rm proj/d/new", "ls .gnupg >/dev/null", "ls $HOME >/dev/null", "echo x > /var/tmp/.seal-test-$$ && rm /var/tmp/.seal-test-$$",
		"cat /etc/hostname",
	}
	probe := func(sealed bool, cmds []string) map[string]bool {
		var b strings.Builder
		b.WriteString(`cd "$HOME"` + "\n")
		for i, c := range cmds {
			fmt.Fprintf(&b, "if (%s) >/dev/null 2>&1; then echo ok-%d; else echo no-%d; fi\n", c, i, i)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$", b.String())
		cmd.Env = []string{"HOME=" + home}
		if sealed {
			cmd.Env = append(cmd.Env, landlockHelper+"="+text)
		} else {
			cmd.Path, cmd.Args = "/usr/bin/setpriv", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", b.String()}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("probe (sealed %v): %v\n%s", sealed, err, strings.ReplaceAll(string(out), "canary", "<canary>"))
		}
		res := map[string]bool{}
		for i, c := range cmds {
			res[c] = strings.Contains(string(out), fmt.Sprintf("ok-%d\n", i))
		}
		return res
	}
	// The sealed run first: the control run changes the files.
	sealedDenied, sealedAllowed := probe(true, denied), probe(true, allowed)
	for _, c := range denied {
		if sealedDenied[c] {
			t.Errorf("sealed, the tree could: %s", c)
		}
	}
	for _, c := range allowed {
		if !sealedAllowed[c] {
			t.Errorf("sealed, the tree could not: %s", c)
		}
	}
	control := probe(false, allowed)
	for _, c := range allowed {
		if !control[c] {
			t.Errorf("control: unsealed, the tree could not: %s", c)
		}
	}
	// In this order each command works unsealed, after the ones before.
	control = probe(false, denied)
	for _, c := range denied {
		if !control[c] {
			t.Errorf("control: unsealed, the tree could not: %s", c)
		}
	}
}

// BenchmarkLandlockPlan is what a Landlock seal costs a launch before the
// exec: the walk of the spine directories of a HOME of 100 entries, and
// the ruleset built from it (all but landlock_restrict_self, which a
// benchmark cannot undo). The HOME is in /var/tmp, not in /tmp, whose
// many entries a real HOME's spine does not hold.
func BenchmarkLandlockPlan(b *testing.B) {
	home, err := os.MkdirTemp("/var/tmp", "envsieve-bench-home-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(home) })
	for i := range 100 {
		os.WriteFile(filepath.Join(home, fmt.Sprintf("file%03d", i)), nil, 0o600)
	}
	for _, f := range []string{".netrc", ".aws/credentials", ".ssh/id_ed25519", ".ssh/config", ".config/gh/hosts.yml",
		".config/envsieve/policy.yaml", ".local/share/envsieve/redact.key"} {
		os.MkdirAll(filepath.Join(home, filepath.Dir(f)), 0o700)
		os.WriteFile(filepath.Join(home, f), nil, 0o600)
	}
	spec := Default(home, filepath.Join(home, ".config/envsieve"), filepath.Join(home, ".local/share/envsieve"), nil)
	rules, err := planLandlock(spec, llHandled)
	closeRules(rules)
	if err != nil {
		b.Fatal(err)
	}
	n := len(rules)
	// What a launch pays: the plan, the ruleset and its rules, and the
	// rules' descriptors closed.
	for b.Loop() {
		rfd, err := ruleset(spec, llHandled)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(rfd)
	}
	b.ReportMetric(float64(n), "rules")
}

// TestListTypes: the names and types listTypes reads from getdents64 are
// os.ReadDir's, for files, directories, links and a fifo, in a directory
// whose listing takes more than one buffer.
func TestListTypes(t *testing.T) {
	dir := t.TempDir()
	for i := range 600 {
		name := filepath.Join(dir, fmt.Sprintf("entry-with-a-long-name-%04d", i))
		var err error
		switch i % 4 {
		case 0:
			err = os.WriteFile(name, nil, 0o600)
		case 1:
			err = os.Mkdir(name, 0o700)
		case 2:
			err = os.Symlink("/nowhere", name)
		case 3:
			err = syscall.Mkfifo(name, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	types := map[string]uint8{}
	names, err := listTypes(fd, types)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(want) || len(types) != len(want) {
		t.Fatalf("%d names, %d types; want %d", len(names), len(types), len(want))
	}
	dt := map[fs.FileMode]uint8{0: unix.DT_REG, fs.ModeDir: unix.DT_DIR, fs.ModeSymlink: unix.DT_LNK, fs.ModeNamedPipe: unix.DT_FIFO}
	for _, e := range want {
		if got := types[e.Name()]; got != dt[e.Type()] {
			t.Errorf("%s: type %d, want %d", e.Name(), got, dt[e.Type()])
		}
	}
}

// TestCloseRules: closeRules closes every rule's descriptor, in a row or
// not, and no other.
func TestCloseRules(t *testing.T) {
	open := func() int {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	var rules []llRule
	var others []int
	for i := range 40 {
		fd := open()
		if i%9 == 4 {
			others = append(others, fd) // a gap in the run
			continue
		}
		rules = append(rules, llRule{fd: fd})
	}
	closeRules(rules)
	for _, r := range rules {
		if _, err := unix.FcntlInt(uintptr(r.fd), unix.F_GETFD, 0); err == nil {
			t.Errorf("descriptor %d of a rule is still open", r.fd)
		}
	}
	for _, fd := range others {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			t.Errorf("descriptor %d, not a rule's, was closed", fd)
		}
		unix.Close(fd)
	}
}

// TestRealPaths: realPaths resolves each path as filepath.EvalSymlinks
// does (through linked directories, a linked file, a chain of links) and
// skips those that do not exist (missing, beneath a file, a dangling
// link), with each directory above them resolved once.
func TestRealPaths(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	mk := func(p string) string { return filepath.Join(root, p) }
	for _, d := range []string{"home/.config/gh", "elsewhere/aws", "home/.local"} {
		if err := os.MkdirAll(mk(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/.config/gh/hosts.yml", "elsewhere/aws/credentials", "home/.netrc-real", "home/afile"} {
		if err := os.WriteFile(mk(f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"home/.aws":        "../elsewhere/aws",
		"home/.netrc":      ".netrc-real",
		"home/.chain":      ".aws",
		"home/.dangling":   "nowhere",
		"home/.local/conf": "../.config",
	} {
		if err := os.Symlink(target, mk(link)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		mk("home/.config/gh/hosts.yml"),
		mk("home/.aws/credentials"),
		mk("home/.chain/credentials"),
		mk("home/.netrc"),
		mk("home/.local/conf/gh"),
		mk("home/.dangling"),
		mk("home/.missing/x"),
		mk("home/afile/x"),
		mk("home/.aws/missing"),
	}
	got, err := realPaths(paths)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			want[r] = true
		}
	}
	if len(got) != len(want) || len(want) != 4 {
		t.Errorf("got %v\nwant %v (4 real paths)", got, want)
	}
	for p := range want {
		if !got[p] {
			t.Errorf("%s missing from %v", p, got)
		}
	}
}
