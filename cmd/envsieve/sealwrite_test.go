//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// sealedLauncher is an envsieve an unprivileged user runs, with a HOME of
// that user's, sealing by Landlock (under a filter that refuses user
// namespaces) or by namespaces, whose init is envsieve itself or, with
// cInit, envsieve-init.
type sealedLauncher struct {
	t         *testing.T
	exe, home string
	wrap, env []string
}

func newSealedLauncher(t *testing.T, landlock, cInit bool) *sealedLauncher {
	exe, home := unprivilegedCopy(t, "envsieve")
	s := &sealedLauncher{t: t, exe: exe, home: home}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		s.wrap = []string{noNS}
	}
	s.env = []string{"PATH=" + filepath.Dir(goTool(t)) + ":/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_DEBUG=1"}
	if cInit {
		s.env = append(s.env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
	}
	return s
}

// goTool is the go command of this test run.
func goTool(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs a real go build: %v", err)
	}
	return p
}

// warmGoCache is a go build cache holding the standard library as the
// sealed trees' go build compiles it (their environment), made once: each
// test HOME's ~/.cache/go-build starts as a copy, so that a tree's build
// writes only its own package there, in seconds.
var warmGoCache = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "envsieve-gocache-")
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/x\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
	cmd.Dir = src
	cmd.Env = []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + dir, "GOCACHE=" + filepath.Join(dir, "go-build")}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("warm the go build cache: %v\n%s", err, out)
	}
	return filepath.Join(dir, "go-build"), nil
})

// seedGoCache copies the warm build cache to HOME's ~/.cache/go-build.
func (s *sealedLauncher) seedGoCache() {
	s.t.Helper()
	warm, err := warmGoCache()
	if err != nil {
		s.t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.home, ".cache"), 0o700)
	if out, err := exec.Command("cp", "-a", warm, filepath.Join(s.home, ".cache", "go-build")).CombinedOutput(); err != nil {
		s.t.Fatalf("copy the go build cache: %v\n%s", err, out)
	}
	s.chown()
}

// command is envsieve with args, run as the unprivileged user in dir.
func (s *sealedLauncher) command(dir string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.wrap...), s.exe), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{}, s.env...)
	cmd.Dir = dir
	cmd.SysProcAttr = asUnprivileged()
	return cmd
}

// write makes the files of HOME (relative names) with their bodies, owned
// by the unprivileged user.
func (s *sealedLauncher) write(files map[string]string) {
	for f, body := range files {
		p := filepath.Join(s.home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	s.chown()
}

func (s *sealedLauncher) chown() {
	if os.Getuid() == 0 {
		filepath.Walk(s.home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
}

// probe runs each shell command of cmds in the tree of envsieve run with
// args, from dir, and says which succeeded.
func (s *sealedLauncher) probe(dir string, args []string, cmds []string) (map[string]bool, string) {
	s.t.Helper()
	var b strings.Builder
	for i, c := range cmds {
		fmt.Fprintf(&b, "if (%s) >/dev/null 2>&1; then echo ok-%d; else echo no-%d; fi\n", c, i, i)
	}
	cmd := s.command(dir, append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c", b.String())...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("probe %v: %v\n%s", args, err, out)
	}
	res := map[string]bool{}
	for i, c := range cmds {
		res[c] = strings.Contains(string(out), fmt.Sprintf("ok-%d\n", i))
	}
	return res, string(out)
}

// TestSealWrites plays an agent that plants what runs later outside
// envsieve: a line in ~/.bashrc (an ENVSIEVE_POLICY for the next launch),
// new dotfiles, git and ssh config, a user unit, a program early in PATH,
// an autostart entry. Sealed, none of it can be written, existing or not;
// the tree's work still can (its working directory, a state dir, the
// caches, TMPDIR, a seal.write path), and real go build, git commit and
// npm install work in it. Unsealed (the control) every write works. Once
// by each mechanism and each init.
func TestSealWrites(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testSealWrites(t, false, false) })
	t.Run("namespaces, the C init", func(t *testing.T) { testSealWrites(t, false, true) })
	t.Run("landlock", func(t *testing.T) { testSealWrites(t, true, false) })
}

func testSealWrites(t *testing.T, landlock, cInit bool) {
	s := newSealedLauncher(t, landlock, cInit)
	s.env = append(s.env, "TMPDIR="+filepath.Join(s.home, "tmp"))
	s.write(map[string]string{
		".bashrc": "# the user's\n", ".ssh/known_hosts": "", ".config/user-dirs.dirs": "", ".local/share/x": "",
		"tmp/.keep": "", "proj/README": "work\n",
		"policy.yaml": "version: 1\nprofiles:\n" +
			"  agent: {seal: {mode: on, write: [~/extra-write]}, state_dirs: [~/.agentstate]}\n" +
			"  plain: {state_dirs: [~/.agentstate]}\n",
	})
	s.seedGoCache()
	policy := []string{"--policy", filepath.Join(s.home, "policy.yaml")}
	work := filepath.Join(s.home, "proj")
	plant := `echo 'export ENVSIEVE_POLICY=/tmp/evil.yaml' >> "$HOME/.bashrc"`
	denied := []string{
		plant,
		`echo x > "$HOME/.zshenv"`,
		`echo x > "$HOME/.profile"`,
		`echo x > "$HOME/.gitconfig"`,
		`echo 'Host *' > "$HOME/.ssh/config"`,
		`mkdir -p "$HOME/.config/systemd/user" && echo x > "$HOME/.config/systemd/user/x.service"`,
		`mkdir -p "$HOME/.local/bin" && echo x > "$HOME/.local/bin/gh"`,
		`mkdir -p "$HOME/.config/autostart" && echo x > "$HOME/.config/autostart/x.desktop"`,
		`rm "$HOME/.ssh/known_hosts"`,
	}
	allowed := []string{
		`echo x > "$PWD/new" && rm "$PWD/new"`,
		`echo x > "$HOME/.agentstate/f"`,
		`echo x > "$HOME/.cache/f"`,
		`echo x > "$TMPDIR/f"`,
		`echo x > "$HOME/extra-write/f"`,
		`cat "$HOME/.bashrc" "$HOME/.ssh/known_hosts"`,
		`go mod init example.com/x && printf 'package main\n\nfunc main() { println("built") }\n' > main.go && go build -o built . && ./built`,
		`git init -q && git add README main.go && git -c user.name=a -c user.email=a@b.invalid commit -qm first`,
		`mkdir -p dep && echo '{"name":"dep","version":"1.0.0"}' > dep/package.json && ` +
			`echo '{"name":"app","version":"1.0.0","dependencies":{"dep":"file:./dep"}}' > package.json && ` +
			`npm install --offline --no-audit --no-fund && test -e node_modules/dep/package.json`,
	}
	sealedDenied, out := s.probe(work, append(policy, "--profile", "agent"), denied)
	mech := "seal: namespaces;"
	if landlock {
		mech = "seal: landlock;"
	}
	if !strings.Contains(out, mech) {
		t.Errorf("the seal was not made by %q:\n%s", mech, out)
	}
	for _, c := range denied {
		if sealedDenied[c] {
			t.Errorf("sealed, the tree could: %s", c)
		}
	}
	// The plant across two launches: the next shell outside finds no
	// policy named in ~/.bashrc.
	next := func() *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", `. "$HOME/.bashrc"; echo "policy=${ENVSIEVE_POLICY:-none}"`)
		cmd.Env = []string{"HOME=" + s.home, "PATH=/usr/bin:/bin"}
		return cmd
	}
	if got, err := next().CombinedOutput(); err != nil || !strings.Contains(string(got), "policy=none") {
		t.Errorf("after a sealed launch, the user's next shell reads: %q (%v)", got, err)
	}
	sealedAllowed, out := s.probe(work, append(policy, "--profile", "agent"), allowed)
	for _, c := range allowed {
		if !sealedAllowed[c] {
			t.Errorf("sealed, the tree could not: %s\n%s", c, out)
		}
	}
	// The places it made for the tree, and none it should not.
	for _, d := range []string{".agentstate", "extra-write", "go/pkg/mod"} {
		if _, err := os.Stat(filepath.Join(s.home, d)); err != nil {
			t.Errorf("the sealed launch did not make %s: %v", d, err)
		}
	}
	// npm is on the tree's PATH, cargo is not.
	if _, err := os.Stat(filepath.Join(s.home, ".npm")); err != nil {
		t.Errorf("the sealed launch did not make ~/.npm for npm: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.home, ".cargo")); err == nil {
		t.Errorf("the sealed launch made ~/.cargo, with no cargo on the tree's PATH")
	}
	control, out := s.probe(work, append(policy, "--profile", "plain"), denied)
	for _, c := range denied {
		if !control[c] {
			t.Errorf("control: unsealed, the tree could not: %s\n%s", c, out)
		}
	}
	if got, _ := next().CombinedOutput(); !strings.Contains(string(got), "policy=/tmp/evil.yaml") {
		t.Errorf("control: unsealed, the plant should reach the next shell: %q", got)
	}
}

// TestSealReadOnlyHome: a HOME envsieve cannot write (Nix, a read-only
// container, CI: here one owned by another user, read-only) still seals
// an agent profile's launch: nothing needs making, the credential file is
// masked, the tree works in its working directory. Once by each mechanism
// and init.
func TestSealReadOnlyHome(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatalf("this test makes a HOME the unprivileged user cannot write, and needs root")
	}
	for _, tc := range []struct {
		name            string
		landlock, cInit bool
	}{{"namespaces", false, false}, {"namespaces, the C init", false, true}, {"landlock", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSealedLauncher(t, tc.landlock, tc.cInit)
			canary := "ro-home-canary-" + strings.Repeat("5e", 6)
			s.write(map[string]string{".aws/credentials": canary + "\n", "notes.txt": "ordinary\n"})
			work := filepath.Join(filepath.Dir(s.exe), "work")
			os.Mkdir(work, 0o700)
			os.Chown(work, 65534, 65534)
			// HOME and all in it the root's, readable, not writable.
			filepath.Walk(s.home, func(p string, fi os.FileInfo, _ error) error {
				os.Lchown(p, 0, 0)
				if fi.IsDir() {
					return os.Chmod(p, 0o555)
				}
				return os.Chmod(p, 0o444)
			})
			t.Cleanup(func() {
				filepath.Walk(s.home, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) })
			})
			cmd := s.command(work, "run", "--no-shim", "--profile", "claude", "--", "/bin/sh", "-c",
				`cat "$HOME/.aws/credentials" "$HOME/notes.txt"; echo x > "$PWD/f" && echo work-written`)
			out, err := cmd.CombinedOutput()
			got := strings.ReplaceAll(string(out), canary, "<canary>")
			if err != nil {
				t.Fatalf("a sealed launch with a read-only HOME: %v\n%s", err, got)
			}
			if strings.Contains(string(out), canary) || !strings.Contains(got, "ordinary") || !strings.Contains(got, "work-written") {
				t.Errorf("with a read-only HOME: the credential read, or the notes or the work dir not usable:\n%s", got)
			}
			if !strings.Contains(got, "seal: ") || strings.Contains(got, "warning") {
				t.Errorf("not sealed, or a warning for what is expected of a read-only HOME:\n%s", got)
			}
		})
	}
}

// TestSealMasksHold plays the user at work while a sealed tree runs and
// polls two masked files: outside the tree the user replaces
// ~/.aws/credentials by a rename, deletes it and makes it anew, renames
// ~/.aws and makes a new one in its place, and the real git credential
// store (credential.helper=store) stores a credential again (a lock file
// renamed over ~/.git-credentials). The tree never reads the new content.
// Unsealed (the control) it reads all of it. HOME is outside the temp
// directory, as a user's is. Once by each mechanism and init.
func TestSealMasksHold(t *testing.T) {
	for _, tc := range []struct {
		name            string
		landlock, cInit bool
	}{{"namespaces", false, false}, {"namespaces, the C init", false, true}, {"landlock", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSealedLauncher(t, tc.landlock, tc.cInit)
			top, err := os.MkdirTemp("/var/tmp", "envsieve-maskhold-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(top) })
			os.Chmod(top, 0o755)
			s.home = filepath.Join(top, "home")
			os.Mkdir(s.home, 0o700)
			s.env = append(s.env, "HOME="+s.home) // the later HOME wins
			s.write(map[string]string{".aws/credentials": "old\n", ".aws/config": "[default]\n",
				".git-credentials": "https://u:old@example.com\n", "proj/.keep": ""})
			for _, sealed := range []bool{true, false} {
				got := s.pollDuringWork(sealed, filepath.Join(s.home, "proj"))
				for i := 1; i <= 4; i++ {
					canary := fmt.Sprintf("mask-canary-%d", i)
					if sealed && strings.Contains(got, canary) {
						t.Errorf("sealed, the running tree read the new content of step %d:\n%s", i, got)
					}
					if !sealed && !strings.Contains(got, canary) {
						t.Errorf("control: unsealed, the tree should read the new content of step %d:\n%s", i, got)
					}
				}
			}
		})
	}
}

// pollDuringWork starts a tree (sealed or not) that prints both masked
// files every 20 ms, does the user's four steps outside it as the same
// user, and returns what the tree printed.
func (s *sealedLauncher) pollDuringWork(sealed bool, work string) string {
	t := s.t
	stop := filepath.Join(work, "stop")
	os.Remove(stop)
	args := []string{"run", "--no-shim"}
	if sealed {
		args = append(args, "--seal")
	}
	poll := `echo ready; while [ ! -e "$0" ]; do cat "$HOME/.aws/credentials" "$HOME/.git-credentials" 2>/dev/null; sleep 0.02; done; echo done`
	cmd := s.command(work, append(args, "--", "/bin/sh", "-c", poll, stop)...)
	var out strings.Builder
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	lines := make(chan string, 1024)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				lines <- string(b[:n])
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	var seen strings.Builder
	for !strings.Contains(seen.String(), "ready") {
		chunk, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("the tree did not start:\n%s\n%s", seen.String(), out.String())
		}
		seen.WriteString(chunk)
	}
	steps := []string{
		`printf 'mask-canary-1\n' > "$HOME/new" && mv "$HOME/new" "$HOME/.aws/credentials"`,
		`rm "$HOME/.aws/credentials" && printf 'mask-canary-2\n' > "$HOME/.aws/credentials"`,
		`mv "$HOME/.aws" "$HOME/.aws.old" && mkdir "$HOME/.aws" && printf 'mask-canary-3\n' > "$HOME/.aws/credentials"`,
		`printf 'protocol=https\nhost=example.com\nusername=u\npassword=mask-canary-4\n\n' | git -c credential.helper=store credential approve`,
	}
	for _, step := range steps {
		c := exec.Command("/bin/sh", "-c", step)
		c.Env = []string{"HOME=" + s.home, "PATH=/usr/bin:/bin"}
		c.SysProcAttr = asUnprivileged()
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("outside the tree, %s: %v\n%s", step, err, b)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for chunk := range lines {
		seen.WriteString(chunk)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the polling tree: %v\n%s", err, out.String())
	}
	// Put the files back as they were, for the next run.
	os.RemoveAll(filepath.Join(s.home, ".aws"))
	os.RemoveAll(filepath.Join(s.home, ".aws.old"))
	s.write(map[string]string{".aws/credentials": "old\n", ".aws/config": "[default]\n", ".git-credentials": "https://u:old@example.com\n"})
	return seen.String()
}
