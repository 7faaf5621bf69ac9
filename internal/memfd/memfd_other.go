//go:build !linux

package memfd

import (
	"errors"
	"os"
)

// errNoMemfd is returned where there are no sealed memory files.
var errNoMemfd = errors.New("memory files (memfd) are Linux-only: secrets are delivered in a private directory")

// New is Linux-only; here it returns an error.
func New(name, value string) (*os.File, error) { return nil, errNoMemfd }

// Inherit is Linux-only; here it returns an error.
func Inherit(f *os.File) error { return errNoMemfd }

// Supported reports whether this system delivers secrets as memory
// files.
const Supported = false
