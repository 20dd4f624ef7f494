package elfrw_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
)

const testC = `
extern int g(int);
static int counter;
static int s(int x) { counter += x; return g(x) + counter; }
__attribute__((weak)) int w(int x) { return x * 2; }
__attribute__((noinline)) int f(int x) { return s(x) + w(x); }
int h(int x) { return f(x) + 1; }
`

// testCXX has inline and template functions, which g++ puts in COMDAT section groups.
const testCXX = `
template <class T> struct Box { T v; __attribute__((noinline)) T get() const { return v; } };
inline __attribute__((noinline)) int twice(int x) { return 2 * x; }
int use(int x) { Box<int> b{x}; Box<long> c{x}; return b.get() + (int)c.get() + twice(x); }
`

// compile builds testC (testCXX when cxx) into an object with the given compiler and flags.
func compile(t *testing.T, cxx bool, cc string, flags ...string) string {
	t.Helper()
	testenv.Need(t, cc)
	dir := t.TempDir()
	src := filepath.Join(dir, "t.c")
	body := testC
	if cxx {
		body = testCXX
	}
	if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "t.o")
	testenv.Run(t, dir, cc, append(append([]string{}, flags...), "-c", src, "-o", obj)...)
	return obj
}

type target struct {
	name  string
	cc    string
	flags []string
	ldr   []string // relocatable link command
	class elf.Class
	data  elf.Data
	cxx   bool // compile testCXX: the object has COMDAT section groups
}

var targets = []target{
	{"x86-64 gcc", "gcc", []string{"-O2", "-ffunction-sections"}, []string{"ld", "-r"}, elf.ELFCLASS64, elf.ELFDATA2LSB, false},
	{"x86-64 gcc comdat c++", "g++", []string{"-O0", "-x", "c++"}, []string{"ld", "-r"}, elf.ELFCLASS64, elf.ELFDATA2LSB, true},
	{"x86-64 gcc comdat c++ -ffunction-sections", "g++", []string{"-O2", "-x", "c++", "-ffunction-sections", "-pg", "-mfentry"}, []string{"ld", "-r"}, elf.ELFCLASS64, elf.ELFDATA2LSB, true},
	{"i386 clang", "clang", []string{"-target", "i386-linux-gnu", "-O1"}, []string{"ld.lld", "-r"}, elf.ELFCLASS32, elf.ELFDATA2LSB, false},
	{"ppc64 big-endian clang", "clang", []string{"-target", "powerpc64-linux-gnu", "-O1", "-ffunction-sections"}, []string{"ld.lld", "-r"}, elf.ELFCLASS64, elf.ELFDATA2MSB, false},
	{"mips32 big-endian clang", "clang", []string{"-target", "mips-linux-gnu", "-O1"}, []string{"ld.lld", "-r"}, elf.ELFCLASS32, elf.ELFDATA2MSB, false},
	{"aarch64 clang", "clang", []string{"-target", "aarch64-linux-gnu", "-O1", "-ffunction-sections"}, []string{"ld.lld", "-r"}, elf.ELFCLASS64, elf.ELFDATA2LSB, false},
}

// namedRelocs describes every relocation by section, offset, type, symbol name and addend,
// independently of symbol indices, using debug/elf as an independent reader.
func namedRelocs(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("debug/elf: %v", err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatalf("debug/elf symbols: %v", err)
	}
	out := map[string][]string{}
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL {
			continue
		}
		d, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		es := int(s.Entsize)
		for i := 0; i+es <= len(d); i += es {
			var off, sym, typ uint64
			var add int64
			bo := ef.ByteOrder
			if ef.Class == elf.ELFCLASS64 {
				off, sym, typ = bo.Uint64(d[i:]), bo.Uint64(d[i+8:])>>32, bo.Uint64(d[i+8:])&0xffffffff
				if es == 24 {
					add = int64(bo.Uint64(d[i+16:]))
				}
			} else {
				info := bo.Uint32(d[i+4:])
				off, sym, typ = uint64(bo.Uint32(d[i:])), uint64(info>>8), uint64(info&0xff)
				if es == 12 {
					add = int64(int32(bo.Uint32(d[i+8:])))
				}
			}
			name := "-"
			if sym > 0 && int(sym) <= len(syms) {
				ss := syms[sym-1]
				name = fmt.Sprintf("%s/%v/%v/sec%d", ss.Name, elf.ST_TYPE(ss.Info), elf.ST_BIND(ss.Info), ss.Section)
			}
			out[s.Name] = append(out[s.Name], fmt.Sprintf("%#x %d %s %+d", off, typ, name, add))
		}
	}
	return out
}

// readelfClean runs readelf -a -W and fails on any warning or error.
func readelfClean(t *testing.T, path string) string {
	t.Helper()
	testenv.Need(t, "readelf")
	r := testenv.Exec(t, "", "readelf", "-a", "-W", path)
	if r.Code != 0 || r.Stderr != "" || strings.Contains(r.Stdout, "Warning") {
		t.Fatalf("readelf -a %s: exit %d\n%s\n%.3000s", path, r.Code, r.Stderr, grepWarn(r.Stdout))
	}
	return r.Stdout
}

func grepWarn(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "Warning") || strings.Contains(l, "Error") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestAddSectionsAndSymbols adds a section symbol for every section lacking one, a new
// non-allocated section and a group member, then checks the result with readelf, debug/elf,
// a relocatable link, and byte for byte against the original.
func TestAddSectionsAndSymbols(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			testenv.Need(t, tg.ldr[0])
			obj := compile(t, tg.cxx, tg.cc, tg.flags...)
			orig, err := os.ReadFile(obj)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elfrw.Parse(orig)
			if err != nil {
				t.Fatal(err)
			}
			if f.Class != tg.class || f.Data != tg.data {
				t.Fatalf("class %v data %v, want %v %v", f.Class, f.Data, tg.class, tg.data)
			}
			syms, err := f.Symbols(f.SymTab())
			if err != nil {
				t.Fatal(err)
			}
			have := map[uint32]bool{}
			for _, s := range syms {
				if s.Type() == elf.STT_SECTION {
					have[s.Shndx] = true
				}
			}
			var add []elfrw.Symbol
			for _, s := range f.Sections {
				if s.Flags&elf.SHF_ALLOC != 0 && s.Size > 0 && !have[uint32(s.Index)] {
					add = append(add, elfrw.Symbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint32(s.Index)})
				}
			}
			if len(add) == 0 {
				// Still exercise renumbering: add a second symbol for the first text section.
				for _, s := range f.Sections {
					if s.Flags&elf.SHF_EXECINSTR != 0 {
						add = append(add, elfrw.Symbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint32(s.Index)})
						break
					}
				}
			}
			firstGlobal := f.SymTab().Info
			idx, err := f.AddLocalSymbols(add)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range idx {
				if x != firstGlobal+uint32(i) {
					t.Fatalf("new symbol %d at %d, want %d", i, x, firstGlobal+uint32(i))
				}
			}
			note := f.AddSection(elfrw.Section{Name: ".note.ftkit-test", Type: elf.SHT_NOTE, Addralign: 4}, noteBytes(f.ByteOrder))
			// Put a new section into the first COMDAT group (C++ objects have some).
			var group *elfrw.Section
			var groupMembers []uint32
			for _, g := range f.Sections {
				if g.Type == elf.SHT_GROUP {
					group = g
					fl, m, err := f.GroupMembers(g)
					if err != nil {
						t.Fatal(err)
					}
					extra := f.AddSection(elfrw.Section{Name: ".comment.ftkit", Type: elf.SHT_PROGBITS, Flags: elf.SHF_GROUP, Addralign: 1}, []byte("in group\x00"))
					groupMembers = append(m, uint32(extra.Index))
					f.SetGroupMembers(g, fl, groupMembers)
					break
				}
			}
			out, err := f.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "out.o")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			readelfClean(t, path)

			// Relocations name the same symbols as before.
			before, after := namedRelocs(t, orig), namedRelocs(t, out)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("relocations changed:\nbefore %v\nafter  %v", before, after)
			}
			// Reparse: new symbols are section symbols of the right sections.
			g, err := elfrw.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := g.Symbols(g.SymTab())
			if err != nil {
				t.Fatal(err)
			}
			if len(gs) != len(syms)+len(add) || g.SymTab().Info != firstGlobal+uint32(len(add)) {
				t.Fatalf("%d symbols (first global %d), want %d (%d)", len(gs), g.SymTab().Info, len(syms)+len(add), firstGlobal+uint32(len(add)))
			}
			for i, a := range add {
				s := gs[idx[i]]
				if s.Type() != elf.STT_SECTION || s.Bind() != elf.STB_LOCAL || s.Shndx != a.Shndx {
					t.Errorf("symbol %d = %+v, want section symbol of %d", idx[i], s, a.Shndx)
				}
			}
			if tg.cxx && group == nil {
				t.Fatal("C++ object without section groups: the GROUP case is not tested")
			}
			if group != nil {
				// The group grew by the new member, which ld -r below must keep with it.
				_, m, err := g.GroupMembers(g.Sections[group.Index])
				if err != nil || fmt.Sprint(m) != fmt.Sprint(groupMembers) {
					t.Errorf("group members %v (%v), want %v", m, err, groupMembers)
				}
				if !strings.Contains(readelfClean(t, path), ".comment.ftkit") {
					t.Error("readelf does not show the new group member")
				}
			}
			if n := g.SectionByName(".note.ftkit-test"); n == nil || !bytes.Equal(g.SectionData(n), noteBytes(g.ByteOrder)) || n.Index != note.Index {
				t.Errorf("new note section missing or wrong: %+v", n)
			}
			// Untouched sections keep their bytes at their offsets.
			ehsize := 52
			if f.Class == elf.ELFCLASS64 {
				ehsize = 64
			}
			if !bytes.Equal(orig[:16], out[:16]) || !bytes.Equal(orig[16:28], out[16:28]) {
				t.Error("ELF identification or type/machine changed")
			}
			of, _ := elfrw.Parse(orig)
			for i, s := range of.Sections {
				if i == 0 || s.Type == elf.SHT_NOBITS {
					continue
				}
				switch s.Type {
				case elf.SHT_SYMTAB, elf.SHT_REL, elf.SHT_RELA, elf.SHT_GROUP, elf.SHT_STRTAB, elf.SHT_SYMTAB_SHNDX, 0x6fff4c03:
					continue // possibly rewritten
				}
				if !bytes.Equal(orig[s.Offset:s.Offset+s.Size], out[s.Offset:s.Offset+s.Size]) {
					t.Errorf("section %s changed", s.Name)
				}
				if ns := g.Sections[i]; ns.Offset != s.Offset || ns.Size != s.Size || ns.Name != s.Name {
					t.Errorf("section %s moved: %#x+%#x -> %#x+%#x", s.Name, s.Offset, s.Size, ns.Offset, ns.Size)
				}
			}
			_ = ehsize
			// The result links.
			testenv.Run(t, filepath.Dir(path), tg.ldr[0], append(tg.ldr[1:], path, "-o", path+".r.o")...)
		})
	}
}

func noteBytes(bo binary.ByteOrder) []byte {
	b := make([]byte, 12+8+4)
	bo.PutUint32(b, 6)     // namesz "ftkit\0"
	bo.PutUint32(b[4:], 4) // descsz
	bo.PutUint32(b[8:], 1) // type
	copy(b[12:], "ftkit")
	bo.PutUint32(b[20:], 0x12345678)
	return b
}

// TestParseCorrupt mutates a real object in ways that break its tables: every mutation
// must give an error wrapping ErrFormat (or a clear "not ELF"), never a panic.
func TestParseCorrupt(t *testing.T) {
	obj := compile(t, false, "gcc", "-O2", "-ffunction-sections")
	orig, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elfrw.Parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	bo := binary.LittleEndian
	shoff := int(bo.Uint64(orig[40:]))
	symtab := f.SymTab()
	shdr := func(i, field int) int { return shoff + 64*i + field }
	var rela *elfrw.Section
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA {
			rela = s
			break
		}
	}
	tests := []struct {
		name string
		mut  func(b []byte) []byte
		// which stage must fail: "parse", "symbols" or "relocs"
		stage string
	}{
		{"empty", func(b []byte) []byte { return nil }, "parse"},
		{"not ELF", func(b []byte) []byte { return []byte("!<arch>\nhello world, this is not ELF") }, "parse"},
		{"truncated header", func(b []byte) []byte { return b[:40] }, "parse"},
		{"truncated section table", func(b []byte) []byte { return b[:len(b)-10] }, "parse"},
		{"truncated before sections", func(b []byte) []byte { return b[:shoff/2] }, "parse"},
		{"bad class", func(b []byte) []byte { b[4] = 7; return b }, "parse"},
		{"bad data", func(b []byte) []byte { b[5] = 9; return b }, "parse"},
		{"shoff past end", func(b []byte) []byte { bo.PutUint64(b[40:], 1<<40); return b }, "parse"},
		{"shoff overflow", func(b []byte) []byte { bo.PutUint64(b[40:], ^uint64(0)-10); return b }, "parse"},
		{"shentsize", func(b []byte) []byte { bo.PutUint16(b[58:], 40); return b }, "parse"},
		{"shnum huge", func(b []byte) []byte { bo.PutUint16(b[60:], 0xfff0); return b }, "parse"},
		{"shnum 0 with huge sh_size", func(b []byte) []byte { bo.PutUint16(b[60:], 0); bo.PutUint64(b[shdr(0, 32):], 1<<50); return b }, "parse"},
		{"shstrndx out of range", func(b []byte) []byte { bo.PutUint16(b[62:], 999); return b }, "parse"},
		{"shstrndx xindex bad link", func(b []byte) []byte { bo.PutUint16(b[62:], 0xffff); bo.PutUint32(b[shdr(0, 40):], 5000); return b }, "parse"},
		{"section offset past end", func(b []byte) []byte { bo.PutUint64(b[shdr(1, 24):], uint64(len(b))+1); return b }, "parse"},
		{"section size overflow", func(b []byte) []byte { bo.PutUint64(b[shdr(1, 32):], ^uint64(0)); return b }, "parse"},
		{"section alignment not a power of two", func(b []byte) []byte { bo.PutUint64(b[shdr(1, 48):], 24); return b }, "parse"},
		{"section overlaps the ELF header", func(b []byte) []byte {
			bo.PutUint64(b[shdr(2, 24):], 0x30)
			bo.PutUint64(b[shdr(2, 32):], 0x20)
			return b
		}, "parse"},
		{"sections overlap", func(b []byte) []byte {
			bo.PutUint64(b[shdr(2, 24):], symtab.Offset+8)
			bo.PutUint64(b[shdr(2, 32):], 8)
			bo.PutUint32(b[shdr(2, 4):], uint32(elf.SHT_PROGBITS))
			return b
		}, "parse"},
		{"section overlaps the section headers", func(b []byte) []byte {
			bo.PutUint64(b[shdr(2, 24):], uint64(shoff))
			bo.PutUint64(b[shdr(2, 32):], 1)
			return b
		}, "parse"},
		{"section name outside table", func(b []byte) []byte { bo.PutUint32(b[shdr(2, 0):], 0x7fffffff); return b }, "parse"},
		{"symtab entsize", func(b []byte) []byte { bo.PutUint64(b[shdr(symtab.Index, 56):], 7); return b }, "symbols"},
		{"symtab size", func(b []byte) []byte { bo.PutUint64(b[shdr(symtab.Index, 32):], symtab.Size-5); return b }, "symbols"},
		{"symtab bad strtab link", func(b []byte) []byte { bo.PutUint32(b[shdr(symtab.Index, 40):], 0); return b }, "symbols"},
		{"symtab first global", func(b []byte) []byte { bo.PutUint32(b[shdr(symtab.Index, 44):], 1<<20); return b }, "symbols"},
		{"symbol name offset", func(b []byte) []byte { bo.PutUint32(b[symtab.Offset+24*3:], 0x7ffffff0); return b }, "symbols"},
		{"symbol section index", func(b []byte) []byte { bo.PutUint16(b[symtab.Offset+24*3+6:], 0xfe00); return b }, "symbols"},
		{"symbol xindex without shndx", func(b []byte) []byte { bo.PutUint16(b[symtab.Offset+24*3+6:], 0xffff); return b }, "symbols"},
		{"rela entsize", func(b []byte) []byte { bo.PutUint64(b[shdr(rela.Index, 56):], 16); return b }, "relocs"},
		{"rela size", func(b []byte) []byte { bo.PutUint64(b[shdr(rela.Index, 32):], rela.Size-1); return b }, "relocs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mut(append([]byte(nil), orig...))
			f, err := elfrw.Parse(b)
			if tc.stage == "parse" {
				if err == nil {
					t.Fatal("no error")
				}
				if !errors.Is(err, elfrw.ErrFormat) && !strings.Contains(err.Error(), "not an ELF") {
					t.Fatalf("error %q does not wrap ErrFormat", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			switch tc.stage {
			case "symbols":
				_, err = f.Symbols(f.SymTab())
			case "relocs":
				_, err = f.Relocs(f.Sections[rela.Index])
			}
			if err == nil || !errors.Is(err, elfrw.ErrFormat) {
				t.Fatalf("%s: error %v, want ErrFormat", tc.stage, err)
			}
		})
	}
}
