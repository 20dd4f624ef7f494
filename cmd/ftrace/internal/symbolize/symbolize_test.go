package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/internal/testenv"
	"golang.org/x/sys/unix"
)

const csrc = `#include <stdio.h>
__attribute__((noinline)) int alpha(int x)
{
	return x * 3;
}

__attribute__((noinline)) static int gamma_(int x)
{
	return alpha(x) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", gamma_(argc));
	return 0;
}
`

const cxxsrc = `namespace ns {
struct Foo {
	int bar(int x);
};
__attribute__((noinline)) int Foo::bar(int x) { return x + 1; }
}
int main() { ns::Foo f; return f.bar(1) - 2; }
`

const bias = 0x555555554000

// build compiles src and returns the program and a mapping of it at bias.
func build(t *testing.T, compiler, name, src string, flags ...string) (string, tracefile.Mapping) {
	t.Helper()
	testenv.Need(t, compiler)
	dir := t.TempDir()
	ext := ".c"
	if compiler == "g++" {
		ext = ".cc"
	}
	srcPath := filepath.Join(dir, name+ext)
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, name)
	testenv.Run(t, dir, compiler, append(append([]string{}, flags...), "-Wl,--build-id", "-o", prog, srcPath)...)
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := BuildID(f)
	if err != nil || len(id) == 0 {
		t.Fatalf("build-id: %v %x", err, id)
	}
	m := tracefile.Mapping{Path: prog, Bias: bias, BuildID: id, Start: ^uint64(0)}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.Start = min(m.Start, bias+p.Vaddr)
			m.End = max(m.End, bias+p.Vaddr+p.Memsz)
		}
	}
	return prog, m
}

func symAddr(t *testing.T, prog, name string) (uint64, uint64) {
	t.Helper()
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Size
		}
	}
	t.Fatalf("%s: no symbol %s", prog, name)
	return 0, 0
}

func TestLookupC(t *testing.T) {
	prog, m := build(t, "gcc", "symc", csrc, "-g", "-O1", "-fcf-protection", "-pie", "-fpie")
	s := New([]tracefile.Mapping{m})
	alpha, size := symAddr(t, prog, "alpha")
	gamma, _ := symAddr(t, prog, "gamma_")
	tests := []struct {
		addr uint64
		name string
		line int
	}{
		{bias + alpha, "alpha", 3},
		{bias + alpha + 4, "alpha", 3}, // fentry site after endbr64
		{bias + alpha + size - 1, "alpha", 3},
		{bias + gamma + 4, "gamma_", 8},
	}
	for _, tt := range tests {
		f := s.Lookup(tt.addr)
		if f.Name != tt.name || f.Line != tt.line || filepath.Base(f.File) != "symc.c" || f.Unknown || f.Module != prog {
			t.Errorf("Lookup(%#x) = %+v, want %s at symc.c:%d", tt.addr, f, tt.name, tt.line)
		}
	}
	if s.Lookup(bias+alpha) != s.Lookup(bias+alpha+4) {
		t.Error("one function resolved to two Funcs")
	}
	out := s.Lookup(0x1000)
	if !out.Unknown || out.Name != "0x1000" {
		t.Errorf("unmapped address: %+v", out)
	}
	if len(s.Warnings()) != 0 {
		t.Errorf("warnings: %v", s.Warnings())
	}
}

// The functions of two LockedLookup calls share one lock: a reader and the stack traces
// of its markers look up from two goroutines (the readers crashed with "concurrent map
// read and map write" when each function had a lock of its own).
func TestLockedLookupsShareALock(t *testing.T) {
	prog, m := build(t, "gcc", "symc", csrc, "-g", "-O1", "-fcf-protection", "-pie", "-fpie")
	s := New([]tracefile.Mapping{m})
	alpha, size := symAddr(t, prog, "alpha")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		lookup := s.LockedLookup()
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				// distinct addresses: each lookup of a new one writes the cache
				addr := bias + alpha + uint64(i*4+g)%size
				if i%2 == 1 {
					addr = 0x100000 + uint64(i*4+g) // unmapped: written too
				}
				if f := lookup(addr); f == nil {
					t.Errorf("lookup(%#x) = nil", addr)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestLookupCXX(t *testing.T) {
	prog, m := build(t, "g++", "symcc", cxxsrc, "-O1", "-pie", "-fpie")
	s := New([]tracefile.Mapping{m})
	bar, _ := symAddr(t, prog, "_ZN2ns3Foo3barEi")
	f := s.Lookup(bias + bar)
	if f.Name != "ns::Foo::bar(int)" || f.Raw != "_ZN2ns3Foo3barEi" || f.File != "" {
		t.Errorf("got %+v", f)
	}
}

func TestStrippedAndMismatch(t *testing.T) {
	prog, m := build(t, "gcc", "syms", csrc, "-O1", "-pie", "-fpie")
	alpha, _ := symAddr(t, prog, "alpha")
	stripped := prog + ".stripped"
	testenv.Run(t, "", "strip", "-o", stripped, prog)
	ms := m
	ms.Path = stripped
	s := New([]tracefile.Mapping{ms})
	f := s.Lookup(bias + alpha + 4)
	// named by its object and file offset, as perf does
	if !f.Unknown || f.Name != fmt.Sprintf("syms.stripped+0x%x", alpha+4) || f.Module != stripped {
		t.Errorf("stripped: %+v", f)
	}

	mm := m
	mm.BuildID = []byte{1, 2, 3}
	s = New([]tracefile.Mapping{mm})
	if f := s.Lookup(bias + alpha); !f.Unknown {
		t.Errorf("mismatched build-id resolved: %+v", f)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "does not match") || !strings.Contains(w[0], prog) {
		t.Errorf("warnings %v", w)
	}

	mg := m
	mg.Path = filepath.Join(t.TempDir(), "gone")
	s = New([]tracefile.Mapping{mg})
	if f := s.Lookup(bias + alpha); !f.Unknown {
		t.Errorf("missing file resolved: %+v", f)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "gone") {
		t.Errorf("warnings %v", w)
	}
}

// A function from an object without DWARF, linked after one with DWARF, gets no
// file:line (rather than the last line of the other object's table).
func TestNoLineOutsideSequences(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("int withdebug(int x) { return x + 1; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.c"), []byte("int withdebug(int);\nint nodebug(int x) { return withdebug(x) * 2; }\nint main(void) { return nodebug(1) - 4; }\n"), 0o644)
	testenv.Run(t, dir, "gcc", "-O1", "-g", "-c", "a.c")
	testenv.Run(t, dir, "gcc", "-O1", "-c", "b.c")
	testenv.Run(t, dir, "gcc", "-o", "prog", "a.o", "b.o")
	prog := filepath.Join(dir, "prog")
	s := New([]tracefile.Mapping{{Path: prog, Start: 0, End: 1 << 40}})
	wd, _ := symAddr(t, prog, "withdebug")
	nd, _ := symAddr(t, prog, "nodebug")
	if f := s.Lookup(wd); f.Name != "withdebug" || filepath.Base(f.File) != "a.c" || f.Line != 1 {
		t.Errorf("withdebug: %+v", f)
	}
	if f := s.Lookup(nd); f.Name != "nodebug" || f.File != "" || f.Line != 0 {
		t.Errorf("nodebug: %+v", f)
	}
}

// A symbol of size 0 (an assembly label, _fini) names the addresses up to the next symbol
// but not past the end of its section: an address beyond a program's code is unknown.
func TestSizeZeroEndsWithSection(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("int main(void) { return 0; }\n"+
		"__asm__(\".section .text.zlast,\\\"ax\\\",@progbits\\n.globl zlast\\n.type zlast,@function\\nzlast:\\n\\tnop\\n\\tnop\\n\\tret\\n.previous\");\n"), 0o644)
	testenv.Run(t, dir, "gcc", "-O1", "-o", "prog", "a.c")
	prog := filepath.Join(dir, "prog")
	s := New([]tracefile.Mapping{{Path: prog, Start: 0, End: 1 << 40}})
	z, _ := symAddr(t, prog, "zlast")
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var end uint64 // of all code
	for _, sec := range f.Sections {
		if sec.Flags&elf.SHF_EXECINSTR != 0 {
			end = max(end, sec.Addr+sec.Size)
		}
	}
	if fn := s.Lookup(z + 2); fn == nil || fn.Name != "zlast" {
		t.Errorf("zlast+2: %+v, want zlast", fn)
	}
	if fn := s.Lookup(end + 0x100); fn != nil && !fn.Unknown {
		t.Errorf("%#x, past all code (ends %#x): named %s", end+0x100, end, fn.Name)
	}
}

// Functions in their own sections, packed end to end (-ffunction-sections
// -falign-functions=1): a line sequence ends at the address where the next function's
// begins, and a last row of no length there must not name the next function's line.
func TestAdjacentSequences(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	// one ends with a call of a noreturn function: gcc gives its closing brace a row of
	// no length, at the address where two begins
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("__attribute__((noreturn)) void die(int);\nvoid one(int x)\n{\n\tdie(x + 1);\n}\n\nint two(int x)\n{\n\treturn x * 2 + 5;\n}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.c"), []byte("#include <stdlib.h>\nint two(int);\n__attribute__((noreturn)) void die(int c) { exit(c); }\nint main(void)\n{\n\treturn two(1) - 7;\n}\n"), 0o644)
	for _, f := range []string{"a.c", "b.c"} {
		testenv.Run(t, dir, "gcc", "-O2", "-g", "-ffunction-sections", "-falign-functions=1", "-fno-inline", "-c", f)
	}
	testenv.Run(t, dir, "gcc", "-o", "prog", "a.o", "b.o")
	prog := filepath.Join(dir, "prog")
	s := New([]tracefile.Mapping{{Path: prog, Start: 0, End: 1 << 40}})
	want := map[string]string{"one": "a.c:3", "two": "a.c:8", "die": "b.c:3", "main": "b.c:5"}
	adjacent := 0
	for name, where := range want {
		addr, size := symAddr(t, prog, name)
		if f := s.Lookup(addr); f.Name != name || fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line) != where {
			t.Errorf("%s: %s:%d, want %s", name, filepath.Base(f.File), f.Line, where)
		}
		for other := range want {
			if a, _ := symAddr(t, prog, other); a == addr+size {
				adjacent++
			}
		}
	}
	if adjacent == 0 {
		t.Fatal("no two functions are adjacent: the case is not exercised")
	}
}

// A program that is gone, or stripped, is symbolised from DIR/.build-id/xx/yyyy.debug.
func TestDebugDir(t *testing.T) {
	prog, m := build(t, "gcc", "symc", csrc, "-g", "-O1", "-pie", "-fpie")
	alpha, _ := symAddr(t, prog, "alpha")
	dbg := t.TempDir()
	id := fmt.Sprintf("%x", m.BuildID)
	if err := os.MkdirAll(filepath.Join(dbg, ".build-id", id[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, "", "cp", prog, filepath.Join(dbg, ".build-id", id[:2], id[2:]+".debug"))
	stripped := prog + ".stripped"
	testenv.Run(t, "", "strip", "-o", stripped, prog)
	for _, path := range []string{filepath.Join(t.TempDir(), "gone"), stripped} {
		mm := m
		mm.Path = path
		s := New([]tracefile.Mapping{mm})
		s.DebugDirs = []string{dbg}
		f := s.Lookup(bias + alpha)
		if f.Name != "alpha" || f.Module != path || filepath.Base(f.File) != "symc.c" {
			t.Errorf("%s: %+v (warnings %v)", path, f, s.Warnings())
		}
	}
}

// TestNotRegularFiles: a memory map naming a FIFO, a directory or a device is refused
// with a warning, without blocking (the FIFO has no writer: opening it for reading the
// ordinary way waits for ever).
func TestNotRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, dir, "/dev/zero"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			done := make(chan *Symbolizer, 1)
			go func() {
				s := New([]tracefile.Mapping{{Path: path, Start: 0x1000, End: 0x2000}})
				s.Lookup(0x1800)
				done <- s
			}()
			select {
			case s := <-done:
				if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], "not a regular file") {
					t.Errorf("warnings %q", w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("symbolizing an address in %s blocks", path)
			}
		})
	}
}

// A function's file:line is its first statement row: a first row naming an inlined
// header's line that is no statement is passed over (a jsoncpp trial showed
// basic_string.h:234 for a json_reader.cpp function). The rows are gcc's of that case.
// A function whose first row comes after two nops (arm64's patchable entry: the lz4
// trial showed stdio2.h:79, the line before it) gets that row, not the one covering the
// nops; so does one whose first bytes are covered by a row of the previous function's
// that is no statement (arm64 with BTI: `bti c` and the nops; the xz trial showed
// block_encode at a line of block_encoder_end).
func TestLineFirstStatement(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.s"), []byte(stmtAsm), 0o644)
	testenv.Run(t, dir, "gcc", "-o", "f", "f.s")
	prog := filepath.Join(dir, "f")
	s := New([]tracefile.Mapping{{Path: prog, Start: 0, End: 1 << 40}})
	for name, want := range map[string]string{"f": "src.c:1439", "main": "src.c:2000", "g": "src.c:3000", "h": "src.c:4000"} {
		addr, _ := symAddr(t, prog, name)
		if fn := s.Lookup(addr); fn == nil || fmt.Sprintf("%s:%d", filepath.Base(fn.File), fn.Line) != want {
			t.Errorf("%s: %+v, want %s", name, fn, want)
		}
	}
}

// stmtAsm: f's first row is hdr.h:234 (no statement), then src.c:1439 at the same address.
const stmtAsm = `	.file	"src.c"
	.text
.Ltext0:
	.file 1 "src.c"
	.file 2 "hdr.h"
	.globl	f
	.type	f, @function
f:
	.loc 2 234 1 is_stmt 0
	.loc 1 1439 1 is_stmt 1
	movl	$1, %eax
	.loc 1 1440 1
	ret
	.size	f, .-f
	.globl	main
	.type	main, @function
main:
	.loc 1 2000 1 is_stmt 1
	call	f
	xorl	%eax, %eax
	ret
	.size	main, .-main
	.globl	g
	.type	g, @function
g:
	nop
	nop
	.loc 1 3000 1 is_stmt 1
	ret
	.size	g, .-g
	.globl	h
	.type	h, @function
h:
	.loc 1 3001 1 is_stmt 0
	nop
	nop
	nop
	.loc 1 4000 1 is_stmt 1
	ret
	.size	h, .-h
.Letext0:
	.section	.debug_info,"",@progbits
	.long	.Linfo_end - .Linfo_start
.Linfo_start:
	.value	0x5
	.byte	0x1
	.byte	0x8
	.long	.Ldebug_abbrev0
	.uleb128 0x1
	.string	"src.c"
	.quad	.Ltext0
	.quad	.Letext0-.Ltext0
	.long	.Ldebug_line0
	.byte	0
.Linfo_end:
	.section	.debug_abbrev,"",@progbits
.Ldebug_abbrev0:
	.uleb128 0x1
	.uleb128 0x11
	.byte	0x1
	.uleb128 0x3
	.uleb128 0x8
	.uleb128 0x11
	.uleb128 0x1
	.uleb128 0x12
	.uleb128 0x7
	.uleb128 0x10
	.uleb128 0x17
	.byte	0
	.byte	0
	.byte	0
	.section	.debug_line,"",@progbits
.Ldebug_line0:
	.section	.note.GNU-stack,"",@progbits
`

// A deleting destructor is told from the complete one; other names are demangled as is.
func TestFuncName(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"_ZN8tinyxml211XMLDocumentD0Ev", "tinyxml2::XMLDocument::~XMLDocument() [deleting]"},
		{"_ZN8tinyxml211XMLDocumentD1Ev", "tinyxml2::XMLDocument::~XMLDocument()"},
		{"_ZN8tinyxml211XMLDocumentD2Ev", "tinyxml2::XMLDocument::~XMLDocument()"},
		{"_ZN3FooD0Ev.cold", "Foo::~Foo() [clone .cold] [deleting]"},
		{"_ZN3Foo4D0EvEv", "Foo::D0Ev()"},
		{"_ZN4D0Ev3FooD0Ev", "D0Ev::Foo::~Foo() [deleting]"},
		{"main", "main"},
		{"D0Ev", "D0Ev"},
	} {
		if got := FuncName(c.raw); got != c.want {
			t.Errorf("FuncName(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// Line tables are read for what ftkit traces and the user's own objects, not for the
// system's libraries (their debug files cost ~80 MB for libc's callers' names alone).
func TestWantLines(t *testing.T) {
	for _, c := range []struct {
		m    tracefile.Mapping
		want bool
	}{
		{tracefile.Mapping{Path: "/usr/bin/prog", Flags: tracefile.MapMain}, true},
		{tracefile.Mapping{Path: "/lib/x86_64-linux-gnu/libc.so.6"}, false},
		{tracefile.Mapping{Path: "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"}, false},
		{tracefile.Mapping{Path: "/home/u/build/libmine.so"}, true},
		{tracefile.Mapping{Path: "/tmp/x/libext.so"}, true},
	} {
		if got := wantLines(&c.m); got != c.want {
			t.Errorf("wantLines(%s) = %v, want %v", c.m.Path, got, c.want)
		}
	}
}

// An object recorded under a guest path (qemu-user -L SYSROOT: /lib/libx.so) is read
// from SYSROOT/lib/libx.so when its build-id matches, and only then.
func TestSysroot(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "lib"), 0o755)
	os.WriteFile(filepath.Join(dir, "x.c"), []byte("int guest_fn(int x) { return x * 3; }\n"), 0o644)
	lib := filepath.Join(root, "lib", "libftkitguest.so")
	testenv.Run(t, dir, "gcc", "-shared", "-fPIC", "-Wl,--build-id", "-o", lib, "x.c")
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := BuildID(f)
	f.Close()
	addr, _ := symAddr(t, lib, "guest_fn")
	for _, c := range []struct {
		id   []byte
		want string
	}{
		{id, "guest_fn"},
		{[]byte{1, 2, 3, 4}, fmt.Sprintf("libftkitguest.so+0x%x", addr)}, // another build: not taken
	} {
		s := New([]tracefile.Mapping{{Path: "/lib/libftkitguest.so", Start: 0x10000, End: 0x20000, Bias: 0x10000, BuildID: c.id}})
		s.Sysroots = []string{filepath.Join(dir, "nothing"), root}
		if fn := s.Lookup(0x10000 + addr); fn == nil || fn.Name != c.want {
			t.Errorf("build-id %x: %+v, want %s", c.id, fn, c.want)
		}
	}
}

// Symbolizers given one Cache read each object once: the traces of one run share the
// Funcs of their program (at whatever address each process mapped it), and a file that
// could not be read warns in each trace that needs it.
func TestSharedCache(t *testing.T) {
	prog, m := build(t, "gcc", "symshared", csrc, "-g", "-O1", "-pie", "-fpie")
	alpha, _ := symAddr(t, prog, "alpha")
	gone := tracefile.Mapping{Path: filepath.Join(t.TempDir(), "gone.so"), Start: 0x7f0000000000, End: 0x7f0000001000,
		Bias: 0x7f0000000000, BuildID: []byte{1, 2, 3}}
	cache := NewCache()
	opens := map[string]int{}
	var first *Func
	for i, shift := range []uint64{0, 0x10000000, 0x20000000} {
		mi := m
		mi.Start, mi.End, mi.Bias = m.Start+shift, m.End+shift, m.Bias+shift
		s := New([]tracefile.Mapping{mi, gone})
		s.Shared = cache
		s.OpenELF = func(path string) (*elf.File, error) {
			opens[path]++
			return OpenRegularELF(path)
		}
		f := s.Lookup(bias + shift + alpha)
		if f.Name != "alpha" {
			t.Fatalf("trace %d: Lookup = %+v, want alpha", i, f)
		}
		if first == nil {
			first = f
		} else if f != first {
			t.Errorf("trace %d: alpha is another Func", i)
		}
		if u := s.Lookup(gone.Start + 0x10); !u.Unknown || len(s.Warnings()) != 1 {
			t.Errorf("trace %d: gone.so: %+v, warnings %v, want an unknown function and one warning", i, u, s.Warnings())
		}
	}
	if opens[prog] != 1 || opens[gone.Path] != 1 {
		t.Errorf("files opened %v, want each once", opens)
	}
}

// A Cache past its budget lets the least recently used objects go: they are read again
// when a later trace needs them; the objects in use stay (a suite of many programs kept
// every one of them).
func TestSharedCacheBudget(t *testing.T) {
	progA, mA := build(t, "gcc", "symbudgeta", csrc, "-g", "-O1", "-pie", "-fpie")
	progB, mB := build(t, "gcc", "symbudgetb", csrc, "-g", "-O1", "-pie", "-fpie")
	alpha, _ := symAddr(t, progA, "alpha")
	cache := NewCache()
	opens := map[string]int{}
	look := func(m tracefile.Mapping, prog string) {
		s := New([]tracefile.Mapping{m})
		s.Shared = cache
		s.OpenELF = func(path string) (*elf.File, error) {
			opens[path]++
			return OpenRegularELF(path)
		}
		if f := s.Lookup(bias + alpha); f.Name != "alpha" {
			t.Fatalf("%s: Lookup = %+v, want alpha", prog, f)
		}
	}
	look(mA, progA)
	look(mA, progA)
	if opens[progA] != 1 {
		t.Fatalf("within the budget: %s opened %d times, want once", progA, opens[progA])
	}
	cache.budget = 1 // one object at a time
	look(mB, progB)  // lets A go
	look(mA, progA)  // read again, lets B go
	look(mA, progA)
	if opens[progA] != 2 || opens[progB] != 1 || len(cache.objs) != 1 || cache.bytes != cache.objs[cacheKeyOf(t, cache)].size {
		t.Errorf("past the budget: opened %v, %d objects held (%d bytes), want A twice, B once, one held", opens, len(cache.objs), cache.bytes)
	}
}

func cacheKeyOf(t *testing.T, c *Cache) string {
	t.Helper()
	for k := range c.objs {
		return k
	}
	return ""
}
