package sieve_test

import (
	"errors"
	"testing"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestNilPolicy checks that a nil policy is ErrNilPolicy, whether the
// Input's interface is nil or holds a nil *policy.Policy.
func TestNilPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    sieve.Policy
	}{
		{"nil interface", nil},
		{"nil *policy.Policy", (*policy.Policy)(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sieve.Build(sieve.Input{Parent: []string{"PATH=/bin"}, Policy: tc.p})
			if !errors.Is(err, sieve.ErrNilPolicy) {
				t.Errorf("Build = %v, want ErrNilPolicy", err)
			}
		})
	}
}
