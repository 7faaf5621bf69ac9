package nest

import (
	"os"
	"strings"
	"testing"
)

// TestDisclaim: a process that disclaims is no launcher to the walk of its
// children; a launcher's name cannot be taken.
func TestDisclaim(t *testing.T) {
	old, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile("/proc/self/comm", []byte(strings.TrimSpace(string(old))), 0)
	if err := Disclaim("envsieve"); err == nil {
		t.Errorf("Disclaim took a launcher's name")
	}
	if err := Disclaim("envsieve-verify"); err != nil {
		t.Fatal(err)
	}
	comm, _, ok := readProc(os.Getpid())
	if !ok || comm != "envsieve-verify" || Launcher(strings.TrimSpace(comm)) {
		t.Errorf("after Disclaim the walk reads %q (ok %v)", comm, ok)
	}
}
