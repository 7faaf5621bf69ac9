//go:build linux

package memfd

import (
	"io"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMemfd: the value is readable through the descriptor and by reopening
// /proc/self/fd/N (what /dev/fd/N does), and nothing can change it.
func TestMemfd(t *testing.T) {
	const v = "memfd-value-9d2c"
	f, err := New("T", v)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != v {
		t.Fatalf("read = %q, %v", b, err)
	}
	path := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if b, err := os.ReadFile(path); err != nil || string(b) != v {
		t.Fatalf("reopen = %q, %v", b, err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the descriptor is writable")
	}
	if w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, werr := w.Write([]byte("x"))
		w.Close()
		if werr == nil {
			t.Error("a reopened descriptor could write: the seals do not hold")
		}
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL; err != nil || seals&want != want {
		t.Errorf("seals = %#x, %v", seals, err)
	}
	if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
		t.Error("close-on-exec is not set before Inherit")
	}
	if err := Inherit(f); err != nil {
		t.Fatal(err)
	}
	if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC != 0 {
		t.Error("Inherit left close-on-exec set")
	}
}
