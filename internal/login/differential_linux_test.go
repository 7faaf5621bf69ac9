package login

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// The differential tests read each real file and its fake with the tool's
// own reader (npm's ini, Python's configparser and netrc): every secret
// value the tool reads from the real file must be gone from what it reads
// from the fake. The inputs are the format's table and a few hundred
// mutations of it, rich in the characters readers disagree on.

// differential fakes each input with format and hands the pairs (real,
// fake) that faked to script, run by argv, as JSON on its stdin; the
// script prints a JSON list of the indexes whose secret survived.
func differential(t *testing.T, format string, inputs []string, argv ...string) {
	t.Helper()
	type pair struct {
		Real string `json:"real"`
		Fake string `json:"fake"`
	}
	var pairs []pair
	for _, in := range inputs {
		out, _, err := formats[format].Fake([]byte(in), fakeOf)
		if err == nil {
			pairs = append(pairs, pair{in, string(out)})
		}
	}
	if len(pairs) < 20 {
		t.Fatalf("only %d inputs faked: the mutations are too harsh to test anything", len(pairs))
	}
	in, _ := json.Marshal(pairs)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", argv[0], err, stderr.Bytes())
	}
	var bad []int
	if err := json.Unmarshal(res, &bad); err != nil {
		t.Fatalf("%s printed %q", argv[0], res)
	}
	for _, i := range bad {
		t.Errorf("%s reads a real secret from the fake of %q", argv[0], pairs[i].Real)
	}
	t.Logf("%d of %d inputs faked and compared", len(pairs), len(inputs))
}

const npmIniScript = `
const ini = require('/usr/lib/node_modules/npm/node_modules/ini');
const pairs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const bad = [];
const auth = /(^|:)(_authToken|_auth|_password)$/;
pairs.forEach((p, i) => {
  let a, b;
  try { a = ini.parse(p.real); b = ini.parse(p.fake); } catch (e) { return; }
  const fake = JSON.stringify(b);
  for (const [k, v] of Object.entries(a)) {
    for (const s of [].concat(v)) {
      if (!auth.test(k) || typeof s !== 'string' || s === '' || /^\$\{[^}]*\}$/.test(s)) continue;
      if (fake.includes(JSON.stringify(s).slice(1, -1))) bad.push(i);
    }
  }
});
console.log(JSON.stringify([...new Set(bad)]));
`

func TestNpmrcDifferential(t *testing.T) {
	differential(t, "npmrc", mutations(fuzzSeeds["npmrc"], 600, ";#[]\"'\\\r\n =:${}_/"), "/usr/bin/node", "-e", npmIniScript)
}

const pyScript = `
import configparser, json, netrc, os, sys, tempfile
kind = sys.argv[1]
pairs = json.load(sys.stdin)
bad = []
def read(text):
    with tempfile.NamedTemporaryFile('w', delete=False, newline='') as f:
        f.write(text)
    try:
        if kind == 'cargo':
            import tomllib
            d = tomllib.loads(text)
            regs = [d.get('registry', {})] + list(d.get('registries', {}).values())
            return [v for r in regs if isinstance(r, dict) for k, v in r.items() if isinstance(v, str) and k in ('token', 'secret-key')]
        if kind == 'netrc':
            n = netrc.netrc(f.name)
            return [v for h in n.hosts.values() for v in (h[2], h[1]) if v]
        p = configparser.RawConfigParser()
        p.read(f.name)
        return [p.get(s, 'password') for s in p.sections() if p.has_option(s, 'password')]
    except Exception:
        return None
    finally:
        os.unlink(f.name)
for i, pr in enumerate(pairs):
    real, fake = read(pr['real']), read(pr['fake'])
    if real is None or fake is None:
        continue
    joined = '\x00'.join(fake)
    if any(s and s in joined for s in real):
        bad.append(i)
print(json.dumps(bad))
`

func TestNetrcDifferential(t *testing.T) {
	differential(t, "netrc", mutations(fuzzSeeds["netrc"], 600, "#\"\\\r\n \tmachinepasswordlogin"), "/usr/bin/python3", "-c", pyScript, "netrc")
}

func TestPypircDifferential(t *testing.T) {
	differential(t, "pypirc", mutations(fuzzSeeds["pypirc"], 600, ";#[]=:\r\n \t%password"), "/usr/bin/python3", "-c", pyScript, "pypirc")
}

func TestCargoDifferential(t *testing.T) {
	differential(t, "cargo-credentials", mutations(fuzzSeeds["cargo-credentials"], 600, "[]\"'.=#\\\r\n \ttoken{}"), "/usr/bin/python3", "-c", pyScript, "cargo")
}
