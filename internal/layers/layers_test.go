package layers

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/envsieve/envsieve"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// listPackages runs `go list -json -deps=false` over the module.
func listPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	// go test caches a result by the files the test itself opened or
	// stat'ed; go list reads the sources in another process, so stat them
	// here, and a changed import runs the test again.
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, _ = os.Stat(path)
		}
		return nil
	})
	cmd := exec.Command(gotool, "list", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	if len(pkgs) < 15 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	return pkgs
}

// rule forbids the packages matching from from depending on what
// matches to but not but: directly when direct, else anywhere in their
// dependencies. The packages of allow are exempt.
type rule struct {
	why    string
	from   []string
	to     []string
	but    []string
	direct bool
	allow  []string
}

func matches(pats []string, path string) bool {
	for _, p := range pats {
		if q, ok := strings.CutSuffix(p, "/..."); ok {
			if path == q || strings.HasPrefix(path, q+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

func m(rel ...string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = module + "/" + r
	}
	return out
}

var rules = []rule{
	{
		why:  "the engine and its detectors are pure: no processes, no network, no program-side package",
		from: m("sieve", "internal/detect", "internal/pattern", "redact"),
		to:   append([]string{"os/exec", "net", "net/http", "crypto/tls"}, m("launch", "internal/daemon", "internal/audit", "secret", "internal/memfd", "shim", "seal", "cmd/...")...),
	},
	{
		why:    "foundation packages import no other envsieve package outside the foundation",
		from:   m("internal/detect", "internal/pattern", "internal/envknob", "internal/shellcmd", "internal/peercred", "internal/trust", "internal/compiled"),
		to:     m("sieve", "policy", "launch", "internal/daemon", "internal/audit", "secret", "internal/memfd", "shim", "seal", "redact", "cmd/..."),
		direct: true,
	},
	{
		why:  "the launch is used by the daemon, never the other way",
		from: m("launch", "policy", "sieve", "internal/audit", "secret", "internal/memfd", "shim", "seal", "redact"),
		to:   m("internal/daemon", "cmd/..."),
	},
	{
		why:  "the credential broker holds the real values: it links nothing of the project but its own packages and the SigV4 signer, so what runs beside the secrets stays small and reviewable",
		from: m("internal/broker/..."),
		to:   m("..."),
		but:  m("internal/broker/...", "internal/fake", "internal/sigv4"),
	},
	{
		why:  "the process layer (internal/proc) needs only the seal: it starts, isolates, scopes and reaps processes, and knows nothing of policies, secrets or launches",
		from: m("internal/proc"),
		to:   append([]string{"github.com/...", "golang.org/...", "gopkg.in/..."}, m("...")...),
		but:  append([]string{"golang.org/x/sys/...", "golang.org/x/term", "github.com/creack/pty"}, m("seal")...),
	},
	{
		why:    "only the policy and the readers of tools' YAML files (login: gh's hosts.yml, yarn's .yarnrc.yml) parse YAML; the engine gets compiled values",
		from:   []string{module + "/..."},
		to:     []string{"github.com/goccy/go-yaml/..."},
		direct: true,
		allow:  allowedYAML,
	},
	{
		why:  "the engine imports no parser: it reads compiled values (internal/compiled), never policy, which parses",
		from: m("sieve", "internal/detect", "internal/pattern", "redact", "internal/compiled"),
		to:   []string{"github.com/goccy/go-yaml/..."},
	},
}

// allowedYAML are the packages that may import the YAML parser directly:
// the policy, the broker's catalog, the credential-file fakers (gh's and
// yarn's files are YAML), and the benchmark that measures the cost of
// linking it.
var allowedYAML = m("policy", "internal/broker", "internal/login", "bench/floor/libs")

func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		for path, p := range pkgs {
			if !matches(r.from, path) || slices.Contains(r.allow, path) {
				continue
			}
			deps, verb := p.Deps, "depends on"
			if r.direct {
				deps, verb = p.Imports, "imports"
			}
			for _, d := range deps {
				if matches(r.to, d) && !matches(r.but, d) && d != path {
					t.Errorf("%s %s %s: %s", path, verb, d, r.why)
				}
			}
		}
	}
}

// TestLayersRuleCatches proves the test can fail: a made-up package that
// breaks each rule is reported.
func TestLayersRuleCatches(t *testing.T) {
	for _, r := range rules {
		from := r.from[0]
		if strings.HasSuffix(from, "/...") {
			from = strings.TrimSuffix(from, "/...") + "/x"
		}
		to := strings.TrimSuffix(r.to[len(r.to)-1], "/...")
		if to == module {
			to = module + "/launch" // a package of the module, not the module
		}
		if !matches(r.from, from) || !matches(r.to, to) || matches(r.but, to) {
			t.Errorf("rule %q: %s -> %s not matched", r.why, from, to)
		}
	}
}
