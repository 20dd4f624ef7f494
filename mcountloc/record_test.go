package mcountloc_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// checkComplete checks that every function of a linked -mfentry program that starts with a
// call to a hook (after an optional endbr64) has that call in the table.
func checkComplete(t testing.TB, path string, sites []linkedSite) {
	t.Helper()
	f := openELF(t, mustRead(t, path))
	syms, _ := f.Symbols()
	hooks := map[uint64]bool{}
	for _, s := range syms {
		if mcountloc.Callees[s.Name] && s.Section != elf.SHN_UNDEF {
			hooks[s.Value] = true
		}
	}
	in := map[uint64]bool{}
	for _, s := range sites {
		in[s.addr] = true
	}
	checked := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size < 8 || s.Section == elf.SHN_UNDEF {
			continue
		}
		addr := s.Value
		code := codeAt(t, f, addr, 8)
		if mcountloc.HasEndbr64(code) {
			addr += 4
			code = codeAt(t, f, addr, 6)
		}
		k, _, target, err := mcountloc.X86SiteTarget(addr, code)
		if err != nil || k == mcountloc.KindCallGOT || !hooks[target] {
			continue
		}
		checked++
		if !in[addr] {
			t.Errorf("%s: %s calls the hook at %#x but the site is not in the table", path, s.Name, addr)
		}
	}
	if checked == 0 {
		t.Errorf("%s: no function starts with a hook call", path)
	}
}

var cxxFiles = map[string]string{
	"tmpl.h": `
#include <map>
#include <string>
#include <vector>
#include <memory>
template <class T> struct Stack {
	std::vector<T> v;
	__attribute__((noinline)) void push(const T &x) { v.push_back(x); }
	__attribute__((noinline)) T pop() { T x = v.back(); v.pop_back(); return x; }
	bool empty() const { return v.empty(); }
};
struct Shape { virtual ~Shape() {} virtual double area() const = 0; };
struct Sq : Shape { double s; explicit Sq(double x) : s(x) {} double area() const override { return s * s; } };
template <class K, class V> __attribute__((noinline)) V lookup(const std::map<K, V> &m, const K &k) {
	auto it = m.find(k); return it == m.end() ? V() : it->second;
}
inline __attribute__((noinline)) int shared_inline(int x) { return x * 5 + 1; }
template <int N> __attribute__((noinline)) int fact() { return N * fact<N - 1>(); }
template <> inline __attribute__((noinline)) int fact<0>() { return 1; }
`,
	"a.cc": `#include "tmpl.h"
int fa(int x) { Stack<int> s; s.push(x); s.push(shared_inline(x)); std::map<int,int> m{{1,x}}; return s.pop() + lookup(m, 1) + fact<4>(); }
`,
	"b.cc": `#include "tmpl.h"
int fb(int x) { Stack<std::string> s; s.push(std::to_string(x)); std::unique_ptr<Shape> p(new Sq(x)); return (int)s.pop().size() + (int)p->area() + shared_inline(x) + fact<3>(); }
`,
	"c.cc": `#include "tmpl.h"
int fc(int x) { Stack<double> s; s.push(x); std::map<std::string,int> m{{"k",x}}; return (int)s.pop() + lookup(m, std::string("k")) + fact<4>(); }
`,
	"main.cc": `#include <cstdio>
int fa(int); int fb(int); int fc(int);
int unused_function(int x) { return x * 77; }
int main() { int r = fa(1) + fb(2) + fc(3); std::printf("%d\n", r); return r == 0; }
`,
}

// TestCXXComdat: several objects sharing inline and template functions (COMDAT groups)
// link with and without PIE and --gc-sections; every linked entry is a hook call, none
// twice, none missing. gcc's own -mrecord-mcount cannot link the same objects.
func TestCXXComdat(t *testing.T) {
	testenv.Need(t, "g++", "readelf")
	for _, opt := range []string{"-O0", "-O2"} {
		for _, pie := range []string{"-fPIE", "-fno-pie"} {
			t.Run(opt+pie, func(t *testing.T) {
				dir := t.TempDir()
				writeFiles(t, dir, cxxFiles)
				writeFiles(t, dir, map[string]string{"stub.c": hookStub})
				testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "stub.c", "-o", "stub.o")
				objs := []string{"a.o", "b.o", "c.o", "main.o"}
				added := 0
				for _, o := range objs {
					src := strings.TrimSuffix(o, ".o") + ".cc"
					testenv.Run(t, dir, "g++", opt, pie, "-ffunction-sections", "-pg", "-mfentry", "-c", src, "-o", o)
					before, _ := elfrw.Parse(mustRead(t, filepath.Join(dir, o)))
					nb, _ := before.Symbols(before.SymTab())
					record(t, filepath.Join(dir, o))
					after, _ := elfrw.Parse(mustRead(t, filepath.Join(dir, o)))
					na, _ := after.Symbols(after.SymTab())
					added += len(na) - len(nb)
					readelfClean(t, filepath.Join(dir, o))
					ourSites(t, mustRead(t, filepath.Join(dir, o)))
				}
				t.Logf("%d section symbols added", added)
				link := "-pie"
				if pie == "-fno-pie" {
					link = "-no-pie"
				}
				var plain []linkedSite
				for _, gc := range []string{"", "-Wl,--gc-sections"} {
					prog := filepath.Join(dir, "prog"+gc)
					args := append([]string{link}, objs...)
					args = append(args, "stub.o", "-o", prog)
					if gc != "" {
						args = append(args, gc)
					}
					r := testenv.Exec(t, dir, "g++", args...)
					if r.Code != 0 || r.Stderr != "" {
						t.Fatalf("link %s %s: exit %d\n%s", link, gc, r.Code, r.Stderr)
					}
					checkNoTextrel(t, prog)
					sites := checkLinkedCalls(t, prog)
					checkComplete(t, prog, sites)
					if out := testenv.Run(t, dir, prog); strings.TrimSpace(out) == "" {
						t.Errorf("program printed nothing")
					}
					names := map[string]bool{}
					for _, s := range sites {
						names[strings.SplitN(s.name, "+", 2)[0]] = true
					}
					if gc == "" {
						plain = sites
						if !names["_Z15unused_functioni"] || !names["_Z4factILi4EEiv"] || !names["_Z13shared_inlinei"] {
							t.Errorf("expected functions missing from the table: %v", names)
						}
					} else {
						if names["_Z15unused_functioni"] || len(sites) >= len(plain) {
							t.Errorf("--gc-sections kept the entry of a collected function (%d vs %d entries)", len(sites), len(plain))
						}
					}
				}
				checkStartStop(t, dir, link, objs, len(plain))
				// gcc's own tables break this link (COMDAT duplicates) in gcc 12; log it.
				for _, o := range objs {
					src := strings.TrimSuffix(o, ".o") + ".cc"
					testenv.Run(t, dir, "g++", opt, pie, "-pg", "-mfentry", "-mrecord-mcount", "-c", src, "-o", "gcc-"+o)
				}
				r := testenv.Exec(t, dir, "g++", link, "gcc-a.o", "gcc-b.o", "gcc-c.o", "gcc-main.o", "stub.o", "-o", "gccprog")
				t.Logf("gcc -mrecord-mcount link: exit %d %.200s", r.Code, r.Stderr)
			})
		}
	}
}

// TestEdgeCases covers objects with no sites, objects already tabled, calls that are not
// calls, weak-only sections and the kernel's extra section names.
func TestEdgeCases(t *testing.T) {
	testenv.Need(t, "gcc", "as", "readelf")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"nosites.c": "int x = 1; int f(int a) { return a + x; }\n",
		"weak.c":    "__attribute__((weak)) int w(int a) { return a * 3; }\n",
		"bad.s": `
	.text
	.globl good
good:
	call *__fentry__@GOTPCREL(%rip)
	jmp __fentry__
	movq __fentry__@GOTPCREL(%rip), %rax
	.long __fentry__ - .
	ret
	.section .init.text,"ax",@progbits
init1:
	call __fentry__
	ret
	.section .other.exec,"ax",@progbits
other:
	call __fentry__
	ret
	.section .init,"ax",@progbits
glue:
	call __fentry__
	ret
	.section .data,"aw"
	.quad __fentry__
`,
	})
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", "nosites.c", "-o", "nosites.o")
	testenv.Run(t, dir, "gcc", "-O2", "-c", "nosites.c", "-o", "noprof.o")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-mrecord-mcount", "-c", "nosites.c", "-o", "gcc.o")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-ffunction-sections", "-fno-asynchronous-unwind-tables", "-c", "weak.c", "-o", "weak.o")
	testenv.Run(t, dir, "as", "bad.s", "-o", "bad.o")

	t.Run("no sites", func(t *testing.T) {
		res, err := mcountloc.Record(mustRead(t, filepath.Join(dir, "noprof.o")))
		if err != nil || res.Out != nil || len(res.Sites) != 0 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("gcc table left alone", func(t *testing.T) {
		res, err := mcountloc.Record(mustRead(t, filepath.Join(dir, "gcc.o")))
		if err != nil || res.Out != nil || !strings.Contains(res.Note, "gcc") {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		p := filepath.Join(dir, "nosites.o")
		record(t, p)
		first := mustRead(t, p)
		res := record(t, p)
		if res.Out != nil || !bytes.Equal(first, mustRead(t, p)) {
			t.Fatal("second run changed the file")
		}
	})
	t.Run("weak-only section gets a section symbol", func(t *testing.T) {
		p := filepath.Join(dir, "weak.o")
		before, _ := elfrw.Parse(mustRead(t, p))
		for _, s := range must(before.Symbols(before.SymTab())) {
			if s.Type() == elf.STT_SECTION && before.Sections[s.Shndx].Name == ".text.w" {
				t.Skip("gcc emitted a section symbol for .text.w")
			}
		}
		record(t, p)
		readelfClean(t, p)
		m := ourSites(t, mustRead(t, p))
		if len(m[".text.w"]) != 1 {
			t.Fatalf("sites %v", m)
		}
		testenv.Run(t, dir, "ld", "-r", p, "-o", filepath.Join(dir, "weak.r.o"))
	})
	t.Run("not calls are reported", func(t *testing.T) {
		res, err := mcountloc.Record(mustRead(t, filepath.Join(dir, "bad.o")))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range res.Sites {
			got = append(got, fmt.Sprintf("%s+%#x/%d/%v/%s", s.Section, s.Offset, s.Len, s.Kind, s.Func))
		}
		want := "[.text+0x0/6/ff15/good .init.text+0x0/5/e8/init1 .other.exec+0x0/5/e8/other]"
		if fmt.Sprint(got) != want {
			t.Errorf("sites %v, want %v", got, want)
		}
		if len(res.Unrecorded) != 1 || res.Unrecorded[0].Section != ".init" {
			t.Errorf("unrecorded %v", res.Unrecorded)
		}
		if len(res.Problems) != 3 {
			t.Errorf("problems %q, want 3 (jmp, mov, data word)", res.Problems)
		}
		for _, p := range res.Problems {
			t.Log(p)
		}
	})
	t.Run("section names", func(t *testing.T) {
		for name, want := range map[string]bool{".text": true, ".text.unlikely.f": true, ".text.startup": true, ".init.text": true,
			".sched.text": true, ".cpuidle.text": true, ".ref.text": true, "text_env": true, ".fini": false, ".init": false, ".mysec": true} {
			if mcountloc.IsRecordedSection(name) != want {
				t.Errorf("IsRecordedSection(%q) != %v", name, want)
			}
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestManySections: more than 65279 sections (SHN_XINDEX, .symtab_shndx, e_shnum in
// section 0), with section symbols that must go through .symtab_shndx.
func TestManySections(t *testing.T) {
	testenv.Need(t, "as", "ld", "readelf")
	if testing.Short() {
		t.Skip("slow: -short")
	}
	dir := t.TempDir()
	var b strings.Builder
	const n = 33000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, ".section .text.f%d,\"ax\",@progbits\n.globl f%d\n.type f%d,@function\nf%d:\ncall __fentry__\nret\n.size f%d,.-f%d\n", i, i, i, i, i, i)
	}
	writeFiles(t, dir, map[string]string{"many.s": b.String()})
	testenv.Run(t, dir, "as", "many.s", "-o", "many.o")
	p := filepath.Join(dir, "many.o")
	res := record(t, p)
	if len(res.Sites) != n {
		t.Fatalf("%d sites", len(res.Sites))
	}
	out := mustRead(t, p)
	f := openELF(t, out)
	if len(f.Sections) < 3*n {
		t.Fatalf("%d sections", len(f.Sections))
	}
	r := testenv.Exec(t, dir, "readelf", "-h", "-S", "-s", "-g", "-W", p)
	if r.Code != 0 || r.Stderr != "" || strings.Contains(r.Stdout, "Warning") {
		t.Fatalf("readelf: %d %s", r.Code, r.Stderr)
	}
	// The last function's table part points at it through a symbol above SHN_LORESERVE.
	m := ourSites(t, out)
	if len(m) != n || len(m[fmt.Sprintf(".text.f%d", n-1)]) != 1 {
		t.Fatalf("%d table parts", len(m))
	}
	testenv.Run(t, dir, "ld", "-r", p, "-o", filepath.Join(dir, "many.r.o"))
	if _, err := os.Stat(filepath.Join(dir, "many.r.o")); err != nil {
		t.Fatal(err)
	}
}

// checkStartStop links objs with an object that references __start___mcount_loc and
// __stop___mcount_loc: GNU ld (bfd) must define them around one output __mcount_loc that
// gathers every part of every object, less the parts of discarded COMDAT duplicates, in
// the same number of entries as the link without the reference (entries).
func checkStartStop(t *testing.T, dir, link string, objs []string, entries int) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"startstop.c": `
extern const char __start___mcount_loc[], __stop___mcount_loc[];
const void *const ftkit_table[2] = {__start___mcount_loc, __stop___mcount_loc};
`})
	testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "startstop.c", "-o", "startstop.o")
	prog := filepath.Join(dir, "prog-startstop")
	args := append(append([]string{link, "-fuse-ld=bfd"}, objs...), "startstop.o", "stub.o", "-o", prog)
	if r := testenv.Exec(t, dir, "g++", args...); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("link with __start/__stop: exit %d\n%s", r.Code, r.Stderr)
	}
	// Expected entries: every object's parts, a COMDAT group's only from its first copy.
	want, dropped, seen := 0, 0, map[string]bool{}
	for _, o := range objs {
		f := openELF(t, mustRead(t, filepath.Join(dir, o)))
		syms, _ := f.Symbols()
		sig := map[int]string{}
		for _, g := range f.Sections {
			if g.Type != elf.SHT_GROUP || g.Info == 0 || int(g.Info) > len(syms) {
				continue
			}
			d, _ := g.Data()
			for i := 4; i+4 <= len(d); i += 4 {
				sig[int(binary.LittleEndian.Uint32(d[i:]))] = syms[g.Info-1].Name
			}
		}
		dup := map[string]bool{}
		for i, s := range f.Sections {
			if s.Name != mcountloc.TableSection {
				continue
			}
			if g, ok := sig[i]; ok {
				if seen[g] {
					dropped += int(s.Size / mcountloc.EntrySize)
					continue
				}
				dup[g] = true
			}
			want += int(s.Size / mcountloc.EntrySize)
		}
		for g := range dup {
			seen[g] = true
		}
	}
	if dropped == 0 {
		t.Fatal("no COMDAT duplicates with table parts: the objects do not test discarding")
	}
	t.Logf("__start/__stop: %d entries, %d in discarded COMDAT duplicates", want, dropped)
	f := openELF(t, mustRead(t, prog))
	tab := f.Section(mcountloc.TableSection)
	syms, _ := f.Symbols()
	var start, stop uint64
	found := 0
	for _, s := range syms {
		switch s.Name {
		case "__start___mcount_loc":
			start = s.Value
			found++
		case "__stop___mcount_loc":
			stop = s.Value
			found++
		}
	}
	if tab == nil || found != 2 {
		t.Fatalf("linked program: table %v, %d of the __start/__stop symbols", tab != nil, found)
	}
	if start != tab.Addr || stop != tab.Addr+tab.Size {
		t.Errorf("__start/__stop = [%#x, %#x), table at [%#x, %#x)", start, stop, tab.Addr, tab.Addr+tab.Size)
	}
	if n := int(tab.Size / mcountloc.EntrySize); n != want || n != entries {
		t.Errorf("table between __start and __stop has %d entries; %d parts' entries expected, %d without the reference", n, want, entries)
	}
	if len(checkLinkedCalls(t, prog)) != entries {
		t.Errorf("linked entries differ with the __start/__stop reference")
	}
}
