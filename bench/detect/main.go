// Command detect measures how well envsieve's text scanner (detect.Scan)
// finds credentials, next to gitleaks, on a labelled corpus it generates.
//
//	detect gen [-seed N] [-size BYTES] [-per N] DIR
//	detect score [-gitleaks PATH] DIR
//
// gen writes DIR/corpus.txt and DIR/clean.txt with their labels,
// DIR/corpus.labels and DIR/clean.labels; the same seed gives the same
// bytes. The corpus is realistic output of builds and tools (go build, test
// and vet, go.sum, npm install and package-lock.json with integrity hashes,
// yarn.lock, git log, diff and push, docker pull and build, pytest, pip,
// cargo, kubectl, terraform locks, Makefile echo lines, JSON configuration,
// logs with UUIDs, source code, certificates, SSH public keys, URLs without
// passwords, the base64 of English) with FAKE credentials of real formats
// mixed in, in the lines they are found in (export, .env, JSON, YAML, curl,
// HTTP traces, flags, logs, source code, docker run, error messages): GitHub
// classic, fine-grained and OAuth tokens, GitLab, OpenAI, Anthropic, Slack
// bot, user and app tokens, AWS key ids and secret keys, Google API keys,
// Stripe live and test keys, npm, Hugging Face, SendGrid, Twilio API keys
// and auth tokens (hex), JWTs, PEM RSA, EC, OpenSSH and PKCS#8 private keys
// (as files, in YAML, in a service-account JSON), database URLs with
// passwords, passwords people choose, and generic random API keys.
// clean.txt is more of the same lines without any secret.
//
// The text holds no labels: the .labels files say, by byte offsets, where
// each secret is and what kind of line each region is, so that the
// scanners see only the text. Regions whose kind starts with hard: hold
// random strings that are not credentials (nanoids and other random ids,
// AWS request ids, data: URLs, CSP nonces); the report counts their false
// positives apart, since no scanner that judges randomness can tell them
// from secrets.
//
// score runs detect.Scan (with its defaults, and with NoEntropy) and, given
// -gitleaks, `gitleaks stdin` with one core, on both files, and prints
// recall by provider, precision, false positives by kind of line and
// throughput. A secret counts as found when a finding overlaps its labelled
// span (and as covered when findings cover all its bytes: what redaction
// needs); a finding that overlaps no labelled secret is a false positive.
// gitleaks' findings are placed in the text by their secret (else their
// match) within the lines they name.
package main

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/envsieve/envsieve/internal/detect"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "score":
		err = score(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "detect:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: detect gen [-seed N] [-size BYTES] [-per N] DIR\n       detect score [-gitleaks PATH] DIR")
	os.Exit(2)
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	seed := fs.Uint64("seed", 1, "seed of the generator")
	size := fs.Int("size", 2<<20, "approximate size of corpus.txt and clean.txt in bytes")
	per := fs.Int("per", 40, "secrets of each provider")
	fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	dir := fs.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := generate(*seed, *size, *per)
	clean := generateClean(*seed+1, *size)
	for _, f := range []struct {
		name string
		c    *corpus
	}{{"corpus", c}, {"clean", clean}} {
		if err := os.WriteFile(filepath.Join(dir, f.name+".txt"), f.c.text.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+".labels"), f.c.labels(f.name+".txt"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s: corpus.txt (%d bytes, %d secrets, %d regions), clean.txt (%d bytes, %d regions)\n",
		dir, c.text.Len(), len(c.secrets), len(c.contexts), clean.text.Len(), len(clean.contexts))
	return nil
}

// labels returns the labels file of c, whose text is the file name.
func (c *corpus) labels(name string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# kind\tstart\tend\tclass: byte offsets into %s, end exclusive\n", name)
	for _, l := range c.contexts {
		fmt.Fprintf(&b, "context\t%d\t%d\t%s\n", l.start, l.end, l.class)
	}
	for _, l := range c.secrets {
		fmt.Fprintf(&b, "secret\t%d\t%d\t%s\n", l.start, l.end, l.class)
	}
	return b.Bytes()
}

// A label is a span of corpus.txt and what it is: a provider for a
// secret, a kind of line for a context.
type label struct {
	start, end int
	class      string
}

// A finding is a span a scanner reported, and what it called it.
type finding struct {
	start, end int
	kind       string
}

func readLabels(path string) (secrets, contexts []label, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, nil, fmt.Errorf("%s:%d: want 4 fields", path, n+1)
		}
		start, err1 := strconv.Atoi(f[1])
		end, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("%s:%d: bad offsets", path, n+1)
		}
		l := label{start, end, f[3]}
		switch f[0] {
		case "secret":
			secrets = append(secrets, l)
		case "context":
			contexts = append(contexts, l)
		default:
			return nil, nil, fmt.Errorf("%s:%d: unknown kind %q", path, n+1, f[0])
		}
	}
	sort.Slice(secrets, func(i, j int) bool { return secrets[i].start < secrets[j].start })
	sort.Slice(contexts, func(i, j int) bool { return contexts[i].start < contexts[j].start })
	return secrets, contexts, nil
}

// A scanner is one tool under test.
type scanner struct {
	name     string
	findings []finding // on corpus.txt
	clean    []finding // on clean.txt
	unmapped int       // findings whose place in the text could not be found
	mbps     float64   // on corpus.txt
	mbpsCl   float64   // on clean.txt
	note     string
}

func score(args []string) error {
	fs := flag.NewFlagSet("score", flag.ExitOnError)
	gitleaks := fs.String("gitleaks", "", "path of a gitleaks binary to compare with")
	minTime := fs.Duration("time", time.Second, "least time to measure envsieve's throughput for")
	fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	dir := fs.Arg(0)
	text, err := os.ReadFile(filepath.Join(dir, "corpus.txt"))
	if err != nil {
		return err
	}
	clean, err := os.ReadFile(filepath.Join(dir, "clean.txt"))
	if err != nil {
		return err
	}
	secrets, contexts, err := readLabels(filepath.Join(dir, "corpus.labels"))
	if err != nil {
		return err
	}
	_, cleanContexts, err := readLabels(filepath.Join(dir, "clean.labels"))
	if err != nil {
		return err
	}

	var tools []*scanner
	for _, v := range []struct {
		name string
		opt  detect.ScanOptions
	}{
		{"envsieve", detect.ScanOptions{}},
		{"envsieve-known", detect.ScanOptions{NoEntropy: true}},
	} {
		s := &scanner{name: v.name}
		s.findings = scanEnvsieve(text, v.opt)
		s.clean = scanEnvsieve(clean, v.opt)
		s.mbps = throughput(text, v.opt, *minTime)
		s.mbpsCl = throughput(clean, v.opt, *minTime)
		tools = append(tools, s)
	}
	if *gitleaks != "" {
		s, err := scanGitleaks(*gitleaks, dir, text, clean)
		if err != nil {
			return fmt.Errorf("gitleaks: %w", err)
		}
		tools = append(tools, s)
	}

	fmt.Printf("corpus: %s, %d bytes, %d labelled secrets in %d regions; clean.txt: %d bytes\n\n",
		filepath.Join(dir, "corpus.txt"), len(text), len(secrets), len(contexts), len(clean))
	report(tools, secrets, contexts, cleanContexts, len(clean))
	return nil
}

func scanEnvsieve(text []byte, opt detect.ScanOptions) []finding {
	var fs []finding
	detect.Scan(text, opt, func(f detect.Finding) bool {
		fs = append(fs, finding{f.Start, f.End, string(f.Kind)})
		return true
	})
	return fs
}

// throughput returns the MB/s of detect.Scan on text on one goroutine, the
// best of several runs of at least minTime in all.
func throughput(text []byte, opt detect.ScanOptions, minTime time.Duration) float64 {
	best := time.Duration(1 << 62)
	var total time.Duration
	for runs := 0; runs < 3 || total < minTime; runs++ {
		start := time.Now()
		detect.Scan(text, opt, func(detect.Finding) bool { return true })
		d := time.Since(start)
		total += d
		best = min(best, d)
	}
	return float64(len(text)) / 1e6 / best.Seconds()
}

// gitleaksFinding is the part of gitleaks' JSON report used here.
type gitleaksFinding struct {
	RuleID      string
	StartLine   int
	EndLine     int
	StartColumn int
	EndColumn   int
	Match       string
	Secret      string
}

func scanGitleaks(bin, dir string, text, clean []byte) (*scanner, error) {
	s := &scanner{name: "gitleaks"}
	if info, err := buildinfo.ReadFile(bin); err == nil {
		s.note = info.Main.Path + " " + info.Main.Version + ", " + info.GoVersion
	}
	// Start-up (reading its configuration, compiling its rules) is measured
	// on empty input and taken off, so that the figures are per byte.
	var startup time.Duration
	for range 3 {
		_, d, err := runGitleaks(bin, nil)
		if err != nil {
			return nil, err
		}
		if startup == 0 || d < startup {
			startup = d
		}
	}
	rep, d, err := runGitleaks(bin, text)
	if err != nil {
		return nil, err
	}
	s.findings, s.unmapped = mapGitleaks(text, rep)
	s.mbps = float64(len(text)) / 1e6 / max(d-startup, time.Millisecond).Seconds()
	rep, d, err = runGitleaks(bin, clean)
	if err != nil {
		return nil, err
	}
	var unmapped int
	s.clean, unmapped = mapGitleaks(clean, rep)
	s.unmapped += unmapped
	s.mbpsCl = float64(len(clean)) / 1e6 / max(d-startup, time.Millisecond).Seconds()
	s.note += fmt.Sprintf("; start-up %v taken off its times", startup.Round(time.Millisecond))
	return s, nil
}

// runGitleaks runs `gitleaks stdin` on input and returns its findings and
// how long it took.
func runGitleaks(bin string, input []byte) ([]gitleaksFinding, time.Duration, error) {
	cmd := exec.Command(bin, "stdin", "--report-format", "json", "--report-path", "-",
		"--no-banner", "--log-level", "error", "--exit-code", "0")
	cmd.Stdin = bytes.NewReader(input)
	// One core, as detect.Scan gets.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var rep []gitleaksFinding
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, 0, fmt.Errorf("reading its report: %v", err)
	}
	return rep, d, nil
}

// mapGitleaks places gitleaks' findings in text: it looks for the secret
// (else the match) in the lines the finding names, nearest the column it
// gives. It returns the findings in order and how many it could not place.
func mapGitleaks(text []byte, rep []gitleaksFinding) ([]finding, int) {
	lineStart := []int{0}
	for i, c := range text {
		if c == '\n' {
			lineStart = append(lineStart, i+1)
		}
	}
	lineAt := func(n int) int { // the offset of line n, 1-based
		if n < 1 {
			n = 1
		}
		if n > len(lineStart) {
			return len(text)
		}
		return lineStart[n-1]
	}
	var fs []finding
	unmapped := 0
	for _, g := range rep {
		from, to := lineAt(g.StartLine), len(text)
		if g.EndLine < len(lineStart) {
			to = lineAt(g.EndLine + 1)
		}
		placed := false
		for _, want := range []string{g.Secret, g.Match} {
			if want == "" {
				continue
			}
			region := text[from:to]
			best := -1
			for off := 0; ; {
				i := bytes.Index(region[off:], []byte(want))
				if i < 0 {
					break
				}
				i += off
				if best < 0 || abs(i-(g.StartColumn-1)) < abs(best-(g.StartColumn-1)) {
					best = i
				}
				off = i + 1
			}
			if best >= 0 {
				fs = append(fs, finding{from + best, from + best + len(want), g.RuleID})
				placed = true
				break
			}
		}
		if !placed {
			unmapped++
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].start < fs[j].start })
	return fs, unmapped
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// overlapping returns the indexes of the labels (sorted by start, not
// overlapping each other) that overlap [start, end).
func overlapping(labels []label, start, end int) (lo, hi int) {
	lo = sort.Search(len(labels), func(i int) bool { return labels[i].end > start })
	hi = lo
	for hi < len(labels) && labels[hi].start < end {
		hi++
	}
	return lo, hi
}

// tally is what one tool did on the corpus.
type tally struct {
	found, covered map[string]int // secrets found, fully covered, by provider
	tp, fp, fpHard int            // findings; false positives in hard:... lines
	fpByContext    map[string]int
	kindTP, kindFP map[string]int // findings by the kind the tool gave
	cleanFP        int            // findings in clean.txt
	cleanFPHard    int            // those in hard:... lines
}

// contextOf returns the class of the context label that holds offset i.
func contextOf(contexts []label, i int) string {
	if c, _ := overlapping(contexts, i, i+1); c < len(contexts) && contexts[c].start <= i {
		return contexts[c].class
	}
	return "?"
}

func isHard(context string) bool { return strings.HasPrefix(context, "hard:") }

func count(s *scanner, secrets, contexts, cleanContexts []label) tally {
	t := tally{
		found: map[string]int{}, covered: map[string]int{},
		fpByContext: map[string]int{}, kindTP: map[string]int{}, kindFP: map[string]int{},
	}
	hit := make([]bool, len(secrets))
	coveredBytes := make([]int, len(secrets))
	for _, f := range s.findings {
		lo, hi := overlapping(secrets, f.start, f.end)
		if lo == hi {
			t.fp++
			t.kindFP[f.kind]++
			ctx := contextOf(contexts, f.start)
			t.fpByContext[ctx]++
			if isHard(ctx) {
				t.fpHard++
			}
			continue
		}
		t.tp++
		t.kindTP[f.kind]++
		for i := lo; i < hi; i++ {
			hit[i] = true
			coveredBytes[i] += min(f.end, secrets[i].end) - max(f.start, secrets[i].start)
		}
	}
	for i, sec := range secrets {
		if hit[i] {
			t.found[sec.class]++
		}
		// Findings of one tool may overlap each other (gitleaks'), so
		// coverage is counted generously: enough bytes, from any findings.
		if coveredBytes[i] >= sec.end-sec.start {
			t.covered[sec.class]++
		}
	}
	t.cleanFP = len(s.clean)
	for _, f := range s.clean {
		if isHard(contextOf(cleanContexts, f.start)) {
			t.cleanFPHard++
		}
	}
	return t
}

func report(tools []*scanner, secrets, contexts, cleanContexts []label, cleanLen int) {
	tallies := make([]tally, len(tools))
	for i, s := range tools {
		tallies[i] = count(s, secrets, contexts, cleanContexts)
	}
	total := map[string]int{}
	var providers []string
	for _, s := range secrets {
		if total[s.class] == 0 {
			providers = append(providers, s.class)
		}
		total[s.class]++
	}
	slices.Sort(providers)

	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()

	fmt.Fprintln(w, "Recall by provider: secrets found (a finding overlaps the secret) / labelled; in brackets, those whose every byte a finding covers.")
	fmt.Fprintf(w, "%-24s %5s", "provider", "n")
	for _, s := range tools {
		fmt.Fprintf(w, " %22s", s.name)
	}
	fmt.Fprintln(w)
	for _, p := range providers {
		fmt.Fprintf(w, "%-24s %5d", p, total[p])
		for _, t := range tallies {
			fmt.Fprintf(w, " %22s", fmt.Sprintf("%5.1f%% [%5.1f%%]", pct(t.found[p], total[p]), pct(t.covered[p], total[p])))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "Overall (corpus.txt; a false positive is a finding that overlaps no labelled secret;")
	fmt.Fprintln(w, "hard:... lines hold random strings that are not credentials: ids, nonces, images, request ids):")
	fmt.Fprintf(w, "%-24s", "")
	for _, s := range tools {
		fmt.Fprintf(w, " %22s", s.name)
	}
	fmt.Fprintln(w)
	row := func(name string, f func(s *scanner, t tally) string) {
		fmt.Fprintf(w, "%-24s", name)
		for i, s := range tools {
			fmt.Fprintf(w, " %22s", f(s, tallies[i]))
		}
		fmt.Fprintln(w)
	}
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	row("secrets found", func(_ *scanner, t tally) string { return fmt.Sprintf("%d / %d", sum(t.found), len(secrets)) })
	row("recall", func(_ *scanner, t tally) string { return fmt.Sprintf("%.1f%%", pct(sum(t.found), len(secrets))) })
	row("recall, fully covered", func(_ *scanner, t tally) string { return fmt.Sprintf("%.1f%%", pct(sum(t.covered), len(secrets))) })
	row("findings", func(_ *scanner, t tally) string { return strconv.Itoa(t.tp + t.fp) })
	row("false positives", func(_ *scanner, t tally) string { return strconv.Itoa(t.fp) })
	row("  in hard:... lines", func(_ *scanner, t tally) string { return strconv.Itoa(t.fpHard) })
	f1 := func(tp, fp, found int) string {
		p, r := frac(tp, tp+fp), frac(found, len(secrets))
		if p+r == 0 {
			return "0"
		}
		return fmt.Sprintf("%.3f", 2*p*r/(p+r))
	}
	row("precision", func(_ *scanner, t tally) string { return fmt.Sprintf("%.1f%%", pct(t.tp, t.tp+t.fp)) })
	row("F1", func(_ *scanner, t tally) string { return f1(t.tp, t.fp, sum(t.found)) })
	row("precision, no hard:...", func(_ *scanner, t tally) string {
		return fmt.Sprintf("%.1f%%", pct(t.tp, t.tp+t.fp-t.fpHard))
	})
	row("F1, no hard:...", func(_ *scanner, t tally) string { return f1(t.tp, t.fp-t.fpHard, sum(t.found)) })
	row("findings in clean.txt", func(_ *scanner, t tally) string {
		return fmt.Sprintf("%d (%.1f/MB)", t.cleanFP, float64(t.cleanFP)/(float64(cleanLen)/1e6))
	})
	row("  in hard:... lines", func(_ *scanner, t tally) string { return strconv.Itoa(t.cleanFPHard) })
	row("unplaced findings", func(s *scanner, _ tally) string { return strconv.Itoa(s.unmapped) })
	fmt.Fprintln(w)

	fmt.Fprintln(w, "False positives by kind of line (corpus.txt):")
	ctx := map[string]bool{}
	for _, t := range tallies {
		for c := range t.fpByContext {
			ctx[c] = true
		}
	}
	if len(ctx) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, c := range sortedKeys(ctx) {
		fmt.Fprintf(w, "%-24s", c)
		for i := range tools {
			fmt.Fprintf(w, " %22d", tallies[i].fpByContext[c])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)

	for i, s := range tools {
		fmt.Fprintf(w, "Precision by the kind %s reported (true / all):\n", s.name)
		kinds := map[string]bool{}
		for k := range tallies[i].kindTP {
			kinds[k] = true
		}
		for k := range tallies[i].kindFP {
			kinds[k] = true
		}
		for _, k := range sortedKeys(kinds) {
			tp, fp := tallies[i].kindTP[k], tallies[i].kindFP[k]
			fmt.Fprintf(w, "  %-32s %5d / %-5d %6.1f%%\n", k, tp, tp+fp, pct(tp, tp+fp))
		}
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "Throughput, one core (MB/s; gitleaks runs with GOMAXPROCS=1):")
	fmt.Fprintf(w, "%-24s %14s %14s\n", "", "corpus.txt", "clean.txt")
	for _, s := range tools {
		fmt.Fprintf(w, "%-24s %14.1f %14.1f\n", s.name, s.mbps, s.mbpsCl)
	}
	for _, s := range tools[1:] {
		if s.name == "gitleaks" {
			fmt.Fprintf(w, "envsieve / gitleaks: %.1fx on corpus.txt, %.1fx on clean.txt\n", tools[0].mbps/s.mbps, tools[0].mbpsCl/s.mbpsCl)
		}
	}
	for _, s := range tools {
		if s.note != "" {
			fmt.Fprintf(w, "(%s: %s)\n", s.name, s.note)
		}
	}
}

func pct(n, d int) float64 { return 100 * frac(n, d) }

func frac(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
