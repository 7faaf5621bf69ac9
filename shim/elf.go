package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Static reports whether the program at path is an ELF executable without a
// PT_INTERP header: statically linked (Go programs, musl static builds), so
// the dynamic loader never runs and LD_PRELOAD has no effect. Scripts and
// other files that are not ELF report false: their interpreter decides.
func Static(path string) (bool, error) {
	interp, err := inspectFile(path, (*elfFile).hasInterp)
	if err != nil {
		return false, fmt.Errorf("static check %s: %w", path, err)
	}
	return interp == no, nil
}

// GoProgram reports whether the program at path is an ELF file built by Go:
// one with a .go.buildinfo section. Files that are not ELF report false.
func GoProgram(path string) (bool, error) {
	found, err := inspectFile(path, (*elfFile).isGo)
	if err != nil {
		return false, fmt.Errorf("go program check %s: %w", path, err)
	}
	return found == yes, nil
}

// The reader below is written by hand because debug/elf links in
// debug/dwarf and the compress packages, whose init would run at every start
// of envsieve. It reads only what a question needs (the program headers for
// Static, the section headers and names for GoProgram), each table inside
// the file and at most maxTable bytes, and refuses in it what debug/elf
// refuses.

// answer is the answer to a question about a file that may not be ELF.
type answer int

const (
	notELF answer = iota
	no
	yes
)

// inspectFile opens path and, when it is an ELF file, asks it q.
func inspectFile(path string, q func(*elfFile) (bool, error)) (answer, error) {
	f, err := os.Open(path)
	if err != nil {
		return notELF, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return notELF, err
	}
	return inspect(f, fi.Size(), q)
}

// inspect asks q of the file of size bytes r reads, when it is ELF.
func inspect(r io.ReaderAt, size int64, q func(*elfFile) (bool, error)) (answer, error) {
	e, err := readELF(r, size)
	if e == nil || err != nil {
		return notELF, err
	}
	ok, err := q(e)
	if err != nil || !ok {
		return no, err
	}
	return yes, nil
}

// Sizes and values from the System V ABI.
const (
	header32, header64   = 52, 64
	prog32, prog64       = 32, 56 // program header
	section32, section64 = 40, 64 // section header
	chdr32, chdr64       = 12, 24 // compression header

	ptInterp      = 3
	shtNull       = 0
	shtStrtab     = 3
	shfCompressed = 0x800
	shnLoreserve  = 0xff00
	shnXindex     = 0xffff

	// maxTable caps a table read into memory: executables have a few KB
	// of headers and section names.
	maxTable = 1 << 20
)

var (
	errTooLarge = errors.New("larger than 1 MiB")
	// debug/elf would decompress the table, but no linker compresses it.
	errCompressedNames = errors.New("compressed ELF section name table")
)

// elfFile is the header of an ELF file.
type elfFile struct {
	r      io.ReaderAt
	size   int64 // of the file
	bo     binary.ByteOrder
	is64   bool
	phoff  int64
	phsize int // program header size, e_phentsize
	phnum  int
	shoff  int64
	shsize int // section header size, e_shentsize
	shnum  int
	shstr  int // index of the section name table, e_shstrndx
}

// readELF reads the header of the file of size bytes r reads, or returns
// nil and no error when it is not ELF: shorter than 4 bytes, or without the
// ELF magic number.
func readELF(r io.ReaderAt, size int64) (*elfFile, error) {
	var b [header64]byte
	n, err := r.ReadAt(b[:], 0)
	if n < 4 || string(b[:4]) != "\x7fELF" {
		return nil, nil
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if n < 16 {
		return nil, fmt.Errorf("ELF identification: %w", io.ErrUnexpectedEOF)
	}
	e := &elfFile{r: r, size: size}
	switch b[4] { // EI_CLASS
	case 1:
	case 2:
		e.is64 = true
	default:
		return nil, fmt.Errorf("unknown ELF class %d", b[4])
	}
	switch b[5] { // EI_DATA
	case 1:
		e.bo = binary.LittleEndian
	case 2:
		e.bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("unknown ELF data encoding %d", b[5])
	}
	if b[6] != 1 { // EI_VERSION
		return nil, fmt.Errorf("unknown ELF version %d", b[6])
	}
	if n < e.pick(header32, header64) {
		return nil, fmt.Errorf("ELF header: %w", io.ErrUnexpectedEOF)
	}
	if v := e.bo.Uint32(b[20:]); byte(v) != 1 { // debug/elf reads a byte
		return nil, fmt.Errorf("mismatched ELF version %d", v)
	}
	e.phoff = int64(e.word(b[:], 28, 32))
	e.shoff = int64(e.word(b[:], 32, 40))
	if e.phoff < 0 || e.shoff < 0 {
		return nil, errors.New("negative ELF table offset")
	}
	h := b[e.pick(42, 54):] // e_phentsize and the four fields after it
	e.phsize = int(e.bo.Uint16(h[0:]))
	e.phnum = int(e.bo.Uint16(h[2:]))
	e.shsize = int(e.bo.Uint16(h[4:]))
	e.shnum = int(e.bo.Uint16(h[6:]))
	e.shstr = int(e.bo.Uint16(h[8:]))
	return e, nil
}

// hasInterp reports whether the file has a PT_INTERP program header.
func (e *elfFile) hasInterp() (bool, error) {
	if e.phnum > 0 && e.phsize < e.pick(prog32, prog64) {
		return false, fmt.Errorf("invalid ELF program header size %d", e.phsize)
	}
	tab, err := e.table("ELF program header table", e.phoff, uint64(e.phnum), e.phsize)
	if err != nil {
		return false, err
	}
	interp := false
	for i := range e.phnum {
		p := tab[i*e.phsize:]
		if int64(e.word(p, 4, 8)) < 0 || int64(e.word(p, 16, 32)) < 0 {
			return false, fmt.Errorf("invalid ELF program header %d", i)
		}
		interp = interp || e.bo.Uint32(p) == ptInterp
	}
	return interp, nil
}

// isGo reports whether the file has a .go.buildinfo section.
func (e *elfFile) isGo() (bool, error) {
	return e.hasSection(".go.buildinfo")
}

// hasSection reports whether the file has a section called name.
func (e *elfFile) hasSection(name string) (bool, error) {
	if e.shoff == 0 && e.shnum != 0 {
		return false, errors.New("ELF section headers at offset 0")
	}
	shnum, shstr := uint64(e.shnum), uint64(e.shstr)
	if e.shoff > 0 && shnum == 0 {
		// 0xff00 sections or more: the first section header holds the
		// count and may hold the name table's index.
		first, err := e.read("ELF section header", e.shoff, int64(e.pick(section32, section64)))
		if err != nil {
			return false, err
		}
		if typ := e.bo.Uint32(first[4:]); typ != shtNull {
			return false, fmt.Errorf("invalid type %d of the first ELF section", typ)
		}
		if shnum = e.word(first, 20, 32); shnum < shnLoreserve {
			return false, fmt.Errorf("invalid ELF section count %d in the first section", shnum)
		}
		if shstr == shnXindex {
			if shstr = uint64(e.bo.Uint32(first[e.pick(24, 40):])); shstr < shnLoreserve {
				return false, fmt.Errorf("invalid ELF section name table index %d in the first section", shstr)
			}
		}
	}
	if shnum == 0 {
		return false, nil
	}
	if shstr >= shnum {
		return false, fmt.Errorf("invalid ELF section name table index %d", shstr)
	}
	if e.shsize < e.pick(section32, section64) {
		return false, fmt.Errorf("invalid ELF section header size %d", e.shsize)
	}
	tab, err := e.table("ELF section header table", e.shoff, shnum, e.shsize)
	if err != nil {
		return false, err
	}
	chdr := int64(e.pick(chdr32, chdr64))
	for i := range int(shnum) {
		s := tab[i*e.shsize:]
		flags, off, size := e.word(s, 8, 8), int64(e.word(s, 16, 24)), int64(e.word(s, 20, 32))
		if off < 0 || size < 0 {
			return false, fmt.Errorf("invalid ELF section header %d", i)
		}
		if flags&shfCompressed != 0 && (size < chdr || off > e.size-chdr) {
			return false, fmt.Errorf("ELF section %d compression header: %w", i, io.ErrUnexpectedEOF)
		}
	}
	if shstr == 0 {
		return false, nil // no section names
	}
	s := tab[int(shstr)*e.shsize:]
	if typ := e.bo.Uint32(s[4:]); typ != shtStrtab {
		return false, fmt.Errorf("invalid ELF section name table type %d", typ)
	}
	if e.word(s, 8, 8)&shfCompressed != 0 {
		return false, errCompressedNames
	}
	names, err := e.read("ELF section name table", int64(e.word(s, 16, 24)), int64(e.word(s, 20, 32)))
	if err != nil {
		return false, err
	}
	// A name runs from its index to a NUL, which must be in the table.
	last := int64(bytes.LastIndexByte(names, 0))
	want := name + "\x00"
	found := false
	for i := range int(shnum) {
		n := int64(e.bo.Uint32(tab[i*e.shsize:]))
		if n > last {
			return false, fmt.Errorf("invalid ELF section name index %d", n)
		}
		found = found || string(names[n:min(n+int64(len(want)), int64(len(names)))]) == want
	}
	return found, nil
}

// table reads the n entries of entsize bytes at off.
func (e *elfFile) table(what string, off int64, n uint64, entsize int) ([]byte, error) {
	if n == 0 {
		return nil, nil // wherever off points
	}
	if n > maxTable/uint64(max(entsize, 1)) {
		return nil, fmt.Errorf("%s: %w", what, errTooLarge)
	}
	return e.read(what, off, int64(n)*int64(entsize))
}

// read reads the size bytes at off, which must be in the file.
func (e *elfFile) read(what string, off, size int64) ([]byte, error) {
	if size > maxTable {
		return nil, fmt.Errorf("%s: %w", what, errTooLarge)
	}
	if off < 0 || size < 0 || off > e.size || size > e.size-off {
		return nil, fmt.Errorf("%s past the end of the file: %w", what, io.ErrUnexpectedEOF)
	}
	if size == 0 {
		return nil, nil
	}
	b := make([]byte, size)
	if n, err := e.r.ReadAt(b, off); n < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// word returns the address-sized field at off32 in an ELF32 structure b, at
// off64 in an ELF64 one.
func (e *elfFile) word(b []byte, off32, off64 int) uint64 {
	if e.is64 {
		return e.bo.Uint64(b[off64:])
	}
	return uint64(e.bo.Uint32(b[off32:]))
}

// pick returns v32 for an ELF32 file, v64 for an ELF64 one.
func (e *elfFile) pick(v32, v64 int) int {
	if e.is64 {
		return v64
	}
	return v32
}
