package mcountloc

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
)

// fuzzC has static, weak, cold and custom-section functions, so the seeds have several text
// sections, a section recordmcount does not record, and weak symbols.
const fuzzC = `
static int counter;
static __attribute__((noinline)) int st(int x) { counter += x; return counter * 3; }
__attribute__((weak)) int wk(int x) { return x * 2 + st(x); }
__attribute__((cold, noinline)) int cold_fn(int x) { return x - 12345; }
__attribute__((section(".ftkit_custom"), noinline)) int custom(int x) { return x ^ 0x55; }
int glob(int x) { if (x < 0) return cold_fn(x); return st(x) + wk(x) + custom(x); }
`

// fuzzCXX has inline and template members: COMDAT groups.
const fuzzCXX = `
template <class T> struct Box { T v; __attribute__((noinline)) T get() const { return v; } };
inline __attribute__((noinline)) int twice(int x) { return 2 * x; }
int use(int x) { Box<int> b{x}; Box<long> c{x}; return b.get() + (int)c.get() + twice(x); }
`

// recordSeeds builds the real objects the fuzzers start from: gcc -pg -mfentry as PIE
// (ff 15 sites) and -fno-pie (e8), with endbr64 and -ffunction-sections, plain -pg at -O0
// (mcount after the frame set-up), C++ with COMDAT groups, an object gcc already tabled,
// and one this package already tabled. Without gcc (or g++) the missing ones are skipped.
func recordSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	for name, body := range map[string]string{"t.c": fuzzC, "t.cc": fuzzCXX} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	builds := []struct {
		cc   string
		args []string
	}{
		{"gcc", []string{"-O2", "-pg", "-mfentry", "t.c"}},
		{"gcc", []string{"-O2", "-pg", "-mfentry", "-fno-pie", "t.c"}},
		{"gcc", []string{"-O2", "-pg", "-mfentry", "-fcf-protection", "-ffunction-sections", "t.c"}},
		{"gcc", []string{"-O0", "-pg", "t.c"}},
		{"g++", []string{"-O2", "-pg", "-mfentry", "-ffunction-sections", "-fcf-protection", "t.cc"}},
		{"g++", []string{"-O0", "-pg", "-fno-pie", "t.cc"}},
		{"gcc", []string{"-O2", "-pg", "-mfentry", "-mrecord-mcount", "t.c"}},
		// -fpatchable-function-entry: aarch64 (with BTI and an area before the function,
		// C++ COMDAT, -pg refused) and x86-64 (with endbr64, and mixed with -pg -mfentry).
		{"aarch64-linux-gnu-gcc", []string{"-O2", "-fpatchable-function-entry=2", "t.c"}},
		{"aarch64-linux-gnu-gcc", []string{"-O2", "-fpatchable-function-entry=4,2", "-mbranch-protection=standard", "-ffunction-sections", "t.c"}},
		{"aarch64-linux-gnu-g++", []string{"-O2", "-fpatchable-function-entry=2", "t.cc"}},
		{"aarch64-linux-gnu-gcc", []string{"-O0", "-pg", "t.c"}},
		{"gcc", []string{"-O2", "-fpatchable-function-entry=9,4", "-fcf-protection", "t.c"}},
		{"gcc", []string{"-O2", "-pg", "-mfentry", "-fpatchable-function-entry=8,8", "t.c"}},
		// The other machines (issue 17): i386 (ELF32, REL), arm (Thumb bit), riscv64 (site
		// symbols), s390x (big-endian brasl), ppc64le (bl _mcount, TOC set-up), mips64el
		// (refused), each in its supported modes and a refused one.
		{"i686-linux-gnu-gcc", []string{"-O2", "-pg", "-mfentry", "-fno-pie", "-fcf-protection", "-ffunction-sections", "t.c"}},
		{"i686-linux-gnu-gcc", []string{"-O2", "-fpatchable-function-entry=8,4", "t.c"}},
		{"i686-linux-gnu-g++", []string{"-O2", "-pg", "-mfentry", "-fno-pie", "t.cc"}},
		{"i686-linux-gnu-gcc", []string{"-O2", "-pg", "t.c"}},
		{"arm-linux-gnueabihf-gcc", []string{"-O2", "-fpatchable-function-entry=4,2", "t.c"}},
		{"arm-linux-gnueabihf-g++", []string{"-O2", "-marm", "-fpatchable-function-entry=2", "t.cc"}},
		{"arm-linux-gnueabihf-gcc", []string{"-O2", "-pg", "t.c"}},
		{"riscv64-linux-gnu-gcc", []string{"-O2", "-fpatchable-function-entry=4,2", "-ffunction-sections", "t.c"}},
		{"riscv64-linux-gnu-g++", []string{"-O2", "-fpatchable-function-entry=4", "t.cc"}},
		{"s390x-linux-gnu-gcc", []string{"-O2", "-pg", "-mfentry", "t.c"}},
		{"s390x-linux-gnu-g++", []string{"-O2", "-fpatchable-function-entry=4,2", "t.cc"}},
		{"s390x-linux-gnu-gcc", []string{"-O2", "-pg", "t.c"}},
		{"powerpc64le-linux-gnu-gcc", []string{"-O2", "-pg", "-mprofile-kernel", "-ffunction-sections", "t.c"}},
		{"powerpc64le-linux-gnu-g++", []string{"-O2", "-pg", "-mprofile-kernel", "t.cc"}},
		{"powerpc64le-linux-gnu-gcc", []string{"-O2", "-fpatchable-function-entry=2", "t.c"}},
		{"mips64el-linux-gnuabi64-gcc", []string{"-O2", "-pg", "t.c"}},
	}
	var files [][]byte
	for i, b := range builds {
		if _, err := exec.LookPath(b.cc); err != nil {
			f.Logf("%s not installed: seed %v left out", b.cc, b.args)
			continue
		}
		out := filepath.Join(dir, "seed"+string(rune('a'+i))+".o")
		cmd := exec.Command(b.cc, append(append([]string{}, b.args...), "-c", "-o", out)...)
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("%s %v: %v\n%s", b.cc, b.args, err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, data)
		if i == 0 {
			res, err := Record(data)
			if err != nil || res.Out == nil {
				f.Fatalf("recording the first seed: %v", err)
			}
			files = append(files, res.Out)
		}
	}
	return files
}

// addPatchSeeds adds, for one seed file, inputs that break the places the recorder relies
// on: the section header table, the symbol table, each relocation section's first entry,
// the code at the first hook call and each group section.
func addPatchSeeds(f *testing.F, i int, data []byte) {
	f.Add(uint8(i), uint32(0), []byte(nil), uint32(0))
	f.Add(uint8(i), uint32(0), []byte(nil), uint32(len(data)/2))
	ef, err := elfrw.Parse(data)
	if err != nil {
		return
	}
	shoff := uint32(len(data) - len(ef.Sections)*64) // gcc puts the section headers last
	f.Add(uint8(i), shoff+4, []byte{0xff, 0xff}, uint32(0))
	for _, s := range ef.Sections {
		switch s.Type {
		case elf.SHT_SYMTAB:
			f.Add(uint8(i), uint32(s.Offset)+24*2+6, []byte{0xff, 0xff}, uint32(0))
		case elf.SHT_RELA:
			f.Add(uint8(i), uint32(s.Offset)+8, []byte{0x04, 0, 0, 0, 0xff}, uint32(0))
			f.Add(uint8(i), uint32(s.Offset), []byte{0xfe, 0xff, 0xff}, uint32(0))
			if tx := int(s.Info); tx > 0 && tx < len(ef.Sections) {
				f.Add(uint8(i), uint32(ef.Sections[tx].Offset), []byte{0x90, 0x90, 0xe8}, uint32(0))
			}
		case elf.SHT_GROUP:
			f.Add(uint8(i), uint32(s.Offset)+4, []byte{0xff, 0xff, 0, 0}, uint32(0))
		}
	}
	f.Add(uint8(i), shoff+uint32(ef.ShStrNdx*64), bytes.Repeat([]byte{0xee}, 64), uint32(0))
}

// refusal reports whether err is one of the recorder's refusals of well-formed ELF files it
// does not handle; every other error must wrap elfrw.ErrFormat.
func refusal(err error) bool {
	if errors.Is(err, ErrMcountSite) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"not an ELF file", "not a relocatable object", "unsupported machine", "is not supported", "cannot be renumbered"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// FuzzRecord runs the recorder on mutated real objects (a seed file, patched at off with
// patch, cut to cut bytes when cut is not 0), or on patch alone when seed is out of range.
// It must not panic nor modify its input; an error must say the input is malformed (or be
// one of the refusals); a result must parse again, hold one table entry per recorded site,
// and recording it again must change nothing.
func FuzzRecord(f *testing.F) {
	files := recordSeeds(f)
	for i, data := range files {
		addPatchSeeds(f, i, data)
	}
	f.Add(uint8(255), uint32(0), []byte("\x7fELF\x02\x01\x01"), uint32(0))
	f.Add(uint8(255), uint32(0), []byte("!<arch>\n"), uint32(0))
	f.Fuzz(func(t *testing.T, seed uint8, off uint32, patch []byte, cut uint32) {
		in := testenv.FuzzInput(files, seed, off, patch, cut)
		orig := append([]byte(nil), in...)
		res, err := Record(in)
		if !bytes.Equal(in, orig) {
			t.Fatal("Record modified its input")
		}
		if err != nil {
			if !errors.Is(err, elfrw.ErrFormat) && !refusal(err) {
				t.Fatalf("error does not wrap elfrw.ErrFormat: %v", err)
			}
			return
		}
		if res.Out == nil {
			if len(res.Sites) > 0 && res.Note == "" {
				t.Fatalf("%d sites, no output and no note", len(res.Sites))
			}
			return
		}
		checkRecorded(t, in, res)
	})
}

// checkRecorded checks a recorder's output: it parses, its symbols and relocations decode,
// its table parts hold exactly the recorded sites, and a second run leaves it alone.
// Relocation sections the recorder does not use may be broken in the input: they are
// only checked when they were readable there.
func checkRecorded(t *testing.T, in []byte, res *Result) {
	inf, err := elfrw.Parse(in)
	if err != nil {
		t.Fatalf("input parsed in Record but not here: %v", err)
	}
	out, err := elfrw.Parse(res.Out)
	if err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	if _, err := out.Symbols(out.SymTab()); err != nil {
		t.Fatalf("output symbols: %v", err)
	}
	perSec := map[int]int{}
	for _, s := range res.Sites {
		perSec[s.SecIndex]++
	}
	parts := 0
	for _, s := range out.Sections {
		switch {
		case s.Type == elf.SHT_REL || s.Type == elf.SHT_RELA:
			if s.Index < len(inf.Sections) {
				if _, err := inf.Relocs(inf.Sections[s.Index]); err != nil {
					continue
				}
			}
			if _, err := out.Relocs(s); err != nil {
				t.Fatalf("output relocations %s: %v", s.Name, err)
			}
		case s.Name == TableSection && s.Flags&elf.SHF_LINK_ORDER != 0:
			parts++
			d := out.SectionData(s)
			if len(d) != EntrySize*perSec[int(s.Link)] {
				t.Fatalf("table part for section %d: %d bytes for %d sites", s.Link, len(d), perSec[int(s.Link)])
			}
			for i := 0; i < len(d); i += EntrySize {
				if err := DecodeEntry(d[i:], out.ByteOrder).Check(); err != nil {
					t.Fatalf("table part for section %d, entry %d: %v", s.Link, i/EntrySize, err)
				}
			}
		}
	}
	if parts != len(perSec) {
		t.Fatalf("%d table parts for %d sections with sites", parts, len(perSec))
	}
	again, err := Record(res.Out)
	if err != nil {
		t.Fatalf("recording the output again: %v", err)
	}
	if again.Out != nil || !strings.HasPrefix(again.Note, "already") {
		t.Fatalf("second run changed the output (note %q)", again.Note)
	}
}
