package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
)

// probeArg runs envsieve as the built-in probe of `verify`.
const probeArg = "__envsieve-probe"

// probeChannels are the ways a child can read an environment, in report
// order.
var probeChannels = []string{"environ", "getenv", "/proc/self/environ", "/proc/PPID/environ", "/proc/*/environ"}

// probeMain looks for each canary value (NAME=VALUE lines on stdin, never
// argv) on every channel and prints one JSON object: channel -> canary names
// found.
func probeMain() int {
	var canaries []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "=") {
			canaries = append(canaries, line)
		}
	}
	found := map[string][]string{}
	check := func(channel string, text []byte) {
		for _, c := range canaries {
			name, value, _ := strings.Cut(c, "=")
			if value != "" && bytes.Contains(text, []byte(value)) && !contains(found[channel], name) {
				found[channel] = append(found[channel], name)
			}
		}
	}
	check("environ", []byte(strings.Join(os.Environ(), "\x00")))
	for _, c := range canaries {
		name, _, _ := strings.Cut(c, "=")
		if v, ok := os.LookupEnv(name); ok {
			check("getenv", []byte(v))
		}
	}
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		check("/proc/self/environ", b)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(os.Getppid()) + "/environ"); err == nil {
		check("/proc/PPID/environ", b)
	}
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if filepath.Base(d) == self {
			continue
		}
		if b, err := os.ReadFile(d + "/environ"); err == nil {
			check("/proc/*/environ", b)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(found); err != nil {
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// canaryNames are the names verify plants: credentials by name, and one
// innocent name that holds a token-shaped value.
var canaryNames = []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DATABASE_URL", "STRIPE_SECRET_KEY", "ENVSIEVE_VERIFY_NOTE"}

func newCanaries() ([]string, error) {
	out := make([]string, 0, len(canaryNames))
	for _, n := range canaryNames {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		v := hex.EncodeToString(b)
		switch n {
		case "ENVSIEVE_VERIFY_NOTE", "GITHUB_TOKEN":
			v = "ghp_" + strings.ToUpper(v[:4]) + v[4:]
		case "DATABASE_URL":
			v = "postgres://app:" + v + "@db.internal:5432/app"
		}
		out = append(out, n+"="+v)
	}
	return out, nil
}

// verifyOptions are verify's flags: what it passes to envsieve run.
type verifyOptions struct {
	policy, profile string
	isolate, json   bool
}

func newVerifyCmd(u *cli.UI) *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:   "verify [--profile P] [--isolate] [-- CMD [ARGS...]]",
		Short: "Plant canary secrets, run a command under envsieve, and report every leak",
		Long: `verify proves a setup. It plants random canary secrets (credential names,
and an innocent name holding a token-shaped value) in a stand-in for the agent:
a shell whose environment holds them, as an agent's does. That shell runs
'envsieve run' with your flags, which runs CMD (default: a built-in probe that
reads environ, getenv, /proc/self/environ, /proc/$PPID/environ and every
readable /proc/*/environ). verify reports, for each canary and each channel,
whether it leaked: exit 0 only when nothing did.

With a CMD of your own, a canary counts as leaked when its value appears in
the command's output (which passes through envsieve's redaction, as an agent
would read it).`,
		RunE: func(_ *cobra.Command, argv []string) error {
			return runVerify(u, &o, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	c.Flags().StringVar(&o.policy, "policy", "", "policy `file` for envsieve run")
	c.Flags().StringVar(&o.profile, "profile", "", "profile `name` for envsieve run")
	c.Flags().BoolVar(&o.isolate, "isolate", false, "run with --isolate")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return c
}

// runVerify plants the canaries in a stand-in agent shell, runs argv (or
// the built-in probe) under envsieve run, and reports every leak; exit 1
// when anything leaked.
func runVerify(u *cli.UI, o *verifyOptions, argv []string) error {
	canaries, err := newCanaries()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	run := []string{self, "run"}
	if o.policy != "" {
		run = append(run, "--policy", o.policy)
	}
	if o.profile != "" {
		run = append(run, "--profile", o.profile)
	}
	if o.isolate {
		run = append(run, "--isolate")
	}
	run = append(run, "--")
	custom := len(argv) > 0
	if custom {
		run = append(run, argv...)
	} else {
		run = append(run, self, probeArg)
	}
	// The shell stays the parent of envsieve, holding the canaries in
	// its environment as an agent would.
	sh := exec.Command("/bin/sh", append([]string{"-c", `"$@"; exit $?`, "agent"}, run...)...)
	sh.Env = append(os.Environ(), canaries...)
	sh.Stderr = u.Err
	if !custom {
		sh.Stdin = strings.NewReader(strings.Join(canaries, "\n") + "\n")
	}
	out, err := sh.Output()
	if err != nil && !custom {
		return fmt.Errorf("verify: the probe failed: %w", err)
	}
	found := map[string][]string{}
	channels := probeChannels
	if custom {
		channels = []string{"output"}
		for _, c := range canaries {
			name, value, _ := strings.Cut(c, "=")
			if bytes.Contains(out, []byte(value)) {
				found["output"] = append(found["output"], name)
			}
		}
	} else if err := json.NewDecoder(bufio.NewReader(bytes.NewReader(out))).Decode(&found); err != nil {
		return fmt.Errorf("verify: read the probe's report: %w", err)
	}
	leaks := 0
	for _, ch := range channels {
		leaks += len(found[ch])
	}
	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"canaries": canaryNames, "leaks": found, "leaked": leaks > 0}); err != nil {
			return err
		}
	} else {
		printMatrix(u, channels, found)
	}
	if leaks > 0 {
		return cli.ExitStatus(1)
	}
	return nil
}

func printMatrix(u *cli.UI, channels []string, found map[string][]string) {
	tw := tabwriter.NewWriter(u.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "CANARY\t%s\n", strings.Join(channels, "\t"))
	names := append([]string(nil), canaryNames...)
	sort.Strings(names)
	for _, n := range names {
		row := []string{n}
		for _, ch := range channels {
			cell := "-"
			if contains(found[ch], n) {
				cell = "LEAKED"
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	leaks := 0
	for _, ch := range channels {
		leaks += len(found[ch])
	}
	if leaks == 0 {
		fmt.Fprintln(u.Out, "\nno canary leaked")
	} else {
		fmt.Fprintf(u.Out, "\n%d leaks\n", leaks)
	}
}
