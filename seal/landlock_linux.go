//go:build linux

package seal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The rights a Landlock seal handles. Reading a directory's names and
// executing are not handled: a sealed tree lists every directory (a masked
// directory's names, not its contents) and runs what it could run before.
const (
	llRead  = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
	llHandled = llRead | llWrite
	// llFile are the handled rights that apply to a file that is not a
	// directory (the kernel refuses a rule giving a file any other).
	llFile = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
)

// landlockMinABI is the first Landlock ABI that controls truncate(2):
// below it a sealed tree could still empty the store or the policy.
const landlockMinABI = 3

// LandlockABI returns the kernel's Landlock ABI version, or an error when
// the kernel has none (not built in, or not enabled at boot).
func LandlockABI() (int, error) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("the kernel has no Landlock (landlock_create_ruleset: %v)", errno)
	}
	return int(abi), nil
}

// LandlockAvailable returns nil when [Restrict] can seal a tree here, else
// an error saying why not.
func LandlockAvailable() error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < landlockMinABI {
		return fmt.Errorf("the kernel's Landlock ABI %d is older than %d, the first to control truncate (Linux 6.2)", abi, landlockMinABI)
	}
	return nil
}

// Ruleset returns a Landlock ruleset that seals s: a process that enters
// it (no_new_privs set, landlock_restrict_self: proc.Restrict, or
// envsieve-init's Landlock init, which holds no Go runtime to build it)
// and every program it then executes can read or write no file under a
// masked path and change nothing under a read-only path. The caller owns
// the descriptor (close-on-exec); nothing may start unsealed where it
// fails.
//
// Landlock only grants, from the file's place in the real directory tree
// up: so the domain grants every right to each existing entry of each
// directory above a sealed path (its "spine": /, /home, HOME, ~/.config
// and the like) except the sealed ones, and no right over the spine
// directories themselves. What that costs (package doc): an entry created
// in a spine directory after the start cannot be created or read in the
// tree. Entries are opened without following links, so nothing swapped in
// while the domain is built can widen it.
func Ruleset(s Spec) (int, error) {
	if err := LandlockAvailable(); err != nil {
		return -1, err
	}
	return ruleset(s, llHandled)
}

// ruleset creates a Landlock ruleset that handles the rights handled and
// holds the rules of s's seal (planLandlock); the caller owns the
// descriptor.
func ruleset(s Spec, handled uint64) (int, error) {
	rules, err := planLandlock(s, handled)
	defer closeRules(rules)
	if err != nil {
		return -1, err
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return -1, fmt.Errorf("seal: landlock_create_ruleset: %v", errno)
	}
	for _, r := range rules {
		pb := unix.LandlockPathBeneathAttr{Allowed_access: r.access, Parent_fd: int32(r.fd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&pb)), 0, 0, 0); errno != 0 {
			unix.Close(int(rfd))
			return -1, fmt.Errorf("seal: landlock_add_rule %s: %v", r.path, errno)
		}
	}
	return int(rfd), nil
}

// closeRules closes the rules' descriptors: each run of consecutive
// numbers with one close_range, for a seal opens one descriptor for each
// entry above a sealed path, and mostly gets them in a row. A run is
// closed whole only when every number in it is a rule's: the rules hold
// them all open, so no other descriptor can be in it.
func closeRules(rules []llRule) {
	fds := make([]int, len(rules))
	for i, r := range rules {
		fds[i] = r.fd
	}
	slices.Sort(fds)
	for i := 0; i < len(fds); {
		j := i + 1
		for j < len(fds) && fds[j] == fds[j-1]+1 {
			j++
		}
		if j-i == 1 || unix.CloseRange(uint(fds[i]), uint(fds[j-1]), 0) != nil {
			for _, fd := range fds[i:j] {
				unix.Close(fd)
			}
		}
		i = j
	}
}

// llRule is one rule of a Landlock seal: the rights access beneath the
// file open at fd (O_PATH), which is path.
type llRule struct {
	path   string
	fd     int
	access uint64
}

// planLandlock opens the files a Landlock seal of s, handling the rights
// handled, grants rights to, and says which. On error the rules returned
// so far still hold open descriptors, for the caller to close.
func planLandlock(s Spec, handled uint64) ([]llRule, error) {
	masked, err := realPaths(s.Mask)
	if err != nil {
		return nil, err
	}
	readOnly, err := realPaths(s.ReadOnly)
	if err != nil {
		return nil, err
	}
	writes, err := realPaths(s.Write)
	if err != nil {
		return nil, err
	}
	// A write path matters beneath a read-only path, and not at or
	// beneath a masked one, nor at a read-only one (which wins).
	write := map[string]bool{}
	for p := range writes {
		if !readOnly[p] && beneathAny(p, readOnly) && !beneathAny(p, masked) && !masked[p] {
			write[p] = true
		}
	}
	// A directory is on the read spine when a masked path lies beneath
	// it, on the write spine when a masked, read-only or write path does;
	// the children index says which of its entries lead there.
	readSpine, writeSpine := map[string]bool{}, map[string]bool{}
	children := map[string][]string{}
	climb := func(p string, spines ...map[string]bool) {
		for p != "/" {
			dir := filepath.Dir(p)
			if !slices.Contains(children[dir], filepath.Base(p)) {
				children[dir] = append(children[dir], filepath.Base(p))
			}
			for _, m := range spines {
				m[dir] = true
			}
			p = dir
		}
	}
	for p := range masked {
		climb(p, readSpine, writeSpine)
	}
	for p := range readOnly {
		climb(p, writeSpine)
	}
	for p := range write {
		climb(p, writeSpine)
	}
	w := &llWalk{handled: handled, masked: masked, readOnly: readOnly, write: write, readSpine: readSpine, writeSpine: writeSpine, children: children}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("seal: open /: %w", err)
	}
	if !(readSpine["/"] || writeSpine["/"]) {
		w.add("/", root, true, readOnly["/"])
		return w.rules, nil
	}
	defer unix.Close(root)
	if !masked["/"] {
		if err := w.addDup("/", root, true, readOnly["/"]); err != nil {
			return w.rules, err
		}
	}
	return w.rules, w.walk("/", root, readOnly["/"])
}

// beneathAny reports whether p lies strictly beneath one of the paths of
// set.
func beneathAny(p string, set map[string]bool) bool {
	for d := p; d != "/"; {
		d = filepath.Dir(d)
		if set[d] {
			return true
		}
	}
	return false
}

// llWalk walks the spine directories of a Landlock seal.
type llWalk struct {
	handled               uint64
	masked, readOnly      map[string]bool
	write                 map[string]bool
	readSpine, writeSpine map[string]bool
	children              map[string][]string
	rules                 []llRule
}

// add records the rule for path, open at fd, or closes fd when the path
// gets no right. readOnly says whether the path is read-only (the deepest
// read-only or write path at or above it is a read-only one).
func (w *llWalk) add(path string, fd int, dir, readOnly bool) {
	var access uint64
	if !w.readSpine[path] {
		access |= llRead
	}
	if !w.writeSpine[path] && !readOnly {
		access |= llWrite
	}
	access &= w.handled
	if !dir {
		access &= llFile
	}
	if access == 0 {
		unix.Close(fd)
		return
	}
	w.rules = append(w.rules, llRule{path: path, fd: fd, access: access})
}

// addDup is add with a duplicate of fd, which stays the caller's.
func (w *llWalk) addDup(path string, fd int, dir, readOnly bool) error {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("seal: %s: %w", path, err)
	}
	w.add(path, dup, dir, readOnly)
	return nil
}

// walk adds the rules for the entries of the spine directory dir, open at
// dfd: every entry but a masked one or a symbolic link (whose target is
// governed where it lives) gets the rights no sealed path beneath it
// forbids (and no write right where it is read-only), and each entry on a spine is walked in turn, through the
// descriptor its rule was made from.
func (w *llWalk) walk(dir string, dfd int, underReadOnly bool) error {
	names := slices.Clone(w.children[dir])
	// The listing's types spare an fstat of each entry; an entry on a
	// spine (above a sealed path) is still checked on its descriptor.
	types := map[string]uint8{}
	lfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		all, err := listTypes(lfd, types)
		unix.Close(lfd)
		if err != nil {
			return fmt.Errorf("seal: list %s: %w", dir, err)
		}
		for _, n := range all {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	case errors.Is(err, unix.EACCES):
		// A directory the user cannot list (/home at mode 0711): its
		// other entries are not the user's, and get no rights.
	default:
		return fmt.Errorf("seal: list %s: %w", dir, err)
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if w.masked[p] {
			continue
		}
		spine := w.readSpine[p] || w.writeSpine[p]
		typ := types[name]
		if typ == unix.DT_LNK && !spine {
			continue // governed where its target lives
		}
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing
		}
		if err != nil {
			return fmt.Errorf("seal: open %s: %w", p, err)
		}
		// Where the listing gave no type, or the entry is on a spine, the
		// type is the descriptor's. Else an entry swapped since the
		// listing widens nothing: a link opened O_NOFOLLOW is the link
		// itself, whose rule governs nothing beneath it; a directory
		// where a file was gets only a file's rights; a file where a
		// directory was fails the rule, and the launch, closed.
		if typ == unix.DT_UNKNOWN || spine {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				unix.Close(fd)
				return fmt.Errorf("seal: stat %s: %w", p, err)
			}
			typ = unix.DT_REG
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				typ = unix.DT_DIR
			case unix.S_IFLNK:
				typ = unix.DT_LNK
			}
		}
		isDir := typ == unix.DT_DIR
		if typ == unix.DT_LNK {
			unix.Close(fd)
			if spine {
				return fmt.Errorf("seal: %s became a symbolic link", p)
			}
			continue
		}
		ro := underReadOnly
		if w.readOnly[p] {
			ro = true
		} else if w.write[p] {
			ro = false
		}
		if !w.readSpine[p] && !w.writeSpine[p] {
			w.add(p, fd, isDir, ro)
			continue
		}
		if !isDir {
			unix.Close(fd)
			return fmt.Errorf("seal: %s is not a directory", p)
		}
		err = w.addDup(p, fd, true, ro)
		if err == nil {
			err = w.walk(p, fd, ro)
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// listTypes returns the names in the directory open at fd, and records in
// types the type the listing gives each (getdents64's d_type; DT_UNKNOWN
// where the filesystem gives none).
func listTypes(fd int, types map[string]uint8) ([]string, error) {
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, errors.New("a malformed directory entry")
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				names = append(names, s)
				types[s] = b[18]
			}
			b = b[reclen:]
		}
	}
}

// realPaths resolves each existing path to its real absolute path (a
// sealed link seals its target); a path that does not exist is skipped.
// The directories above the paths are resolved once each (resolver), not
// once per path: the spec's paths share a few directories (HOME,
// ~/.config), and a seal has dozens of them.
func realPaths(paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	r := resolver{dirs: map[string]string{"/": "/"}}
	for _, p := range paths {
		real, ok, err := r.resolve(p)
		if err != nil {
			return nil, fmt.Errorf("seal %s: %w", p, err)
		}
		if !ok {
			continue
		}
		if !filepath.IsAbs(real) || strings.ContainsRune(real, 0) {
			return nil, fmt.Errorf("seal %s: not an absolute path", p)
		}
		out[filepath.Clean(real)] = true
	}
	return out, nil
}

// resolver resolves paths as filepath.EvalSymlinks does, with the real
// path of each directory it met kept in dirs ("" where it does not
// exist).
type resolver struct {
	dirs map[string]string
}

// resolve returns the real path of p, and false where it does not exist.
// A path whose last element is a link, or that is not absolute and clean,
// is resolved by filepath.EvalSymlinks itself.
func (r *resolver) resolve(p string) (string, bool, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return evalSymlinks(p)
	}
	dir, ok, err := r.dir(filepath.Dir(p))
	if err != nil || !ok {
		return "", false, err
	}
	real := filepath.Join(dir, filepath.Base(p))
	var st unix.Stat_t
	switch err := unix.Lstat(real, &st); {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		return "", false, nil
	case err != nil:
		return "", false, &os.PathError{Op: "lstat", Path: real, Err: err}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return evalSymlinks(real)
	}
	return real, true, nil
}

// dir returns the real path of the directory d (clean and absolute), from
// dirs or resolved once.
func (r *resolver) dir(d string) (string, bool, error) {
	if real, ok := r.dirs[d]; ok {
		return real, real != "", nil
	}
	real, ok, err := r.resolve(d)
	if err != nil {
		return "", false, err
	}
	if !ok {
		real = ""
	}
	r.dirs[d] = real
	return real, ok, nil
}

// evalSymlinks is filepath.EvalSymlinks, with false for a path that does
// not exist.
func evalSymlinks(p string) (string, bool, error) {
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return real, true, nil
}
