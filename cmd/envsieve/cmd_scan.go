package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/redact"
)

func scanCmd(u *cli.UI) *cobra.Command {
	var (
		noEntropy, all, staged bool
		since                  string
	)
	c := &cobra.Command{
		Use:   "scan [--all] PATH... | --staged | --since REV [PATH...]",
		Short: "Report secret-looking strings in files: position, kind and fingerprint, never the value",
		Long: `scan reports every secret-looking string in the files (known token formats,
JWTs, private keys, URLs with a password, and high-entropy tokens) as
FILE:LINE:COLUMN: KIND fingerprint=xxxxxxxx, where the fingerprint is the
HMAC of the value under this install's key (the same as in [MASKED:xxxxxxxx]).
Git SHAs, UUIDs and integrity hashes are not reported. Exit status 1 when
something was found, 0 when not. "-" reads stdin.

A directory is scanned through: its regular files (symbolic links are not
followed), less .git directories, binary files (a NUL byte in the first 8000
bytes, as git decides) and, in a git work tree, what git ignores (the
tracked and untracked files git ls-files -co --exclude-standard lists; a
nested repository or submodule is not entered: name it). Outside a git work
tree no ignore file is read. --all scans every regular
file. A file named outright is always scanned.

--staged scans the lines git is about to commit (git diff --cached), and
--since REV the lines git diff REV adds, in the git work tree of the current
directory (optionally only under PATH...): only added lines, at their line
in the new file; binary files are skipped.`,
		Example: `  envsieve scan .
  envsieve scan --staged        # in a pre-commit hook
  envsieve scan --since origin/main`,
		RunE: func(_ *cobra.Command, args []string) error {
			opt := detect.ScanOptions{NoEntropy: noEntropy}
			if staged && since != "" {
				return cli.UsageError{Err: errors.New("scan: --staged and --since: give one")}
			}
			if !staged && since == "" && len(args) == 0 {
				return cli.UsageError{Err: errors.New("scan: give a FILE or DIR, - for stdin, --staged or --since REV")}
			}
			key, err := cli.InstallKeyFor(u)
			if err != nil {
				return err
			}
			found := 0
			if staged || since != "" {
				if all {
					return cli.UsageError{Err: errors.New("scan: --all is for directories, not with --staged or --since")}
				}
				if found, err = scanDiff(u.Out, since, args, key, opt); err != nil {
					return err
				}
			} else {
				for _, name := range args {
					n, err := scanPath(u.Out, name, all, key, opt)
					if err != nil {
						return err
					}
					found += n
				}
			}
			if found > 0 {
				return cli.ExitStatus(1)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&noEntropy, "no-entropy", false, "report known formats only, not high-entropy tokens")
	c.Flags().BoolVar(&all, "all", false, "in a directory, scan every regular file: .git, binary and git-ignored files too")
	c.Flags().BoolVar(&staged, "staged", false, "scan the lines git is about to commit (git diff --cached)")
	c.Flags().StringVar(&since, "since", "", "scan the lines git diff `REV` adds")
	return c
}

// scanPath scans stdin ("-"), a file, or a directory's files.
func scanPath(w io.Writer, name string, all bool, key []byte, opt detect.ScanOptions) (int, error) {
	if name == "-" {
		src, err := io.ReadAll(os.Stdin)
		if err != nil {
			return 0, fmt.Errorf("scan: %w", err)
		}
		return scanOne(w, name, src, key, opt), nil
	}
	fi, err := os.Stat(name)
	if err != nil {
		return 0, fmt.Errorf("scan: %w", err)
	}
	if !fi.IsDir() {
		src, err := os.ReadFile(name)
		if err != nil {
			return 0, fmt.Errorf("scan: %w", err)
		}
		return scanOne(w, name, src, key, opt), nil
	}
	files, err := treeFiles(name, all)
	if err != nil {
		return 0, err
	}
	found := 0
	for _, f := range files {
		// Only regular files: a symbolic link git lists is not followed
		// out of the tree.
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("scan: %w", err)
		}
		if !all && looksBinary(src) {
			continue
		}
		found += scanOne(w, f, src, key, opt)
	}
	return found, nil
}

// looksBinary reports whether src looks binary as git decides: a NUL byte in
// its first 8000 bytes.
func looksBinary(src []byte) bool {
	return bytes.IndexByte(src[:min(len(src), 8000)], 0) >= 0
}

// treeFiles returns the files under dir, as dir/relative paths in lexical
// order: every one with all; otherwise, in a git work tree, those git
// ls-files -co --exclude-standard lists, and elsewhere all but those under
// a .git directory.
func treeFiles(dir string, all bool) ([]string, error) {
	if !all && inWorkTree(dir) {
		out, err := gitOutput(dir, "ls-files", "-z", "-c", "-o", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		var files []string
		seen := map[string]bool{}
		for _, rel := range strings.Split(string(out), "\x00") {
			if rel == "" || seen[rel] {
				continue // ls-files lists an unmerged path once per stage
			}
			seen[rel] = true
			files = append(files, filepath.Join(dir, rel))
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && !all {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	return files, nil
}

// inWorkTree reports whether dir is in a git work tree (false when git is
// not installed).
func inWorkTree(dir string) bool {
	out, err := gitOutput(dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// gitOutput runs git in dir, with no external diff or text conversion and
// no pager, and returns its standard output; an error carries its stderr.
func gitOutput(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir, "--no-pager"}, args...)...)
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scan: git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// scanDiff scans the lines git diff adds: the index against HEAD with
// since "" (--staged), the work tree against since otherwise. paths limit
// it, as git pathspecs from the current directory. File names are printed
// relative to the current directory.
func scanDiff(w io.Writer, since string, paths []string, key []byte, opt detect.ScanOptions) (int, error) {
	if strings.HasPrefix(since, "-") {
		return 0, cli.UsageError{Err: fmt.Errorf("scan: --since: %q is not a revision", since)}
	}
	top, err := gitOutput(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return 0, err
	}
	root := strings.TrimSpace(string(top))
	cwd, err := os.Getwd()
	if err != nil {
		return 0, fmt.Errorf("scan: %w", err)
	}
	diff := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color"}
	if since == "" {
		diff = append(diff, "--cached")
	} else {
		if _, err := gitOutput(".", "rev-parse", "--verify", "--quiet", since+"^{commit}"); err != nil {
			return 0, fmt.Errorf("scan: --since: %q is not a commit", since)
		}
		diff = append(diff, since)
	}
	// Names from the current directory (pathspecs are), relative to the
	// top (what diff prints with --name-only).
	names, err := gitOutput(".", append(append(slices.Clone(diff), "--name-only", "-z", "--diff-filter=ACMR", "--"), paths...)...)
	if err != nil {
		return 0, err
	}
	found := 0
	for _, rel := range strings.Split(string(names), "\x00") {
		if rel == "" {
			continue
		}
		patch, err := gitOutput(root, append(slices.Clone(diff), "-U0", "--", ":(top,literal)"+rel)...)
		if err != nil {
			return 0, err
		}
		shown := filepath.Join(root, rel)
		if r, err := filepath.Rel(cwd, shown); err == nil {
			shown = r
		}
		n, err := scanPatch(w, shown, patch, key, opt)
		if err != nil {
			return 0, err
		}
		found += n
	}
	return found, nil
}

// scanPatch scans the added lines of one file's -U0 patch, each run of them
// at its line in the new file.
func scanPatch(w io.Writer, name string, patch, key []byte, opt detect.ScanOptions) (int, error) {
	found := 0
	lines := bytes.SplitAfter(patch, []byte("\n"))
	i := 0
	for i < len(lines) && !bytes.HasPrefix(lines[i], []byte("@@ ")) {
		i++ // the header; "Binary files ... differ" has no hunk
	}
	for i < len(lines) {
		first, err := hunkStart(lines[i])
		if err != nil {
			return 0, fmt.Errorf("scan: %s: %w", name, err)
		}
		i++
		var run []byte
		for ; i < len(lines) && !bytes.HasPrefix(lines[i], []byte("@@ ")); i++ {
			if l, ok := bytes.CutPrefix(lines[i], []byte("+")); ok {
				run = append(run, l...)
			}
		}
		found += scanAt(w, name, run, first, key, opt)
	}
	return found, nil
}

// hunkStart returns the new file's first line of a hunk header
// "@@ -a[,b] +c[,d] @@".
func hunkStart(h []byte) (int, error) {
	_, rest, ok := bytes.Cut(h, []byte(" +"))
	if ok {
		num, _, _ := bytes.Cut(rest, []byte(" "))
		num, _, _ = bytes.Cut(num, []byte(","))
		if n, err := strconv.Atoi(string(num)); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("git diff: a hunk header that does not parse: %q", bytes.TrimSpace(h))
}

// scanOne prints the findings of one file and returns their number.
func scanOne(w io.Writer, name string, src, key []byte, opt detect.ScanOptions) int {
	return scanAt(w, name, src, 1, key, opt)
}

// scanAt prints the findings of src, whose first line is line first of
// the file name, and returns their number.
func scanAt(w io.Writer, name string, src []byte, first int, key []byte, opt detect.ScanOptions) int {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	n, line, lineStart := 0, first, 0
	pos := 0
	detect.Scan(src, opt, func(f detect.Finding) bool {
		for ; pos < f.Start; pos++ {
			if src[pos] == '\n' {
				line, lineStart = line+1, pos+1
			}
		}
		col := f.Start - lineStart + 1
		fmt.Fprintf(bw, "%s:%d:%d: %s fingerprint=%s\n", name, line, col, f.Kind, redact.Fingerprint(key, src[f.Start:f.End]))
		n++
		return true
	})
	return n
}
