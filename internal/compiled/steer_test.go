package compiled

import "testing"

// TestSteers: the keys that decide where a credential goes, which config
// is read or what code loads steer, in any case where a client reads any;
// git's plumbing, which git hands its own children, does not.
func TestSteers(t *testing.T) {
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "SSL_CERT_FILE",
		"NODE_EXTRA_CA_CERTS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
		"GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EXEC_PATH", "GIT_PAGER", "GIT_TRACE_CURL", "GIT_SSL_NO_VERIFY",
		"GIT_ALLOW_PROTOCOL", "GH_HOST", "GH_CONFIG_DIR", "npm_config_registry", "NPM_CONFIG_USERCONFIG",
		"AWS_CONFIG_FILE", "LD_PRELOAD", "PYTHONPATH", "NODE_OPTIONS", "KUBECONFIG", "DOCKER_CONFIG", "ENVSIEVE_POLICY"} {
		if !Steers(k) {
			t.Errorf("%s does not steer", k)
		}
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PAGER_IN_USE", "GIT_PROTOCOL",
		"GIT_QUARANTINE_PATH", "GIT_AUTHOR_NAME", "TERM", "COLUMNS", "MYTOOL_DIR", "LANG"} {
		if Steers(k) {
			t.Errorf("%s steers", k)
		}
	}
}
