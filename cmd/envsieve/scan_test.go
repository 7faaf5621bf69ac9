package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/detect"
)

const scanToken = "ghp_Zq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9X"

func TestScanPatch(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	tests := []struct {
		name, patch string
		want        []string // the FILE:LINE:COLUMN of each finding
	}{
		{"added lines at their new line", "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -3,0 +4,2 @@\n+x\n+k=" + scanToken + "\n", []string{"f:5:3"}},
		{"a removed line is not scanned", "@@ -1 +1 @@\n-" + scanToken + "\n+clean\n", nil},
		{"two hunks", "@@ -1,0 +2 @@\n+" + scanToken + "\n@@ -9 +10,0 @@\n-gone\n@@ -20,0 +30 @@\n+  " + scanToken + "\n\\ No newline at end of file\n", []string{"f:2:1", "f:30:3"}},
		{"binary: no hunk", "diff --git a/b b/b\nBinary files a/b and b/b differ\n", nil},
		{"a header that looks like a hunk is not one", "+++ b/" + scanToken + "\n@@ -0,0 +1 @@\n+clean\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := scanPatch(&out, "f", []byte(tt.patch), key, detect.ScanOptions{NoEntropy: true})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tt.want) {
				t.Fatalf("got %d findings, want %d: %s", n, len(tt.want), out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w+": github-token") {
					t.Errorf("no %s in %q", w, out.String())
				}
			}
			if strings.Contains(out.String(), "ghp_") {
				t.Errorf("a value in the output: %q", out.String())
			}
		})
	}
	if _, err := scanPatch(&bytes.Buffer{}, "f", []byte("@@ -1 +x @@\n+a\n"), key, detect.ScanOptions{}); err == nil {
		t.Error("a hunk header that does not parse: want an error")
	}
}

// FuzzScanPatch: any patch git could print (or not) is scanned without a
// panic, and no finding's line is before its hunk's first line.
func FuzzScanPatch(f *testing.F) {
	f.Add([]byte("@@ -3,0 +4,2 @@\n+x\n+k=" + scanToken + "\n"))
	f.Add([]byte("Binary files a/b and b/b differ\n"))
	f.Add([]byte("@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n@@ -5 +0,0 @@\n"))
	key := bytes.Repeat([]byte{7}, 32)
	f.Fuzz(func(t *testing.T, patch []byte) {
		var out bytes.Buffer
		n, err := scanPatch(&out, "f", patch, key, detect.ScanOptions{})
		if err != nil {
			return
		}
		if got := strings.Count(out.String(), "\n"); got != n {
			t.Fatalf("%d findings, %d lines printed", n, got)
		}
	})
}
