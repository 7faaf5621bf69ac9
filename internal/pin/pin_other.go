//go:build !linux

package pin

import "errors"

func open(string) (*Program, error) {
	return nil, errors.ErrUnsupported
}

// KeepOpen is Linux-only, as Open is.
func (p *Program) KeepOpen() error { return errors.ErrUnsupported }
