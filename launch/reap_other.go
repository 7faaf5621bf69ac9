//go:build !linux

package launch

import "syscall"

// tree is Linux-only: elsewhere a launch's tree is not held (no child
// subreaper), and what it detaches may outlive it.
type tree struct{}

func holdTree() (*tree, error) { return nil, nil }

func (t *tree) end() (int, error) { return 0, nil }

func (c *Cmd) lifetimeAttr(a *syscall.SysProcAttr, env []string) []string { return env }

// sweepSocketDirs is Linux-only: elsewhere a killed launcher's socket
// directory stays where the system's temporary files are cleaned.
func sweepSocketDirs(dir string) (wait func()) { return func() {} }
