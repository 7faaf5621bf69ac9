// Command envsieve-daemon is the program behind `envsieve daemon` and
// `envsieve client`: envsieve hands over to it when it finds it next to its
// own binary or in ../lib/envsieve/. It is a program of its own so that the
// JSON-RPC library it links costs nothing to the launches of envsieve. See
// docs/protocol.md.
package main

import (
	"os"

	"github.com/envsieve/envsieve/cmd/internal/daemoncli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(daemoncli.Main(version)) }
