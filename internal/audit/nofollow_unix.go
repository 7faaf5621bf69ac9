//go:build unix

package audit

import "syscall"

// oNoFollow refuses a log path that is a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW
