// Command libs is bench/floor/exec with envsieve's libraries linked in: the
// package initialisers of cobra, goccy/go-yaml, mvdan.cc/sh, age and the
// standard packages they pull in run at every start of any program that
// links them. bench/compare.sh runs it beside envsieve to separate their
// cost from envsieve's own.
//
//	libs /bin/true
package main

import (
	"fmt"
	"os"
	"syscall"

	_ "filippo.io/age"
	_ "github.com/creack/pty"
	_ "github.com/goccy/go-yaml"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "mvdan.cc/sh/v3/syntax"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: libs PROGRAM [ARGS...]")
		os.Exit(2)
	}
	err := syscall.Exec(os.Args[1], os.Args[1:], []string{"PATH=/usr/bin:/bin"})
	fmt.Fprintln(os.Stderr, "libs:", err)
	os.Exit(126)
}
