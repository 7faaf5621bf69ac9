//go:build unix

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWriteBack: renewed tokens go into the user's real file through its
// format, by rename (a new inode), with the file's mode; the rest of the
// file stays; a symlinked file is written where it points; no temporary
// file is left.
func TestWriteBack(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "store", ".credentials.json")
	os.MkdirAll(filepath.Dir(real), 0o700)
	old := `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-` + strings.Repeat("o", 40) + `","refreshToken":"sk-ant-ort01-` + strings.Repeat("p", 40) + `","expiresAt":1,"subscriptionType":"max"}}`
	if err := os.WriteFile(real, []byte(old), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	var before syscall.Stat_t
	syscall.Stat(real, &before)
	na, nr := "sk-ant-oat01-"+strings.Repeat("N", 40), "sk-ant-ort01-"+strings.Repeat("M", 40)
	lf := LoginFile{Path: link, Format: "claude-credentials"}
	if err := WriteBack(lf, "", map[string]string{"access_token": na, "refresh_token": nr, "expires_in": "3600"}, time.UnixMilli(1000)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(real)
	want := `{"claudeAiOauth":{"accessToken":"` + na + `","expiresAt":3601000,"refreshToken":"` + nr + `","subscriptionType":"max"}}`
	if string(got) != want {
		t.Errorf("the real file:\n got %s\nwant %s", got, want)
	}
	var after syscall.Stat_t
	syscall.Stat(real, &after)
	if after.Ino == before.Ino || after.Mode&0o777 != 0o640 {
		t.Errorf("not replaced by rename with its mode: inode %d -> %d, mode %o", before.Ino, after.Ino, after.Mode&0o777)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
	if ents, _ := os.ReadDir(filepath.Dir(real)); len(ents) != 1 {
		t.Errorf("a temporary file is left: %d entries", len(ents))
	}
	for _, bad := range []LoginFile{{Path: real, Format: "git-credentials"}, {Path: filepath.Join(dir, "none"), Format: "claude-credentials"}} {
		if err := WriteBack(bad, "", map[string]string{"access_token": na}, time.Now()); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	// A file the format does not understand is left as it is.
	os.WriteFile(real, []byte("not json"), 0o600)
	if err := WriteBack(lf, "", map[string]string{"access_token": na}, time.Now()); err == nil {
		t.Error("an unparseable file: no error")
	}
	if got, _ := os.ReadFile(real); string(got) != "not json" {
		t.Error("an unparseable file was changed")
	}
}
