// Command timeit runs commands side by side and prints their start-to-exit
// times and ratios against the first one. Runs are interleaved (A B C A B C
// ...) so that drift in the machine's load hits every command alike.
//
//	timeit -n 1000 'env -i PATH=/usr/bin /bin/true' 'envsieve run -- /bin/true'
//
// Each argument is a command line split on spaces (no shell is involved, so
// no shell start-up is measured). Its environment is timeit's own. With
// -cpu it measures the CPU time (user + system) each command and its
// waited-for children used instead of the wall clock: on a loaded machine
// that is the steadier measure of what a command costs.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 500, "runs of each command")
	warm := flag.Int("warmup", 20, "unmeasured runs of each command first")
	cpu := flag.Bool("cpu", false, "measure CPU time (user + system), not the wall clock")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: timeit [-n N] 'CMD ARGS' ['CMD ARGS' ...]")
		os.Exit(2)
	}
	times := make([][]time.Duration, len(cmds))
	for i := 0; i < *warm+*n; i++ {
		for j, c := range cmds {
			d, err := run(c, *cpu)
			if err != nil {
				fmt.Fprintf(os.Stderr, "timeit: %s: %v\n", c, err)
				os.Exit(1)
			}
			if i >= *warm {
				times[j] = append(times[j], d)
			}
		}
	}
	base := median(times[0])
	if *cpu {
		fmt.Println("(CPU time: user + system)")
	}
	fmt.Printf("%-60s %10s %10s %10s %8s %10s\n", "command", "median", "p10", "p90", "ratio", "added")
	for j, c := range cmds {
		t := times[j]
		slices.Sort(t)
		m := median(t)
		fmt.Printf("%-60s %10s %10s %10s %7.2fx %10s\n", c, us(m), us(t[len(t)/10]), us(t[len(t)*9/10]),
			float64(m)/float64(base), us(m-base))
	}
}

func run(line string, cpu bool) (time.Duration, error) {
	f := strings.Fields(line)
	cmd := exec.Command(f[0], f[1:]...)
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if cpu && cmd.ProcessState != nil {
		d = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return d, err
}

func median(t []time.Duration) time.Duration {
	s := slices.Clone(t)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
