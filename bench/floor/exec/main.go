// Command exec is the floor of any launcher written in Go: it does nothing
// but replace itself with its arguments, with PATH as the whole environment.
// bench/compare.sh runs it beside envsieve to show what the Go runtime's
// start costs before envsieve does any work.
//
//	exec /bin/true
package main

import (
	"fmt"
	"os"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: exec PROGRAM [ARGS...]")
		os.Exit(2)
	}
	err := syscall.Exec(os.Args[1], os.Args[1:], []string{"PATH=/usr/bin:/bin"})
	fmt.Fprintln(os.Stderr, "exec:", err)
	os.Exit(126)
}
