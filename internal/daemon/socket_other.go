//go:build !unix

package daemon

import (
	"errors"
	"io/fs"
	"net"
	"os"
)

// MaxSocketPath is the longest path a unix socket may have: Windows's
// sun_path holds 108 bytes, as Linux's does.
const MaxSocketPath = 107

// errNoDaemon says where the daemon runs.
var errNoDaemon = errors.New("the daemon needs unix sockets with peer credentials and file locks: not supported on this system")

// privateDir cannot judge ownership here.
func privateDir(fi fs.FileInfo) error {
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

// listen is not supported here: the daemon says so and does not start.
func listen(string) (*net.UnixListener, *os.File, error) { return nil, nil, errNoDaemon }
