package launch_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// TestDefaultSource: a secret the policy names no source for comes from the
// environment, else (a host with DefaultStore) from the store; from: env
// written out, the daemon's host (no DefaultStore) and a nested launch never
// open the store for it; an empty value is an error naming the secret; an
// env file's value is its name's source.
func TestDefaultSource(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nsecrets:\n  LISTED: {deliver: env}\n  ENVONLY: {from: env}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		secret       string
		parent       []string
		envFile      map[string]string
		defaultStore bool
		nested       bool
		want         string // the child's value; "" when an error is wanted
		from         policy.SecretFrom
		wantErr      error // nil: any error
		opened       bool
	}{
		{name: "unlisted, in the store", secret: "UNLISTED", defaultStore: true, want: "store-unlisted", from: policy.FromStore, opened: true},
		{name: "listed without from, in the store", secret: "LISTED", defaultStore: true, want: "store-listed", from: policy.FromStore, opened: true},
		{name: "the environment first", secret: "LISTED", parent: []string{"LISTED=env-listed"}, defaultStore: true, want: "env-listed", from: policy.FromEnv},
		{name: "from: env is the environment only", secret: "ENVONLY", defaultStore: true},
		{name: "no DefaultStore (the daemon)", secret: "UNLISTED"},
		{name: "nested", secret: "UNLISTED", defaultStore: true, nested: true, wantErr: launch.ErrNested},
		{name: "in neither", secret: "NOWHERE", defaultStore: true, opened: true},
		{name: "empty in the environment", secret: "UNLISTED", parent: []string{"UNLISTED="}, defaultStore: true, wantErr: launch.ErrEmpty},
		{name: "empty in the store", secret: "BLANK", defaultStore: true, wantErr: launch.ErrEmpty, opened: true},
		{name: "an env file's value", secret: "ENVONLY", envFile: map[string]string{"ENVONLY": "file-value"}, parent: []string{"ENVONLY=env-value"}, want: "file-value", from: launch.FromEnvFile},
		{name: "an env file's empty value", secret: "ENVONLY", envFile: map[string]string{"ENVONLY": ""}, wantErr: launch.ErrEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opened := false
			h := &launch.Host{DefaultStore: tc.defaultStore, Store: func() (secret.Source, error) {
				opened = true
				return secret.Env{"UNLISTED=store-unlisted", "LISTED=store-listed", "ENVONLY=store-envonly", "BLANK="}, nil
			}}
			if tc.nested {
				h.Nested = "a test"
			}
			parent := append([]string{"PATH=/usr/bin:/bin"}, tc.parent...)
			l, err := launch.Build(context.Background(), h, launch.Options{Policy: p, Parent: parent, EnvFile: tc.envFile,
				Request: sieve.Request{Commands: [][]string{{"true"}}, Secrets: []string{tc.secret}}})
			if opened != tc.opened {
				t.Errorf("store opened: %v, want %v", opened, tc.opened)
			}
			if tc.want == "" {
				if err == nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Cleanup()
			if !slices.Contains(l.Env, tc.secret+"="+tc.want) {
				t.Errorf("the child has no %s from the expected source", tc.secret)
			}
			if got := l.Decision().Sources[tc.secret]; got != tc.from {
				t.Errorf("source %q, want %q", got, tc.from)
			}
		})
	}
}
