// Package envtest holds the helper child programs that envsieve's tests run.
// The test binary is the child program: a test's TestMain registers
// [Commands] with testscript, which installs copies of the test binary under
// these names in PATH and dispatches on os.Args[0]. The helpers are real
// processes reading their real environment, not mocks.
package envtest

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Commands returns the helper programs by name.
func Commands() map[string]func() {
	return map[string]func(){
		"envdump": Dump,
		"envping": Ping,
	}
}

// Dump prints the process's environment, one KEY=VALUE per line in the order
// the kernel handed it over. With -keys it prints the keys only, sorted, so
// that a test's output never carries a value. With -o FILE it writes the
// lines to FILE instead of stdout (past a launcher that masks its output).
func Dump() {
	env := os.Environ()
	if len(os.Args) > 2 && os.Args[1] == "-o" {
		var b strings.Builder
		for _, kv := range env {
			b.WriteString(kv + "\n")
		}
		if err := os.WriteFile(os.Args[2], []byte(b.String()), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "-keys" {
		keys := make([]string, 0, len(env))
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Println(strings.Join(keys, "\n"))
		return
	}
	for _, kv := range env {
		fmt.Println(kv)
	}
}

// Ping answers each line read on stdin with one line holding the wall-clock
// time of the answer in nanoseconds, written at once. Tests use it to measure
// the latency a launcher adds between a child's write and its own.
func Ping() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Fprintf(os.Stdout, "%d\n", time.Now().UnixNano())
	}
}
