package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/sieve"
)

// warnings records a launch's warnings.
type warnings []string

func (w *warnings) Debugf(string, ...any)            {}
func (w *warnings) Warnf(format string, args ...any) { *w = append(*w, fmt.Sprintf(format, args...)) }

// TestWritePlaces: the places a sealed tree writes are named by HOME even
// when the working directory is found by HOME's real path (a HOME that is
// a link); every tool's cache is one, made only when the tool is on the
// tree's PATH; a place at or in envsieve's config dir, or HOME itself, is left
// out with a warning; one outside HOME is left out quietly.
func TestWritePlaces(t *testing.T) {
	top := t.TempDir()
	real := filepath.Join(top, "real-home")
	home := filepath.Join(top, "home")
	bin := filepath.Join(top, "bin")
	for _, d := range []string{real + "/proj", bin} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(real, home)
	os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\n"), 0o755)
	base := seal.Default(home, filepath.Join(home, ".config/envsieve"), filepath.Join(home, ".local/share/envsieve"), nil)
	for _, tt := range []struct {
		name, wd  string
		sealWrite []string
		want      []string
		warn      string
	}{
		{name: "by the real path", wd: real + "/proj",
			want: []string{home + "/proj", home + "/.cache", home + "/.npm", home + "/extra"}, sealWrite: []string{"~/extra", "/srv/out"}},
		{name: "HOME itself", wd: real, want: []string{home + "/.cache", home + "/.npm"}, warn: "the working directory is HOME"},
		{name: "in the config dir", wd: top, sealWrite: []string{"~/.config/envsieve/x"},
			want: []string{home + "/.cache", home + "/.npm"}, warn: "seal.write ~/.config/envsieve/x is HOME or at or in a sealed path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(tt.wd)
			var w warnings
			l := &Plan{host: &Host{Home: home, Report: &w}, Env: []string{"PATH=" + bin, "TMPDIR=/var/tmp"},
				Result: &sieve.Result{SealWrite: tt.sealWrite}}
			got, err := l.writePlaces(base)
			if err != nil {
				t.Fatal(err)
			}
			// Every cache is a place; only those of the tools on PATH
			// are made (below).
			for _, c := range []string{"/.cache", "/.npm", "/go/pkg/mod", "/.cargo/registry", "/.cargo/git"} {
				if !slices.Contains(tt.want, home+c) {
					tt.want = append(tt.want, home+c)
				}
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("write places %q, want %q", got, tt.want)
			}
			if joined := strings.Join(w, "\n"); (tt.warn == "") != (joined == "") || !strings.Contains(joined, tt.warn) {
				t.Errorf("warnings %q, want one containing %q", w, tt.warn)
			}
			for _, d := range []string{".cache", ".npm"} {
				if _, err := os.Stat(filepath.Join(real, d)); err != nil {
					t.Errorf("%s was not made: %v", d, err)
				}
			}
			for _, d := range []string{"go", ".cargo", ".config/envsieve/x"} {
				if _, err := os.Stat(filepath.Join(real, d)); err == nil {
					t.Errorf("%s was made", d)
				}
			}
		})
	}
}

func TestAtOrIn(t *testing.T) {
	for _, tc := range []struct {
		p     string
		paths []string
		want  bool
	}{
		{"/a/b", []string{"/a"}, true},
		{"/a", []string{"/a"}, true},
		{"/a", []string{"/a/"}, true}, // cleaned
		{"/ab", []string{"/a"}, false},
		{"/a", []string{"/a/b"}, false},
		{"/x/y", []string{"/z", "/"}, true},
		{"/x/y", []string{"/x/./y/"}, true},
		{"/x/y", nil, false},
	} {
		if got := atOrIn(tc.p, tc.paths); got != tc.want {
			t.Errorf("atOrIn(%q, %q) = %v, want %v", tc.p, tc.paths, got, tc.want)
		}
	}
}
