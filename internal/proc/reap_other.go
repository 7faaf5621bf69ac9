//go:build !linux

package proc

import "syscall"

// Tree is Linux-only: elsewhere a launch's tree is not held (no child
// subreaper), and what it detaches may outlive it.
type Tree struct{}

func HoldTree() (*Tree, error) { return nil, nil }

func (t *Tree) End() (int, error) { return 0, nil }

func (c *Cmd) lifetimeAttr(a *syscall.SysProcAttr, env []string) []string { return env }
