package launch_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// The launch the CLI and the daemon make: build it and look at what the
// child will get.
func ExampleBuild() {
	p, err := policy.Parse("policy.yaml", []byte("version: 1\nallow: [MYAPP_MODE]\n"))
	if err != nil {
		log.Fatal(err)
	}
	parent := []string{"PATH=/usr/bin:/bin", "MYAPP_MODE=dev", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	l, err := launch.Build(context.Background(), &launch.Host{}, launch.Options{
		Policy: p, Parent: parent, Request: sieve.Request{Commands: [][]string{{"env"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Cleanup()
	for _, kv := range l.Env {
		fmt.Println(kv)
	}
	fmt.Println("masked in its output:", l.Decision().Masked)
	// ENVSIEVE_TREE=1 marks the child as inside an envsieve tree: an
	// envsieve started there only narrows.
	//
	// Output:
	// ENVSIEVE_TREE=1
	// MYAPP_MODE=dev
	// PATH=/usr/bin:/bin
	// masked in its output: [AWS_SECRET_ACCESS_KEY]
}

// Run a command as `envsieve run` does, under the user's policy: in place
// (exec) when nothing needs the launcher afterwards, else supervised, with
// its output masked, its file secrets removed and the shim served. A
// program that hosts launches side by side (a server) sets Host.Server:
// each command is then its child, and Start returns at once.
func ExamplePlan_Start() {
	p, err := policy.Default()
	if err != nil {
		log.Fatal(err)
	}
	l, err := launch.Build(context.Background(), &launch.Host{Report: nil, Stderr: os.Stderr}, launch.Options{
		Policy: p, Parent: os.Environ(), Request: sieve.Request{Commands: [][]string{{"claude"}}, Profile: "claude"},
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := l.Start(context.Background(), launch.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		log.Fatal(err)
	}
	status, err := run.Wait()
	if err != nil {
		log.Fatal(err)
	}
	os.Exit(status)
}
