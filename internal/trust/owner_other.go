//go:build !unix

package trust

import "os"

// owner is not known here (Windows): only the mode bits are judged.
func owner(os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
