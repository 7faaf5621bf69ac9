package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxFileSize is the largest policy file envsieve reads, in bytes.
const maxFileSize = 1 << 20

// errNotPolicyFile is returned (wrapped) by [ReadFile] for a path that is
// not a file envsieve reads a policy from: a symbolic link, a FIFO, a
// device, a directory, a file of another user, or one over [maxFileSize].
// Use errors.Is.
var errNotPolicyFile = errors.New("not a policy file")

// ReadFile reads a policy file the way envsieve trusts one: opened without
// following a symbolic link (even as its last component), without blocking
// (a FIFO is refused, never waited on), a regular file owned by the user
// running envsieve or by root, at most [maxFileSize] bytes, and read whole.
// So a parse error's excerpt only ever quotes the policy's own text: a
// project-local .envsieve.yaml that an agent made a link to
// /proc/self/environ is refused before a byte of it is read.
func ReadFile(path string) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi)
	}
	if err := checkOwner(fi); err != nil {
		return nil, err
	}
	if fi.Size() > maxFileSize {
		return nil, notPolicy(fmt.Sprintf("%d bytes, over the limit of %d", fi.Size(), maxFileSize))
	}
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(src) > maxFileSize {
		return nil, notPolicy(fmt.Sprintf("grew past the limit of %d bytes while read", maxFileSize))
	}
	return src, nil
}

// notPolicy is an error that wraps [errNotPolicyFile] with its own words.
type notPolicy string

func (e notPolicy) Error() string        { return string(e) }
func (e notPolicy) Is(target error) bool { return target == errNotPolicyFile }

// errSymlink is said when a policy path is a symbolic link.
var errSymlink = notPolicy("a symbolic link: envsieve reads a policy only from a regular file (name the file itself)")

// notRegular names what fi is instead of a regular file.
func notRegular(fi os.FileInfo) error {
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what += " but a directory"
	case m&os.ModeNamedPipe != 0:
		what += " but a named pipe"
	case m&os.ModeSocket != 0:
		what += " but a socket"
	case m&os.ModeDevice != 0:
		what += " but a device"
	}
	return notPolicy(what)
}
