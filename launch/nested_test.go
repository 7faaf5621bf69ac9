package launch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// TestNestedBuild: a nested launch takes every secret from the environment
// it was given, whatever source the policy names; it opens no store and
// runs no helper, and a secret it was not given is an error naming it.
// The same launch unnested (the control) uses the store and the helper.
func TestNestedBuild(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "helper-ran")
	src := "version: 1\nsecrets:\n" +
		"  STORED: {from: store}\n" +
		"  HELPED: {from: command, command: [/bin/sh, -c, 'touch " + ran + "; echo helped-value']}\n" +
		"  PLAIN: {from: env}\n"
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		nested  bool
		secrets []string
		parent  []string
		want    map[string]string // the child's values; nil when an error is wanted
		wantErr string            // the key the error names
		opened  bool              // the store was opened
		helped  bool              // the helper ran
	}{
		{name: "control: store", secrets: []string{"STORED"}, want: map[string]string{"STORED": "store-value"}, opened: true},
		{name: "control: helper", secrets: []string{"HELPED"}, want: map[string]string{"HELPED": "helped-value"}, helped: true},
		{name: "nested: store", nested: true, secrets: []string{"STORED"}, wantErr: "STORED"},
		{name: "nested: helper", nested: true, secrets: []string{"HELPED"}, wantErr: "HELPED"},
		{name: "nested: env", nested: true, secrets: []string{"PLAIN"}, wantErr: "PLAIN"},
		{name: "nested: undeclared", nested: true, secrets: []string{"OTHER"}, wantErr: "OTHER"},
		{name: "nested: given", nested: true, secrets: []string{"STORED", "HELPED", "PLAIN"},
			parent: []string{"STORED=handed-1", "HELPED=handed-2", "PLAIN=handed-3"},
			want:   map[string]string{"STORED": "handed-1", "HELPED": "handed-2", "PLAIN": "handed-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(ran)
			opened := false
			h := &launch.Host{HelperEnv: []string{"PATH=/usr/bin:/bin"}, Store: func() (secret.Source, error) {
				opened = true
				return secret.Env{"STORED=store-value"}, nil
			}}
			if tc.nested {
				h.Nested = "a test"
			}
			parent := append([]string{"PATH=/usr/bin:/bin"}, tc.parent...)
			l, err := launch.Build(context.Background(), h, launch.Options{Policy: p, Parent: parent,
				Request: sieve.Request{Commands: [][]string{{"true"}}, Secrets: tc.secrets}})
			if opened != tc.opened {
				t.Errorf("store opened: %v, want %v", opened, tc.opened)
			}
			if _, err := os.Stat(ran); (err == nil) != tc.helped {
				t.Errorf("helper ran: %v, want %v", err == nil, tc.helped)
			}
			if tc.want == nil {
				var fe *launch.FetchError
				if !errors.As(err, &fe) || fe.Name != tc.wantErr || !errors.Is(err, launch.ErrNested) {
					t.Fatalf("err = %v, want a FetchError naming %s with ErrNested", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Cleanup()
			for k, v := range tc.want {
				if !slices.Contains(l.Env, k+"="+v) {
					t.Errorf("the child has no %s from the expected source", k)
				}
			}
		})
	}
}

// TestMarker: every environment a launch builds carries ENVSIEVE_TREE=1,
// once, whatever the parent held; the engine's result is not changed.
func TestMarker(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nallow: [ENVSIEVE_TREE, ZZ]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, parent := range [][]string{
		{"PATH=/bin"},
		{"PATH=/bin", "ENVSIEVE_TREE=0", "ZZ=1"},
		{"ENVSIEVE_TREE="},
	} {
		var built *sieve.Result
		l, err := launch.Build(context.Background(), &launch.Host{}, launch.Options{Policy: p, Parent: parent,
			Builder: func(in sieve.Input) (*sieve.Result, error) {
				res, err := sieve.Build(in)
				built = res
				return res, err
			}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, kv := range l.Env {
			if strings.HasPrefix(kv, "ENVSIEVE_TREE=") {
				n++
				if kv != "ENVSIEVE_TREE=1" {
					t.Errorf("parent %q: marker %q", parent, kv)
				}
			}
		}
		if n != 1 {
			t.Errorf("parent %q: %d markers in %q", parent, n, l.Env)
		}
		if !slices.IsSorted(l.Env) && slices.IsSorted(built.Env) {
			t.Errorf("the marker broke the order: %q", l.Env)
		}
		for _, kv := range built.Env {
			if kv == "ENVSIEVE_TREE=1" {
				t.Errorf("the engine's result was changed")
			}
		}
		l.Cleanup()
	}
}
