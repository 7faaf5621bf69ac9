package proc

import (
	"slices"
	"testing"
)

// TestInitEnv: an init's environment is the program's with LD_PRELOAD set
// aside, and none of the inits' own variables from the caller: the
// launcher adds its own after.
func TestInitEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"empty", []string{}, []string{}},
		{"kept", []string{"PATH=/bin", "HOME=/h"}, []string{"PATH=/bin", "HOME=/h"}},
		{"preload", []string{"LD_PRELOAD=/lib/x.so", "A=1"}, []string{initPreload + "/lib/x.so", "A=1"}},
		{"the caller's init variables", []string{"A=1", "ENVSIEVE_INIT_PARENT=1", InitSeal + "m /x",
			"ENVSIEVE_INIT_LANDLOCK=3", initPreload + "/evil.so", "ENVSIEVE_INITX=kept", "B=2"},
			[]string{"A=1", "ENVSIEVE_INITX=kept", "B=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InitEnv(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("InitEnv(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}
