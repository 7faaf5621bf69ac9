package shim

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestELF(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dynamic, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	hello := buildGo(t)
	badClass := craft(elf.ELFCLASS64, elf.ELFDATA2LSB, nil, nil)
	badClass[elf.EI_CLASS] = 3
	tests := []struct {
		name      string
		path      string
		static    bool
		goProgram bool
		staticErr bool // Static fails
		goErr     bool // GoProgram fails
	}{
		{name: "dynamic C program", path: "/bin/true"},
		{name: "static Go program", path: hello, static: true, goProgram: true},
		{name: "headers of /bin/true", path: file("true-headers", squash(t, "/bin/true"))},
		{name: "headers of a Go program", path: file("hello-headers", squash(t, hello)), static: true, goProgram: true},
		{name: "script", path: file("script", []byte("#!/bin/sh\nexit 0\n"))},
		{name: "empty file", path: file("empty", nil)},
		{name: "three bytes of ELF magic", path: file("magic3", []byte("\x7fEL"))},
		{name: "a directory", path: dir},
		{
			name: "ELF32 big-endian, dynamic, Go",
			path: file("32msb", craft(elf.ELFCLASS32, elf.ELFDATA2MSB,
				[]elf.ProgType{elf.PT_LOAD, elf.PT_INTERP},
				[]craftSection{{".text", elf.SHT_PROGBITS, 0}, {".go.buildinfo", elf.SHT_PROGBITS, 0}})),
			goProgram: true,
		},
		{
			name: "ELF32 little-endian, static",
			path: file("32lsb", craft(elf.ELFCLASS32, elf.ELFDATA2LSB,
				[]elf.ProgType{elf.PT_LOAD}, []craftSection{{".text", elf.SHT_PROGBITS, 0}})),
			static: true,
		},
		{
			name: "ELF64 big-endian, static, Go",
			path: file("64msb", craft(elf.ELFCLASS64, elf.ELFDATA2MSB,
				[]elf.ProgType{elf.PT_LOAD}, []craftSection{{".go.buildinfo", elf.SHT_PROGBITS, 0}})),
			static: true, goProgram: true,
		},
		{
			name:   "ELF64 without program or section headers",
			path:   file("64bare", craft(elf.ELFCLASS64, elf.ELFDATA2LSB, nil, nil)),
			static: true,
		},
		{
			name: "a section name prefixed by .go.buildinfo",
			path: file("prefixed", craft(elf.ELFCLASS64, elf.ELFDATA2LSB,
				nil, []craftSection{{".go.buildinfo.x", elf.SHT_PROGBITS, 0}})),
			static: true,
		},
		{
			name: "/bin/true cut in its program headers", path: file("true-100", dynamic[:100]),
			staticErr: true, goErr: true,
		},
		{
			name: "/bin/true cut before its section headers", path: file("true-half", dynamic[:len(dynamic)/2]),
			goErr: true,
		},
		{name: "unknown ELF class", path: file("class3", badClass), staticErr: true, goErr: true},
		{name: "missing file", path: filepath.Join(dir, "missing"), staticErr: true, goErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			static, err := Static(tc.path)
			if tc.staticErr {
				if err == nil || !strings.HasPrefix(err.Error(), "static check "+tc.path+": ") {
					t.Errorf("Static: %v, want an error naming the file", err)
				}
			} else if err != nil || static != tc.static {
				t.Errorf("Static = %v, %v, want %v", static, err, tc.static)
			}
			goProgram, err := GoProgram(tc.path)
			if tc.goErr {
				if err == nil || !strings.HasPrefix(err.Error(), "go program check "+tc.path+": ") {
					t.Errorf("GoProgram: %v, want an error naming the file", err)
				}
			} else if err != nil || goProgram != tc.goProgram {
				t.Errorf("GoProgram = %v, %v, want %v", goProgram, err, tc.goProgram)
			}
			if data, err := os.ReadFile(tc.path); err == nil {
				agree(t, data)
			}
		})
	}
}

// FuzzELF checks the reader behind Static and GoProgram against debug/elf:
// wherever debug/elf reads a file, they agree. It reads from memory, several
// times as fast as from a file (Static and GoProgram add only the open and
// the stat, which TestELF covers). Inputs of a few KB take the fuzzer long
// to minimize: fuzz with -fuzzminimizetime 1s.
func FuzzELF(f *testing.F) {
	hello := buildGo(f)
	for _, path := range []string{"/bin/true", hello} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:2048])
		f.Add(squash(f, path))
	}
	f.Add(craft(elf.ELFCLASS32, elf.ELFDATA2MSB, []elf.ProgType{elf.PT_INTERP},
		[]craftSection{{".go.buildinfo", elf.SHT_PROGBITS, 0}}))
	f.Add(craft(elf.ELFCLASS32, elf.ELFDATA2LSB, []elf.ProgType{elf.PT_LOAD},
		[]craftSection{{".debug_info", elf.SHT_PROGBITS, elf.SHF_COMPRESSED}}))
	f.Add(craft(elf.ELFCLASS64, elf.ELFDATA2MSB, nil, nil))
	ext := craft(elf.ELFCLASS64, elf.ELFDATA2LSB, nil, []craftSection{{".text", elf.SHT_PROGBITS, 0}})
	binary.LittleEndian.PutUint16(ext[60:], 0) // e_shnum: 0xff00 sections or more
	f.Add(ext)
	f.Add([]byte("\x7fELF"))
	f.Fuzz(agree)
}

// agree checks the answers of the reader on the file data against
// debug/elf.
func agree(t *testing.T, data []byte) {
	t.Helper()
	r, size := bytes.NewReader(data), int64(len(data))
	interp, ierr := inspect(r, size, (*elfFile).hasInterp)
	goProgram, gerr := inspect(r, size, (*elfFile).isGo)
	if len(data) < 4 || string(data[:4]) != elf.ELFMAG {
		if interp != notELF || ierr != nil || goProgram != notELF || gerr != nil {
			t.Fatalf("not ELF: PT_INTERP %v, %v; .go.buildinfo %v, %v", interp, ierr, goProgram, gerr)
		}
		return
	}
	f, err := newFile(data)
	if err != nil {
		return // debug/elf refuses the file: any answer but a panic will do
	}
	want := no
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			want = yes
		}
	}
	if ierr != nil || interp != want {
		t.Errorf("PT_INTERP: %v, %v; debug/elf: %v", interp, ierr, want)
	}
	compressedNames := false
	for _, s := range f.Sections {
		compressedNames = compressedNames || s.Type == elf.SHT_STRTAB && s.Flags&elf.SHF_COMPRESSED != 0
	}
	want = no
	if f.Section(".go.buildinfo") != nil {
		want = yes
	}
	switch {
	case errors.Is(gerr, errCompressedNames) && compressedNames:
	case errors.Is(gerr, errTooLarge) && len(data) > maxTable:
	case gerr != nil || goProgram != want:
		t.Errorf(".go.buildinfo: %v, %v; debug/elf: %v", goProgram, gerr, want)
	}
}

// newFile is elf.NewFile on data, with a panic (an index out of range on
// some headers) returned as an error.
func newFile(data []byte) (f *elf.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("debug/elf panicked: %v", p)
		}
	}()
	return elf.NewFile(bytes.NewReader(data))
}

// buildGo builds a static Go program and returns its path.
func buildGo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module hello\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "hello")
}

// squash returns the headers of the ELF file at path, crafted into a small
// file: its program header types and its sections' names, types and flags.
func squash(t testing.TB, path string) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var progs []elf.ProgType
	for _, p := range f.Progs {
		progs = append(progs, p.Type)
	}
	var sections []craftSection
	for _, s := range f.Sections[1:] {
		if s.Name != ".shstrtab" {
			sections = append(sections, craftSection{s.Name, s.Type, s.Flags})
		}
	}
	return craft(f.Class, f.Data, progs, sections)
}

// craftSection is a section of a crafted ELF file.
type craftSection struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
}

// craft returns an ELF file with program headers of the types progs and,
// when there are sections, the null section, sections and .shstrtab. Only
// the names have data: a section points at the file header, which a
// compressed one reads as its compression header.
func craft(class elf.Class, data elf.Data, progs []elf.ProgType, sections []craftSection) []byte {
	var bo binary.ByteOrder = binary.LittleEndian
	if data == elf.ELFDATA2MSB {
		bo = binary.BigEndian
	}
	is64 := class == elf.ELFCLASS64
	ehsize, phsize, shsize := 52, 32, 40
	if is64 {
		ehsize, phsize, shsize = 64, 56, 64
	}
	names := []byte{0}
	nameOffs := []int{0}
	var shnum, shstrndx int
	if len(sections) > 0 {
		sections = append(sections, craftSection{".shstrtab", elf.SHT_STRTAB, 0})
		for _, s := range sections {
			nameOffs = append(nameOffs, len(names))
			names = append(append(names, s.name...), 0)
		}
		sections = append([]craftSection{{}}, sections...)
		shnum, shstrndx = len(sections), len(sections)-1
	}
	phoff := ehsize
	shoff := phoff + len(progs)*phsize
	namesOff := shoff + shnum*shsize
	if shnum == 0 {
		shoff = 0
	}
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(class), byte(data), byte(elf.EV_CURRENT)}
	var b bytes.Buffer
	w := func(v any) {
		if err := binary.Write(&b, bo, v); err != nil {
			panic(err)
		}
	}
	if is64 {
		w(elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64),
			Version: uint32(elf.EV_CURRENT), Phoff: uint64(phoff), Shoff: uint64(shoff),
			Ehsize: uint16(ehsize), Phentsize: uint16(phsize), Phnum: uint16(len(progs)),
			Shentsize: uint16(shsize), Shnum: uint16(shnum), Shstrndx: uint16(shstrndx)})
	} else {
		w(elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_386),
			Version: uint32(elf.EV_CURRENT), Phoff: uint32(phoff), Shoff: uint32(shoff),
			Ehsize: uint16(ehsize), Phentsize: uint16(phsize), Phnum: uint16(len(progs)),
			Shentsize: uint16(shsize), Shnum: uint16(shnum), Shstrndx: uint16(shstrndx)})
	}
	for _, p := range progs {
		if is64 {
			w(elf.Prog64{Type: uint32(p)})
		} else {
			w(elf.Prog32{Type: uint32(p)})
		}
	}
	for i, s := range sections {
		off, size := 0, ehsize
		if i == 0 {
			size = 0
		}
		if i == shstrndx {
			off, size = namesOff, len(names)
		}
		if is64 {
			w(elf.Section64{Name: uint32(nameOffs[i]), Type: uint32(s.typ), Flags: uint64(s.flags),
				Off: uint64(off), Size: uint64(size)})
		} else {
			w(elf.Section32{Name: uint32(nameOffs[i]), Type: uint32(s.typ), Flags: uint32(s.flags),
				Off: uint32(off), Size: uint32(size)})
		}
	}
	if shnum > 0 {
		b.Write(names)
	}
	return b.Bytes()
}
