package sieve_test

import (
	"errors"
	"testing"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestNilPolicy checks that a nil policy is ErrNilPolicy, whether the
// Input's Policy is nil or holds a nil *policy.Policy.
func TestNilPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   sieve.Input
	}{
		{"nil interface", sieve.Input{Parent: []string{"PATH=/bin"}}},
		{"nil *policy.Policy", sieve.Input{Parent: []string{"PATH=/bin"}, Policy: (*policy.Policy)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sieve.Build(tc.in)
			if !errors.Is(err, sieve.ErrNilPolicy) {
				t.Errorf("Build = %v, want ErrNilPolicy", err)
			}
		})
	}
}
