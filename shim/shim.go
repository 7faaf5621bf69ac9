// Package shim is the Go side of libenvsieve.so, envsieve's LD_PRELOAD
// shim: where the library and its companions are ([Locate], [LocateInit],
// [LocateStart]), whether a program can load it at all ([Static],
// [GoProgram]), and the values a launcher gives it ([Preload],
// [GrantedVar], [CheckHide]). The protocol the shim speaks to its launcher
// and the launcher's server are private to envsieve, both ends shipping
// together: they live in internal/shimwire (docs/shim.md).
//
// The C source, its Makefile and README are in shim/libenvsieve/. The
// library is never embedded: `make build` puts it next to the envsieve
// binary, and tests build it with the system C compiler.
package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/envsieve/envsieve/internal/shimwire"
)

// libName is the file name of the shim.
const libName = "libenvsieve.so"

// StartName is the file name of envsieve-start, which the shim runs in
// place of a program a rule may match; it lives next to the shim.
const StartName = "envsieve-start"

// maxGranted is the longest ENVSIEVE_SHIM_GRANTED value the shim holds.
const maxGranted = 2047

// GrantedVar returns the ENVSIEVE_SHIM_GRANTED entry that names keys as
// granted to a program, so that the shim takes them from its children;
// "" for no keys. A list longer than the shim holds is an error: the
// launcher must refuse the grant rather than have it reach the children.
func GrantedVar(keys []string) (string, error) {
	if len(keys) == 0 {
		return "", nil
	}
	list := strings.Join(keys, ",")
	if len(list) > maxGranted {
		return "", fmt.Errorf("the %d keys granted take %d bytes to name, more than the shim's %d", len(keys), len(list), maxGranted)
	}
	return shimwire.EnvGranted + "=" + list, nil
}

// ErrNotFound is returned by Locate when no copy of the library exists.
var ErrNotFound = errors.New("shim " + libName + " not found")

// Companions returns where an install puts the file name that goes with
// envsieve's executable exe (libenvsieve.so, envsieve-daemon), in the order
// to look: next to exe, then in ../lib/envsieve/ beside it. Never PATH.
func Companions(exe, name string) []string {
	dir := filepath.Dir(exe)
	return []string{filepath.Join(dir, name), filepath.Join(dir, "..", "lib", "envsieve", name)}
}

// Locate returns the path of libenvsieve.so: override when it is set
// (ENVSIEVE_SHIM), else next to the executable exe, else in
// ../lib/envsieve/ beside it. The path returned is absolute.
func Locate(override, exe string) (string, error) {
	var cands []string
	if override != "" {
		cands = []string{override}
	} else if exe != "" {
		cands = Companions(exe, libName)
	}
	for _, c := range cands {
		abs, err := filepath.Abs(c)
		if err != nil {
			continue
		}
		if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
			return abs, nil
		}
	}
	if override != "" {
		return "", fmt.Errorf("ENVSIEVE_SHIM=%s: %w", override, ErrNotFound)
	}
	return "", fmt.Errorf("%w next to %s or in ../lib/envsieve/ (build it with make)", ErrNotFound, exe)
}

// InitName is the file name of envsieve-init, the init of an isolated
// launch's namespaces in C (internal/proc.Isolate), installed beside the shim.
const InitName = "envsieve-init"

// LocateInit returns the path of envsieve-init next to the shim lib, or an
// error wrapping ErrNotFound.
func LocateInit(lib string) (string, error) { return beside(lib, InitName) }

// LocateStart returns the path of envsieve-start next to the shim lib, or
// an error wrapping ErrNotFound.
func LocateStart(lib string) (string, error) { return beside(lib, StartName) }

// beside returns the path of the executable name in lib's directory, or an
// error wrapping ErrNotFound.
func beside(lib, name string) (string, error) {
	p := filepath.Join(filepath.Dir(lib), name)
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", &missingError{Name: name, Path: p}
	}
	return p, nil
}

// missingError is a companion of the shim (envsieve-start, envsieve-init)
// that is not installed where the shim is. It names that program, not the
// shim, and wraps ErrNotFound.
type missingError struct {
	Name string // the program: StartName or InitName
	Path string // where it was looked for
}

func (e *missingError) Error() string {
	return fmt.Sprintf("%s is not installed: no executable %s", e.Name, e.Path)
}

// Unwrap returns ErrNotFound.
func (e *missingError) Unwrap() error { return ErrNotFound }

// Preload returns the LD_PRELOAD value that loads lib before what the
// child's environment already preloads.
func Preload(lib string, env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, shimwire.EnvPreload+"="); ok && v != "" {
			return lib + ":" + v
		}
	}
	return lib
}
