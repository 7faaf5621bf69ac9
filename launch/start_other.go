//go:build !linux

package launch

import (
	"errors"
	"os"

	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/internal/shimwire"
)

var errCallerGone = errors.New("the caller gave up waiting before the start")

var errStartLinux = errors.New("the launcher starts granted programs on Linux only")

func startGranted(string, []string, []string, *shimwire.StartRequest, *pin.Program) (shimwire.Process, error) {
	return nil, errStartLinux
}

func dirOf(*os.File) (string, error) { return "", errStartLinux }

func seenBy(shimwire.Process, int) {}
