package compiled

import "strings"

// steerExact are variables that decide where a program sends its
// credential, which configuration it reads, or what code it loads
// (docs/design.md, "Exec-time grants"). The tree may not set them for a
// program a rule grants to: that program's value is the launch's.
var steerExact = map[string]bool{
	"HOME": true, "PATH": true, "SHELL": true, "ENV": true, "BASH_ENV": true,
	"XDG_CONFIG_HOME": true, "XDG_CONFIG_DIRS": true, "XDG_DATA_HOME": true, "XDG_DATA_DIRS": true,
	"XDG_STATE_HOME": true, "XDG_CACHE_HOME": true, "XDG_RUNTIME_DIR": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "CURL_CA_BUNDLE": true, "REQUESTS_CA_BUNDLE": true,
	"NODE_EXTRA_CA_CERTS": true, "NODE_TLS_REJECT_UNAUTHORIZED": true, "NODE_OPTIONS": true, "NODE_PATH": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "PYTHONHTTPSVERIFY": true, "PYTHONUSERBASE": true,
	"PERL5LIB": true, "PERLLIB": true, "PERL5OPT": true, "RUBYLIB": true, "RUBYOPT": true, "GEM_HOME": true, "GEM_PATH": true,
	"SSH_AUTH_SOCK": true, "SSH_ASKPASS": true, "GNUPGHOME": true, "PASSWORD_STORE_DIR": true,
	"NETRC": true, "CURL_HOME": true, "WGETRC": true, "BROWSER": true, "PAGER": true, "EDITOR": true, "VISUAL": true,
	"DOCKER_CONFIG": true, "DOCKER_HOST": true, "DOCKER_CERT_PATH": true, "DOCKER_TLS_VERIFY": true, "KUBECONFIG": true,
	"AZURE_CONFIG_DIR": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "CARGO_HOME": true, "RUSTUP_HOME": true,
	"GOPROXY": true, "GOFLAGS": true, "GONOSUMDB": true, "GONOSUMCHECK": true, "GOINSECURE": true, "GOPRIVATE": true,
	"GIT_ASKPASS": true, "GIT_EXEC_PATH": true, "GIT_TEMPLATE_DIR": true, "GIT_EXTERNAL_DIFF": true, "GIT_PAGER": true,
	"GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true, "GIT_ALLOW_PROTOCOL": true, "GIT_CURL_VERBOSE": true,
	"GIT_ATTR_NOSYSTEM": true,
}

// steerPrefix are families of such variables, matched without regard to
// case (npm reads npm_config_* in either case).
var steerPrefix = []string{
	"LD_", "DYLD_", "GIT_CONFIG", "GIT_SSH", "GIT_PROXY", "GIT_SSL_", "GIT_TRACE", "GIT_TEST_", "GH_", "GITHUB_", "GLAB_", "NPM_CONFIG_", "YARN_", "PNPM_", "PIP_", "UV_", "POETRY_", "TWINE_",
	"AWS_", "CLOUDSDK_", "AZURE_", "HF_", "ENVSIEVE_",
}

// Steers reports whether the variable key decides where a program sends
// its credential, which configuration it reads or what code it loads: a
// proxy (any *_PROXY, in any case), a CA or TLS switch, a configuration
// directory or file, a loader or interpreter path, an askpass or ssh
// command, or a tool's own settings family (GH_*, NPM_CONFIG_*, AWS_*,
// ...). A rule's pass: never lets the tree set one for a granted program.
func Steers(key string) bool {
	if steerExact[key] {
		return true
	}
	up := strings.ToUpper(key)
	if strings.HasSuffix(up, "_PROXY") || steerExact[up] {
		return true
	}
	for _, p := range steerPrefix {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return false
}
