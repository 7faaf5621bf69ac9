//go:build linux

package launch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// endHandleHelperEnv makes the test binary the tree's side of
// TestEndHandlePowers (TestEndHandleHelper).
const endHandleHelperEnv = "ENVSIEVE_TEST_ENDHANDLE"

// TestEndHandleHelper is not a test: run by TestEndHandlePowers in a user
// and a pid namespace below the test's, as an unprivileged user (where the
// namespace seal puts the tree), it receives a program's pidfd on the
// socket that is its descriptor 3, as a caller receives one with "begun",
// tries what the tree could do with it, prints what the kernel said, and
// waits for the program's end through it.
func TestEndHandleHelper(t *testing.T) {
	if os.Getenv(endHandleHelperEnv) == "" {
		return
	}
	errno := func(err error) string {
		var e syscall.Errno
		if errors.As(err, &e) {
			return unix.ErrnoName(e)
		}
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(3, buf, oob, 0)
	var pidfd = -1
	if err == nil {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				pidfd = fds[0]
			}
		}
	}
	if pidfd < 0 {
		fmt.Printf("no pidfd %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("signal %s\n", errno(unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, 0)))
	fd, err := unix.PidfdGetfd(pidfd, 1, 0)
	if err == nil {
		unix.Close(fd)
	}
	fmt.Printf("getfd %s\n", errno(err))
	// PIDFD_GET_INFO (Linux 6.13): what any holder may ask, the pid and
	// credentials, refused to a process that cannot see the pid (EREMOTE;
	// ESRCH on some versions); before 6.13 there is no such ioctl
	// (ENOTTY).
	var info [64]byte
	info[0] = 0x1 | 0x2 | 0x4 // PIDFD_INFO_PID, _CREDS, _CGROUPID
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), 0xC040FF0B, uintptr(unsafe.Pointer(&info[0])))
	refused := "refused"
	if e != unix.EREMOTE && e != unix.ESRCH && e != unix.ENOTTY {
		refused = errno(e)
	}
	fmt.Printf("info %s\n", refused)
	pfd := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	fmt.Printf("running %v %s\n", n == 0, errno(err))
	fmt.Printf("waiting\n")
	n, err = unix.Poll(pfd, 30000)
	fmt.Printf("ended %v %s\n", n == 1 && pfd[0].Revents&unix.POLLIN != 0, errno(err))
	os.Exit(0)
}

// TestEndHandlePowers: the pidfd a caller under the namespace seal gets
// with "begun" (endHandle) tells it the program's end and nothing else. A
// process in a user and a pid namespace below the launcher's, as an
// unprivileged user, holding the pidfd of a program of that same user:
// pidfd_send_signal is refused (EINVAL: its pid namespace is neither the
// program's nor an ancestor of it), pidfd_getfd too (EPERM: no capability
// in the program's user namespace), and so is PIDFD_GET_INFO (the pid is not
// in its namespace), while poll sees the program end.
// endHandle gives such a process a pidfd, and gives none to one in the
// launcher's own namespaces (which sees the program by its pid).
func TestEndHandlePowers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the program and the tree run as nobody, the tree in namespaces of its own")
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}
	// The program: the user's, in the launcher's namespaces.
	prog := exec.Command("sleep", "30")
	prog.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Process.Kill(); prog.Wait() })
	pidfd, err := unix.PidfdOpen(prog.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if h := endHandle(prog.Process.Pid, pidfd); h != nil {
		h.Close()
		t.Error("endHandle gave a pidfd to a process in the launcher's own namespaces")
	}

	// The tree's side: a copy of the test binary nobody can run, connected
	// by a socket pair as a caller is to the launcher.
	dir, err := os.MkdirTemp("", "envsieve-endhandle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "tree")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sv[0])
	theirs := os.NewFile(uintptr(sv[1]), "socket")
	defer theirs.Close()
	var helper *exec.Cmd
	var out *bufio.Scanner
	for i := 0; ; i++ { // a parallel test's fork may hold the copy open for writing a moment
		helper = exec.Command(exe, "-test.run=^TestEndHandleHelper$")
		helper.Env = []string{endHandleHelperEnv + "=1"}
		helper.Dir = dir
		helper.ExtraFiles = []*os.File{theirs}
		helper.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 65534, HostID: 65534, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 65534, HostID: 65534, Size: 1}},
			Credential:  nobody,
		}
		helper.Stderr = os.Stderr
		pipe, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		out = bufio.NewScanner(pipe)
		err = helper.Start()
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ETXTBSY) || i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	theirs.Close()
	// Asked about the helper, as the launcher asks about a caller.
	h := endHandle(helper.Process.Pid, pidfd)
	if h == nil {
		t.Fatal("endHandle gave no pidfd to a process in a user and pid namespace below the launcher's")
	}
	err = unix.Sendmsg(sv[0], []byte{1}, unix.UnixRights(int(h.Fd())), nil, 0)
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"signal EINVAL", "getfd EPERM", "info refused", "running true ok", "waiting"}
	for _, w := range want {
		if !out.Scan() {
			t.Fatalf("the helper said nothing more; want %q", w)
		}
		if got := out.Text(); got != w {
			t.Errorf("the tree's side: %q, want %q", got, w)
		}
	}
	if err := prog.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the program is gone before its end: %v", err)
	}
	prog.Process.Kill()
	if !out.Scan() || !strings.HasPrefix(out.Text(), "ended true") {
		t.Errorf("the tree's side did not see the program end: %q", out.Text())
	}
}
