//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// shimDirPrefix names the directories the shim's sockets live in
// (shimwire.Listen).
const shimDirPrefix = "envsieve-shim-"

// socketDirs are the socket directories a launcher makes in its socket
// directory, by prefix, with the name of the socket that listens while it
// lives: the shim's, and the ssh agent filter's (startSSHAgent).
var socketDirs = map[string]string{shimDirPrefix: "s", sshDirPrefix: "agent.sock"}

// staleAfter is how old a socket directory must be before it may be
// removed: one made a moment ago may not be listening yet.
const staleAfter = 10 * time.Second

// sweepSocketDirs starts removing, in the background, the socket
// directories in dir that launchers killed before they could remove them
// left behind: this user's, private, older than staleAfter, whose socket
// nothing listens on (/proc/net/unix; no connection is made to a live
// launcher). The returned function waits for it to finish.
func sweepSocketDirs(dir string) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		var candidates []string
		uid := uint32(os.Getuid())
		for _, e := range ents {
			if socketName(e.Name()) == "" || !e.IsDir() {
				continue
			}
			p := dir + "/" + e.Name()
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil || st.Uid != uid || st.Mode&0o777 != 0o700 ||
				time.Since(time.Unix(st.Mtim.Unix())) < staleAfter {
				continue
			}
			candidates = append(candidates, p)
		}
		if len(candidates) == 0 {
			return
		}
		listening, err := listeningUnix()
		if err != nil {
			return
		}
		for _, p := range candidates {
			if !listening[p+"/"+socketName(filepath.Base(p))] {
				_ = os.RemoveAll(p)
			}
		}
	}()
	return func() { <-done }
}

// socketName returns the socket a directory of that name holds while its
// launcher lives; "" for a name that is not a launcher's socket directory.
func socketName(dir string) string {
	for prefix, sock := range socketDirs {
		if strings.HasPrefix(dir, prefix) {
			return sock
		}
	}
	return ""
}

// listeningUnix returns the paths of the unix sockets that listen, in
// this network namespace.
func listeningUnix() (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	return parseListening(b), nil
}

// parseListening returns the paths of the listening sockets in the text of
// /proc/net/unix. A path is any user's choice: one holding a newline can
// add a line, which can only keep a directory from being removed.
func parseListening(b []byte) map[string]bool {
	paths := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000
		// is __SO_ACCEPTCON, a listening socket.
		if len(f) < 8 {
			continue
		}
		if flags, err := strconv.ParseUint(f[3], 16, 32); err == nil && flags&0x10000 != 0 {
			paths[strings.Join(f[7:], " ")] = true
		}
	}
	return paths
}
