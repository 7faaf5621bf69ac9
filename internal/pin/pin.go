// Package pin holds a program that a rule pins by its SHA-256 (`match:
// {path, sha256}` in the policy): a program in a place the agent's tree can
// write, such as ~/bin or a project's build output, which a rule may grant
// a real value to only as the exact bytes its author hashed.
//
// Hashing a file and then running it by its name is a race the tree wins:
// it can replace the file in between. So [Open] copies the program into a
// sealed memory file (Linux memfd: no write, grow, shrink or new seals),
// hashes that copy, and the launcher runs the copy. What was hashed is
// what runs, whatever happens to the file afterwards. Elsewhere than Linux
// there is no such file, and Open fails: a pinned rule then applies to
// nothing (fail closed).
package pin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

// MaxSize bounds the program a rule may pin: its copy lives in memory for
// as long as it runs.
const MaxSize = 512 << 20

// ErrTooLarge is wrapped when the program is larger than [MaxSize].
var ErrTooLarge = errors.New("larger than a pinned program may be")

// Program is the sealed copy of a pinned program.
type Program struct {
	// File is the sealed memory file holding the program's bytes; it is
	// close-on-exec in this process.
	File *os.File
	// SHA256 is the digest of File's content, in lowercase hex.
	SHA256 string
	// Script says the bytes start with "#!": the kernel hands the file to
	// an interpreter by name, so the file must stay open across the exec.
	Script bool
}

// Close closes the memory file.
func (p *Program) Close() error {
	if p == nil || p.File == nil {
		return nil
	}
	return p.File.Close()
}

// Path is the name under which this process can exec the copy:
// /proc/self/fd/N. A child that inherits File as its descriptor fd execs
// it as FDPath(fd).
func (p *Program) Path() string { return FDPath(int(p.File.Fd())) }

// FDPath is the name of descriptor fd for the process that opens it.
func FDPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Open copies the regular file at path (a real path: a symbolic link in
// its last element is refused) into a sealed memory file and hashes the
// copy. The error names the path, never the content.
func Open(path string) (*Program, error) {
	p, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", path, err)
	}
	return p, nil
}
