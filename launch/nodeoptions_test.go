package launch

import "testing"

// TestNodeOptions: the broker's node option is added to a NODE_OPTIONS
// the policy passes, never replacing it, and left out beside
// --use-bundled-ca, which node refuses with it.
func TestNodeOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		set  map[string]string
		want string // "" means NODE_OPTIONS is not in set
	}{
		{name: "the broker sets none", env: []string{"NODE_OPTIONS=--max-old-space-size=4096"}, set: map[string]string{}},
		{name: "the child has none", env: []string{"PATH=/bin"}, set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"},
			want: "--use-openssl-ca"},
		{name: "the child's is empty", env: []string{"NODE_OPTIONS="}, set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"},
			want: "--use-openssl-ca"},
		{name: "the user's options stay first", env: []string{"NODE_OPTIONS=--max-old-space-size=4096"},
			set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"}, want: "--max-old-space-size=4096 --use-openssl-ca"},
		{name: "named already", env: []string{"NODE_OPTIONS=--use-openssl-ca"}, set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"},
			want: "--use-openssl-ca"},
		{name: "the bundled store asked for", env: []string{"NODE_OPTIONS=--use-bundled-ca --trace-warnings"},
			set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"}, want: "--use-bundled-ca --trace-warnings"},
		{name: "the first of two", env: []string{"NODE_OPTIONS=--a", "NODE_OPTIONS=--b"},
			set: map[string]string{"NODE_OPTIONS": "--use-openssl-ca"}, want: "--a --use-openssl-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodeOptions(tc.env, tc.set)
			got, ok := tc.set["NODE_OPTIONS"]
			if tc.want == "" && ok {
				t.Fatalf("NODE_OPTIONS set to %q", got)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("NODE_OPTIONS %q, want %q", got, tc.want)
			}
		})
	}
}
