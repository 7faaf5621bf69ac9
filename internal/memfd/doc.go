// Package memfd holds a secret's value in a sealed anonymous memory file
// (Linux): read-only once made, reachable by no path, only by an inherited
// descriptor, and gone when its last holder exits. Elsewhere it reports that
// it is not supported and every call fails.
package memfd
