//go:build !unix

package launch

// writableByUs is true: this system has no sealed tree whose writes the
// launcher could tell from its own.
func writableByUs(string) bool { return true }
