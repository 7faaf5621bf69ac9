package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
)

// ErrDaemonRunning is returned by [Server.Listen] when another daemon
// answers on the socket: a live socket is never taken over. Use errors.Is.
var ErrDaemonRunning = errors.New("another envsieve daemon is running on this socket")

// SocketName is the socket's file name in the runtime directory.
const SocketName = "envsieve.sock"

// DefaultSocket returns the default socket path under runtimeDir (the user's
// $XDG_RUNTIME_DIR). When runtimeDir is a directory others may enter, such
// as /tmp when XDG_RUNTIME_DIR is unset, the socket goes in a private
// subdirectory, envsieve-UID.
//
// A runtimeDir too deep for a socket's path (longer than [MaxSocketPath]
// with the socket's name) gives way to /tmp, the same for the daemon and
// its clients; the private subdirectory there is checked as ever, so one
// another user made first is refused, never used.
func DefaultSocket(runtimeDir string) string {
	private := filepath.Join("envsieve-"+strconv.Itoa(os.Getuid()), SocketName)
	if len(filepath.Join(runtimeDir, private)) > MaxSocketPath {
		runtimeDir = "/tmp"
	}
	fi, err := os.Stat(runtimeDir)
	if err == nil && privateDir(fi) == nil {
		return filepath.Join(runtimeDir, SocketName)
	}
	return filepath.Join(runtimeDir, private)
}
