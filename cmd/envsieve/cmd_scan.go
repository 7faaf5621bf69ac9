package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/redact"
)

func scanCmd(u *cli.UI) *cobra.Command {
	var noEntropy bool
	c := &cobra.Command{
		Use:   "scan FILE...",
		Short: "Report secret-looking strings in files: position, kind and fingerprint, never the value",
		Long: `scan reports every secret-looking string in the files (known token formats,
JWTs, private keys, URLs with a password, and high-entropy tokens) as
FILE:LINE:COLUMN: KIND fingerprint=xxxxxxxx, where the fingerprint is the
HMAC of the value under this install's key (the same as in [HIDDEN:xxxxxxxx]).
Git SHAs, UUIDs and integrity hashes are not reported. Exit status 1 when
something was found, 0 when not. "-" reads stdin.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			key, err := cli.InstallKeyFor(u)
			if err != nil {
				return err
			}
			found := 0
			for _, name := range files {
				var src []byte
				if name == "-" {
					src, err = io.ReadAll(os.Stdin)
				} else {
					src, err = os.ReadFile(name)
				}
				if err != nil {
					return fmt.Errorf("scan: %w", err)
				}
				found += scanOne(u.Out, name, src, key, detect.ScanOptions{NoEntropy: noEntropy})
			}
			if found > 0 {
				return cli.ExitStatus(1)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&noEntropy, "no-entropy", false, "report known formats only, not high-entropy tokens")
	return c
}

// scanOne prints the findings of one file and returns their number.
func scanOne(w io.Writer, name string, src, key []byte, opt detect.ScanOptions) int {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	n, line, lineStart := 0, 1, 0
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
