package fnargs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RuntimeSpecs: one line per function in the runtime's syntax, strings as A, values of
// 4 bytes or less as 32-bit words, a 16-byte struct one item per register; a name two functions with
// different plans share is left out, unless keep leaves one of them out first.
func TestRuntimeSpecs(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	srcs := map[string]string{
		"a.c": `struct two { long a, b; };
static __attribute__((noipa)) int dup(int x) { return x + 1; }
__attribute__((noipa)) int parse(const char *buf, unsigned long len) { return buf[0] + (int)len; }
__attribute__((noipa)) struct two mk(long a, double d) { struct two t = { a, (long)d }; return t; }
__attribute__((noipa)) long takes(struct two t) { return t.a + t.b; }
int a_main(void) { struct two t = mk(1, 2.0); return dup(1) + parse("x", 1) + (int)takes(t); }`,
		"b.c": `static __attribute__((noipa)) long dup(long x, long y) { return x * y; }
long b_main(void) { return dup(2, 3); }`,
		"m.c": `int a_main(void); long b_main(void); int main(void) { return a_main() + (int)b_main(); }`,
	}
	var files []string
	for n, s := range srcs {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("gcc", append([]string{"-O2", "-g", "-o", prog}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	tab, err := Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	args, rets, skipped := tab.RuntimeSpecs(nil)
	for _, want := range []string{"parse@arg1/A%rdi,arg2/a%rsi\n", "mk@arg1/a%rdi,arg2/a%xmm0\n", "takes@arg1/a%rdi,arg1/a%rsi\n"} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in\n%s", want, args)
		}
	}
	for _, want := range []string{"parse@retval/a32%rax\n", "mk@retval/a%rax,retval/a%rdx\n"} {
		if !strings.Contains(rets, want) {
			t.Errorf("no %q in\n%s", want, rets)
		}
	}
	if strings.Contains(args, "dup@") || skipped != 1 {
		t.Errorf("dup (two plans) not left out (skipped %d):\n%s", skipped, args)
	}
	// keep one dup only: its plan is written
	var keepAt uint64
	for _, f := range tab.ByName("dup") {
		if len(f.Args) == 1 {
			keepAt = f.Entry
		}
	}
	args, _, _ = tab.RuntimeSpecs(func(e uint64) bool {
		f := tab.ByEntry(e)
		return f == nil || f.Name != "dup" || e == keepAt
	})
	if !strings.Contains(args, "dup@arg1/a32%rdi\n") {
		t.Errorf("kept dup not written:\n%s", args)
	}
}

// C++ functions of internal linkage (an anonymous namespace, static) have no DWARF
// linkage name: their specs name their symbols, which the runtime matches (the leveldb
// trial's `record -a` wrote their bare names, which match nothing, and showed no values).
func TestRuntimeSpecsInternalLinkage(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.cc")
	os.WriteFile(src, []byte(`namespace { __attribute__((noipa)) int twice(int x) { return 2 * x; } }
namespace ns { __attribute__((noipa)) int thrice(int x) { return 3 * x; } }
static __attribute__((noipa)) int quad(int x) { return 4 * x; }
int main(int argc, char **) { return twice(argc) + ns::thrice(argc) + quad(argc); }
`), 0o644)
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("g++", "-O2", "-g", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	tab, err := Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	args, rets, _ := tab.RuntimeSpecs(nil)
	for _, want := range []string{"_ZN12_GLOBAL__N_15twiceEi@arg1/a32%rdi\n", "_ZN2ns6thriceEi@arg1/a32%rdi\n", "_ZL4quadi@arg1/a32%rdi\n"} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in\n%s", want, args)
		}
	}
	if !strings.Contains(rets, "_ZL4quadi@retval/a32%rax\n") {
		t.Errorf("no quad return value in\n%s", rets)
	}
	if f := tab.ByName("_ZN12_GLOBAL__N_15twiceEi"); len(f) != 1 || f[0].Name != "(anonymous namespace)::twice" {
		t.Errorf("twice by its symbol: %v", f)
	}
}

// Aliases (a constructor's C1 and C2 at one address, in an anonymous namespace: no DWARF
// linkage name) are named by the symbol the runtime keeps for the address, the greatest
// (the leveldb trial's specs named D1, which matched nothing); a function that exists only
// as a gcc clone is left out.
func TestRuntimeSpecsAliasesAndClones(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.cc")
	os.WriteFile(src, []byte(`#include <cstdio>
namespace {
struct Counter {
	int n;
	__attribute__((noinline)) explicit Counter(int x) : n(x) { std::printf("made %d\n", n); }
	__attribute__((noinline)) ~Counter() { std::printf("gone %d\n", n); }
};
}
struct Big { long a, b, c, d; };
static __attribute__((noinline)) long pick(Big b, int) { return b.b; }
__attribute__((noinline)) void use(int x) { Counter c(x); Big b{1, x, 3, 4}; std::printf("%ld\n", pick(b, x)); }
int main(int argc, char **) { use(argc); return 0; }
`), 0o644)
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("g++", "-O2", "-g", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	nm, err := exec.Command("nm", prog).Output()
	if err != nil || !strings.Contains(string(nm), "CounterD1Ev") || !strings.Contains(string(nm), "pick3Bigi.") {
		t.Skipf("this g++ makes no D1/D2 aliases or no clone of pick:\n%s", nm)
	}
	tab, err := Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	args, _, _ := tab.RuntimeSpecs(nil)
	for _, want := range []string{"_ZN12_GLOBAL__N_17CounterC2Ei@arg1/a%rdi,arg2/a32%rsi\n", "_ZN12_GLOBAL__N_17CounterD2Ev@arg1/a%rdi\n"} {
		if !strings.Contains(args, want) {
			t.Errorf("no %q in\n%s", want, args)
		}
	}
	if strings.Contains(args, "C1Ei") || strings.Contains(args, "D1Ev") || strings.Contains(args, "pick") {
		t.Errorf("an alias the runtime does not use, or the clone, in\n%s", args)
	}
}

// A struct's last word holding only 4 bytes of members (the rest padding the caller never
// wrote) is recorded as 32 bits; a word of members, or of a union, whole.
func TestPartBits(t *testing.T) {
	i32 := &Type{Kind: KInt, Size: 4}
	i64 := &Type{Kind: KInt, Size: 8}
	for _, tt := range []struct {
		name string
		typ  *Type
		want string
	}{
		{"long+int", &Type{Kind: KStruct, Size: 16, Fields: []Field{{Off: 0, Type: i64}, {Off: 8, Type: i32}}}, "arg1/a%rdi,arg1/a32%rsi"},
		{"long+long", &Type{Kind: KStruct, Size: 16, Fields: []Field{{Off: 0, Type: i64}, {Off: 8, Type: i64}}}, "arg1/a%rdi,arg1/a%rsi"},
		{"long+int+int", &Type{Kind: KStruct, Size: 16, Fields: []Field{{Off: 0, Type: i64}, {Off: 8, Type: i32}, {Off: 12, Type: i32}}}, "arg1/a%rdi,arg1/a%rsi"},
		{"long+bitfield", &Type{Kind: KStruct, Size: 16, Fields: []Field{{Off: 0, Type: i64}, {Off: 8, Type: i32, BitSize: 3}}}, "arg1/a%rdi,arg1/a32%rsi"},
		{"long+nested int", &Type{Kind: KStruct, Size: 16, Fields: []Field{{Off: 0, Type: i64}, {Off: 8, Type: &Type{Kind: KStruct, Size: 8, Fields: []Field{{Off: 0, Type: i32}}}}}}, "arg1/a%rdi,arg1/a32%rsi"},
	} {
		a := &Arg{Name: "p", Type: tt.typ, Size: tt.typ.Size}
		assign([]*Arg{a}, nil)
		args, _ := runtimeItems(&Func{Args: []*Arg{a}})
		if args != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, args, tt.want)
		}
	}
}
