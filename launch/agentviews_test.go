//go:build unix

package launch

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoginViewSyncBack: what the tree does at the top level of an
// agent's view reaches the state dir at the end of the launch, unless the
// user's own agent changed that entry meanwhile; the login file never
// does, nothing is followed, and the view is removed.
func TestLoginViewSyncBack(t *testing.T) {
	type step func(t *testing.T, state, view string)
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		tree  step // what the tree does in the view
		user  step // what the user does in the state dir meanwhile
		want  map[string]string
		left  []string
		links map[string]string // state's entries that must be links, to these
		gone  []string          // state's entries that must be gone
	}{
		{name: "untouched", want: map[string]string{"settings.json": "s0", "sub/f": "f0", ".credentials.json": "REAL"}},
		{
			name: "a new file and a new directory",
			tree: func(t *testing.T, _, v string) {
				write(filepath.Join(v, "history.jsonl"), "h")
				os.Mkdir(filepath.Join(v, "projects"), 0o700)
				write(filepath.Join(v, "projects", "p"), "p")
			},
			want: map[string]string{"history.jsonl": "h", "projects/p": "p", "settings.json": "s0"},
		},
		{
			name: "a file replaced by rename, and one written through its link",
			tree: func(t *testing.T, _, v string) {
				write(filepath.Join(v, "tmp"), "s1")
				os.Rename(filepath.Join(v, "tmp"), filepath.Join(v, "settings.json"))
				write(filepath.Join(v, "sub", "f"), "f1")
			},
			want: map[string]string{"settings.json": "s1", "sub/f": "f1"},
		},
		{
			name: "the user changed it meanwhile: theirs wins",
			tree: func(t *testing.T, _, v string) {
				write(filepath.Join(v, "tmp"), "tree")
				os.Rename(filepath.Join(v, "tmp"), filepath.Join(v, "settings.json"))
				write(filepath.Join(v, "new"), "tree")
			},
			user: func(t *testing.T, s, _ string) {
				time.Sleep(10 * time.Millisecond)
				write(filepath.Join(s, "settings.json.tmp"), "user")
				os.Rename(filepath.Join(s, "settings.json.tmp"), filepath.Join(s, "settings.json"))
				write(filepath.Join(s, "new"), "user")
			},
			want: map[string]string{"settings.json": "user", "new": "user"},
			left: []string{"new", "settings.json"},
		},
		{
			name: "the login file never moves",
			tree: func(t *testing.T, _, v string) {
				write(filepath.Join(v, "tmp"), "tree's fake")
				os.Rename(filepath.Join(v, "tmp"), filepath.Join(v, ".credentials.json"))
			},
			want: map[string]string{".credentials.json": "REAL"},
		},
		{
			name: "a link the tree made moves as a link",
			tree: func(t *testing.T, s, v string) {
				os.Symlink(filepath.Join(s, ".credentials.json"), filepath.Join(v, "evil"))
			},
			links: map[string]string{"evil": ".credentials.json"},
		},
		{
			name: "a file does not replace a directory",
			tree: func(t *testing.T, _, v string) {
				os.Remove(filepath.Join(v, "sub"))
				write(filepath.Join(v, "sub"), "file")
			},
			want: map[string]string{"sub/f": "f0"},
			left: []string{"sub"},
		},
		{
			name: "a file the tree deletes is deleted",
			tree: func(t *testing.T, _, v string) {
				os.Remove(filepath.Join(v, "settings.json"))
				os.Remove(filepath.Join(v, "big"))
			},
			want: map[string]string{"sub/f": "f0"},
			gone: []string{"settings.json", "big"},
		},
		{
			name: "a file the tree deletes and the user changed meanwhile stays",
			tree: func(t *testing.T, _, v string) {
				os.Remove(filepath.Join(v, "settings.json"))
			},
			user: func(t *testing.T, s, _ string) {
				time.Sleep(10 * time.Millisecond)
				write(filepath.Join(s, "settings.json.tmp"), "user")
				os.Rename(filepath.Join(s, "settings.json.tmp"), filepath.Join(s, "settings.json"))
			},
			want: map[string]string{"settings.json": "user"},
			left: []string{"settings.json"},
		},
		{
			name: "a directory and the login are never deleted",
			tree: func(t *testing.T, _, v string) {
				os.Remove(filepath.Join(v, "sub"))
				os.Remove(filepath.Join(v, ".credentials.json"))
			},
			want: map[string]string{"sub/f": "f0", ".credentials.json": "REAL"},
			left: []string{"sub"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), ".claude")
			os.MkdirAll(filepath.Join(state, "sub"), 0o700)
			write(filepath.Join(state, ".credentials.json"), "REAL")
			write(filepath.Join(state, "settings.json"), "s0")
			write(filepath.Join(state, "sub", "f"), "f0")
			write(filepath.Join(state, "big"), strings.Repeat("b", viewCopyMax+1)) // linked, not copied
			v, err := makeView(agentViews["claude-credentials"], state, ".credentials.json", []byte("FAKE"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(v.dir, ".credentials.json")); err != nil || string(b) != "FAKE" {
				t.Fatalf("the view's login file: %q, %v", b, err)
			}
			if b, _ := os.ReadFile(filepath.Join(v.dir, "settings.json")); string(b) != "s0" {
				t.Fatalf("the view does not show the state dir's entries: %q", b)
			}
			if tc.tree != nil {
				tc.tree(t, state, v.dir)
			}
			if tc.user != nil {
				tc.user(t, state, v.dir)
			}
			left := v.syncBack()
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("left %v, want %v", left, tc.left)
			}
			for rel, want := range tc.want {
				if b, err := os.ReadFile(filepath.Join(state, rel)); err != nil || string(b) != want {
					t.Errorf("%s: %q (%v), want %q", rel, b, err, want)
				}
			}
			for rel, to := range tc.links {
				if got, err := os.Readlink(filepath.Join(state, rel)); err != nil || filepath.Base(got) != to {
					t.Errorf("%s: link to %q (%v), want one to %s", rel, got, err, to)
				}
			}
			for _, rel := range tc.gone {
				if _, err := os.Lstat(filepath.Join(state, rel)); err == nil {
					t.Errorf("%s: not deleted", rel)
				}
			}
			ents, _ := os.ReadDir(state)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), viewPrefix) {
					t.Errorf("the view %s is left", e.Name())
				}
			}
		})
	}
}

// TestLoginViewStale: a view whose launcher was killed (SIGKILL: nothing
// ran to remove it) is removed, lock and all, by the next view made in
// that state dir; the view of a launcher still running is left as it is.
func TestLoginViewStale(t *testing.T) {
	if state := os.Getenv("ENVSIEVE_TEST_VIEW_STATE"); state != "" {
		// The launcher to be killed: makes its view and waits.
		if _, err := makeView(agentViews["codex-auth"], state, "auth.json", []byte("FAKE"), nil); err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString("made\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	state := filepath.Join(t.TempDir(), ".codex")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "config.toml"), []byte("x"), 0o600)
	live, err := makeView(agentViews["codex-auth"], state, "auth.json", []byte("FAKE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.syncBack()
	// A view made by an envsieve before locks: whose it is cannot be told.
	old := filepath.Join(state, viewPrefix+"old")
	os.Mkdir(old, 0o700)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoginViewStale$")
	cmd.Env = append(os.Environ(), "ENVSIEVE_TEST_VIEW_STATE="+state)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "made\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the launcher did not make its view: %q", line)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	views := func() []string {
		var out []string
		ents, _ := os.ReadDir(state)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), viewPrefix) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if got := views(); len(got) != 5 {
		t.Fatalf("before: %v, want the live view, the killed one, their locks and the old one", got)
	}
	next, err := makeView(agentViews["codex-auth"], state, "auth.json", []byte("FAKE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Base(live.root), filepath.Base(live.lock), filepath.Base(next.root), filepath.Base(next.lock), filepath.Base(old)}
	slices.Sort(want)
	if got := views(); !slices.Equal(got, want) {
		t.Errorf("after the next view: %v, want %v", got, want)
	}
	next.syncBack()
	if b, err := os.ReadFile(filepath.Join(live.dir, "auth.json")); err != nil || string(b) != "FAKE" {
		t.Errorf("the live view's login: %q, %v", b, err)
	}
}

// TestLoginViewMasked: a file of the state dir that the seal masks (a
// policy's seal.mask) is linked in the view, not copied: the link leads to
// the mask, a copy would not be masked.
func TestLoginViewMasked(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".claude")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "mcp-secrets.json"), []byte("SECRET"), 0o600)
	os.WriteFile(filepath.Join(state, "settings.json"), []byte("{}"), 0o600)
	v, err := makeView(agentViews["claude-credentials"], state, ".credentials.json", nil, []string{filepath.Join(state, "mcp-secrets.json")})
	if err != nil {
		t.Fatal(err)
	}
	defer v.syncBack()
	if fi, err := os.Lstat(filepath.Join(v.dir, "mcp-secrets.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("a masked file is not a link in the view: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(v.dir, "settings.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a small file is not copied: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(v.dir, ".credentials.json")); err == nil {
		t.Error("a view with no fake holds a login file")
	}
}

// TestLoginViewHomeReplaced: the tree replaces the state dir in Gemini
// CLI's view (below the view's root, its own) by a link to another
// directory: nothing of that directory moves into the state dir (where the
// next session's tree could read it), and it is left as it was.
func TestLoginViewHomeReplaced(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, ".gemini")
	secret := filepath.Join(base, ".ssh")
	os.MkdirAll(state, 0o700)
	os.MkdirAll(secret, 0o700)
	os.WriteFile(filepath.Join(secret, "id_ed25519"), []byte("KEY"), 0o600)
	v, err := makeView(agentViews["gemini-oauth"], state, "oauth_creds.json", []byte("FAKE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(v.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, v.dir); err != nil {
		t.Fatal(err)
	}
	v.syncBack()
	if _, err := os.Lstat(filepath.Join(state, "id_ed25519")); err == nil {
		t.Fatal("a file of the link's target moved into the state dir")
	}
	if b, err := os.ReadFile(filepath.Join(secret, "id_ed25519")); err != nil || string(b) != "KEY" {
		t.Fatalf("the link's target changed: %q, %v", b, err)
	}
	if _, err := os.Lstat(v.root); err == nil {
		t.Error("the view is left")
	}
}

// TestLoginViewHome: Gemini CLI's variable names a home: the view holds
// the state dir under its own name.
func TestLoginViewHome(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".gemini")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "settings.json"), []byte("{}"), 0o600)
	v, err := makeView(agentViews["gemini-oauth"], state, "oauth_creds.json", []byte("FAKE"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.syncBack()
	if b, err := os.ReadFile(filepath.Join(v.envValue(), ".gemini", "oauth_creds.json")); err != nil || string(b) != "FAKE" {
		t.Errorf("GEMINI_CLI_HOME/.gemini/oauth_creds.json: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(v.envValue(), ".gemini", "settings.json")); err != nil || string(b) != "{}" {
		t.Errorf("GEMINI_CLI_HOME/.gemini/settings.json: %q, %v", b, err)
	}
}

// BenchmarkLoginView is what an agent's login costs a launch: the view
// of a state dir of 25 entries with the fake in it, and its removal.
func BenchmarkLoginView(b *testing.B) {
	base := b.TempDir()
	if d := os.Getenv("VIEW_BENCH_DIR"); d != "" {
		base, _ = os.MkdirTemp(d, "vb")
		defer os.RemoveAll(base)
	}
	state := filepath.Join(base, ".claude")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, ".credentials.json"), []byte("REAL"), 0o600)
	for i := range 24 {
		os.WriteFile(filepath.Join(state, "e"+string(rune('a'+i))), nil, 0o600)
	}
	fake := []byte(strings.Repeat("x", 400))
	for _, part := range []string{"make", "make+sync"} {
		b.Run(part, func(b *testing.B) {
			for b.Loop() {
				v, err := makeView(agentViews["claude-credentials"], state, ".credentials.json", fake, nil)
				if err != nil {
					b.Fatal(err)
				}
				if part == "make" {
					b.StopTimer()
				}
				v.syncBack()
				b.StartTimer()
			}
		})
	}
}
