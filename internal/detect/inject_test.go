package detect

import "testing"

func TestInjection(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		// Prefixes.
		{name: "LD_PRELOAD", value: "/tmp/x.so", want: true},
		{name: "LD_LIBRARY_PATH", value: "/opt/lib", want: true},
		{name: "LD_AUDIT", want: true},
		{name: "ld_preload", want: true},
		{name: "DYLD_INSERT_LIBRARIES", want: true},
		{name: "BASH_FUNC_ls%%", value: "() {  echo pwned\n}", want: true},
		{name: "BASH_FUNC_x", want: true},
		{name: "GIT_CONFIG_COUNT", value: "1", want: true},
		{name: "GIT_CONFIG_KEY_0", value: "core.sshCommand", want: true},
		{name: "GIT_CONFIG_PARAMETERS", want: true},
		{name: "GIT_CONFIG_GLOBAL", want: true},
		{name: "LUA_INIT_5_4", want: true},

		// Exact names from docs/design.md.
		{name: "GIT_CONFIG", want: true},
		{name: "BASH_ENV", want: true},
		{name: "ENV", want: true},
		{name: "IFS", want: true},
		{name: "PS4", want: true},
		{name: "SHELLOPTS", want: true},
		{name: "BASHOPTS", want: true},
		{name: "GLOBIGNORE", want: true},
		{name: "PROMPT_COMMAND", want: true},
		{name: "NODE_OPTIONS", want: true},
		{name: "PYTHONSTARTUP", want: true},
		{name: "PYTHONHOME", want: true},
		{name: "PERL5OPT", want: true},
		{name: "RUBYOPT", want: true},
		{name: "JAVA_TOOL_OPTIONS", want: true},
		{name: "_JAVA_OPTIONS", want: true},
		{name: "GCONV_PATH", want: true},
		{name: "Node_Options", want: true},

		// Added names.
		{name: "JDK_JAVA_OPTIONS", want: true},
		{name: "ZDOTDIR", want: true},
		{name: "PYTHONWARNINGS", want: true},
		{name: "OPENSSL_CONF", want: true},
		{name: "DOTNET_STARTUP_HOOKS", want: true},
		{name: "LUA_INIT", want: true},

		// Exported functions, under any name.
		{name: "MYFUNC", value: "() { :; }; echo pwned", want: true},
		{name: "HOME", value: "() {", want: true},

		// Safe by docs/design.md (base set) or by choice: search paths and
		// programs run on purpose.
		{name: "PATH", value: "/usr/bin:/bin"},
		{name: "PYTHONPATH", value: "src"},
		{name: "NODE_PATH", value: "/usr/lib/node_modules"},
		{name: "PERL5LIB", value: "/opt/perl"},
		{name: "RUBYLIB", value: "/opt/ruby"},
		{name: "GIT_SSH_COMMAND", value: "ssh -i ~/.ssh/id_ed25519"},
		{name: "GIT_EXEC_PATH"},
		{name: "EDITOR", value: "vim"},
		{name: "PS1", value: `\u@\h:\w\$ `},

		// Near misses.
		{name: "LD"},
		{name: "LDFLAGS", value: "-L/opt/lib"},
		{name: "DYLD"},
		{name: "BASH_FUNC"},
		{name: "BASH"},
		{name: "ENVIRONMENT"},
		{name: "MY_ENV"},
		{name: "GIT_CONFIGURED"},
		{name: "NODE_OPTIONS_X"},
		{name: "XBASH_ENV"},
		{name: "HOME", value: "()"},
		{name: "HOME", value: "(){ :; }"},
		{name: "HOME", value: " () { :; }"},
		{name: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Injection(tt.name, tt.value); got != tt.want {
				t.Errorf("Injection(%q, %q) = %v, want %v", tt.name, tt.value, got, tt.want)
			}
		})
	}
}

func TestInjectionDoesNotAllocate(t *testing.T) {
	for _, name := range []string{"LD_PRELOAD", "NODE_OPTIONS", "XDG_CONFIG_HOME"} {
		if n := testing.AllocsPerRun(100, func() { Injection(name, "/home/alice") }); n != 0 {
			t.Errorf("Injection(%q) allocates %v times, want 0", name, n)
		}
	}
}

func BenchmarkInjection(b *testing.B) {
	names := []string{"PATH", "HOME", "LD_PRELOAD", "XDG_CONFIG_HOME", "NODE_OPTIONS", "GITHUB_TOKEN"}
	b.ReportAllocs()
	for b.Loop() {
		for _, name := range names {
			Injection(name, "/home/alice")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
}
