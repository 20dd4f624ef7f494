package mcountloc_test

import (
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// oracleC has global, static, weak and inlined functions, a function in -ffunction-sections'
// special .text.unlikely/.text.startup sections and one in a custom executable section
// (recorded, as gcc records it: lmdb puts its mdb_env_* API in "text_env").
const oracleC = `
#include <stdlib.h>
extern int ext(int);
static int counter;
static __attribute__((noinline)) int st(int x) { counter += x; return counter * 3; }
static inline int inl(int x) { return x + 1; }
__attribute__((weak)) int wk(int x) { return x * 2 + st(x); }
__attribute__((cold, noinline)) void cold_fn(int x) { if (x == 12345) abort(); }
__attribute__((section(".ftkit_custom"), noinline)) int custom(int x) { return x ^ 0x55; }
int glob(int x) { if (x < 0) cold_fn(x); return st(x) + wk(inl(x)) + custom(x); }
int rec(int n) { return n <= 0 ? 0 : rec(n - 1) + glob(n); }
int ext(int x) { return x; }
int main(int argc, char **argv) { (void)argv; return rec(argc) == 42; }
`

// TestOracle compiles the same source with and without gcc's -mrecord-mcount and compares
// the sites per object (section, offset) and after linking (resolved addresses). Plain -pg
// gets the same matrix as -pg -mfentry: its mcount call comes after the frame set-up
// (push %rbp; mov %rsp,%rbp), where the tracers cannot find the return address, so
// recordmcount must refuse every such object (ErrMcountSite) and leave it unchanged.
func TestOracle(t *testing.T) {
	testenv.Need(t, "gcc", "readelf")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC, "stub.c": hookStub})
	testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "stub.c", "-o", "stub.o")
	n := 0
	for _, mode := range []string{"-pg -mfentry", "-pg"} {
		for _, opt := range []string{"-O0", "-O2", "-Os"} {
			for _, pic := range []string{"", "-fPIE", "-fPIC", "-fno-pie"} {
				for _, extra := range []string{"", "-ffunction-sections", "-fcf-protection", "-ffunction-sections -fcf-protection"} {
					flags := strings.Fields(strings.Join([]string{mode, opt, pic, extra}, " "))
					n++
					name := strings.ReplaceAll(strings.Join(flags, ""), "-", "_")
					base, pic := fmt.Sprintf("c%d", n), pic
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						oracleCase(t, dir, base, flags, pic)
					})
				}
			}
		}
	}
}

func oracleCase(t *testing.T, dir, base string, flags []string, pic string) {
	ours, theirs := base+".o", base+"-gcc.o"
	testenv.Run(t, dir, "gcc", append(append([]string{}, flags...), "-c", "t.c", "-o", ours)...)
	testenv.Run(t, dir, "gcc", append(append([]string{}, flags...), "-mrecord-mcount", "-c", "t.c", "-o", theirs)...)
	want := gccSites(t, mustRead(t, filepath.Join(dir, theirs)))
	if !slices.Contains(flags, "-mfentry") {
		if _, err := mcountloc.Record(mustRead(t, filepath.Join(dir, ours))); !errors.Is(err, mcountloc.ErrMcountSite) || len(want) == 0 {
			t.Fatalf("an mcount object (%d sites): Record error %v, want ErrMcountSite", len(want), err)
		}
		return
	}

	res := record(t, filepath.Join(dir, ours))
	got := ourSites(t, mustRead(t, filepath.Join(dir, ours)))
	if got.String() != want.onlyRecorded().String() {
		t.Fatalf("per-object sites differ\nrecordmcount: %v\ngcc:          %v", got, want.onlyRecorded())
	}
	if len(res.Unrecorded) != 0 || len(got[".ftkit_custom"]) != 1 {
		t.Errorf("unrecorded sites %v, sites of .ftkit_custom %v: want custom's recorded", res.Unrecorded, got[".ftkit_custom"])
	}
	if got.count() < 6 {
		t.Errorf("only %d sites: %v", got.count(), got)
	}
	// Running again changes nothing.
	again := record(t, filepath.Join(dir, ours))
	if again.Out != nil || !strings.Contains(again.Note, "already") {
		t.Errorf("second run: changed=%v note %q", again.Out != nil, again.Note)
	}

	// Link both the same way and compare resolved sites (by function + offset).
	link := []string{"-pie"}
	if pic == "-fno-pie" {
		link = []string{"-no-pie"}
	}
	var plain []string
	for i, l := range [][]string{link, append(link, "-Wl,--gc-sections")} {
		pOurs := filepath.Join(dir, fmt.Sprintf("%s-prog%d", base, i))
		r := testenv.Exec(t, dir, "gcc", append(append([]string{}, l...), ours, "stub.o", "-o", pOurs)...)
		if r.Code != 0 || r.Stderr != "" {
			t.Fatalf("link %v: exit %d: %s", l, r.Code, r.Stderr)
		}
		checkNoTextrel(t, pOurs)
		var gotL []string
		for _, s := range checkLinkedCalls(t, pOurs) {
			gotL = append(gotL, s.name)
		}
		sortStrings(gotL)
		if i == 0 {
			// gcc's table has no SHF_LINK_ORDER: --gc-sections would drop all of it, so
			// compare with gcc only in the plain link.
			pTheirs := filepath.Join(dir, base+"-gccprog")
			r := testenv.Exec(t, dir, "gcc", append(append([]string{}, l...), theirs, "stub.o", "-o", pTheirs)...)
			if r.Code != 0 {
				t.Fatalf("linking gcc's object: %s", r.Stderr)
			}
			var wantL []string
			for _, s := range linkedTable(t, pTheirs, true) {
				wantL = append(wantL, s.name)
			}
			sortStrings(wantL)
			if strings.Join(gotL, " ") != strings.Join(wantL, " ") {
				t.Errorf("linked %v: sites differ\nrecordmcount: %v\ngcc:          %v", l, gotL, wantL)
			}
			plain = gotL
			continue
		}
		// --gc-sections: ext is the only unreferenced function; with -ffunction-sections
		// its section and its table part are collected, the rest stays.
		var want []string
		for _, s := range plain {
			if !strings.HasPrefix(s, "ext+") || !strings.Contains(strings.Join(flags, " "), "-ffunction-sections") {
				want = append(want, s)
			}
		}
		if strings.Join(gotL, " ") != strings.Join(want, " ") {
			t.Errorf("--gc-sections: sites\n%v\nwant\n%v", gotL, want)
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestOracleCXX compares recordmcount with gcc -mrecord-mcount per object on C++ sources
// with inline and template functions (COMDAT groups), for -pg -mfentry, then links the
// recorded objects together, which gcc's own tables cannot do, and checks every entry of the
// linked table. Plain -pg objects (mcount called after the frame set-up) must be refused.
func TestOracleCXX(t *testing.T) {
	testenv.Need(t, "g++", "readelf")
	dir := t.TempDir()
	writeFiles(t, dir, cxxFiles)
	writeFiles(t, dir, map[string]string{"stub.c": hookStub})
	testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "stub.c", "-o", "stub.o")
	n := 0
	for _, mode := range []string{"-pg -mfentry", "-pg"} {
		for _, opt := range []string{"-O0", "-O2"} {
			for _, pe := range [][2]string{{"-fPIE", "-ffunction-sections -fcf-protection"}, {"-fno-pie", ""}} {
				pic := pe[0]
				flags := strings.Fields(strings.Join([]string{mode, opt, pic, pe[1]}, " "))
				n++
				name := strings.ReplaceAll(strings.Join(flags, ""), "-", "_")
				base := fmt.Sprintf("x%d", n)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					oracleCXXCase(t, dir, base, flags, pic)
				})
			}
		}
	}
}

func oracleCXXCase(t *testing.T, dir, base string, flags []string, pic string) {
	if !slices.Contains(flags, "-mfentry") {
		for _, src := range []string{"a.cc", "b.cc", "c.cc", "main.cc"} {
			obj := base + "-" + strings.TrimSuffix(src, ".cc") + ".o"
			testenv.Run(t, dir, "g++", append(append([]string{}, flags...), "-c", src, "-o", obj)...)
			if _, err := mcountloc.Record(mustRead(t, filepath.Join(dir, obj))); !errors.Is(err, mcountloc.ErrMcountSite) {
				t.Errorf("%s: an mcount object: Record error %v, want ErrMcountSite", src, err)
			}
		}
		return
	}
	var objs []string
	groups := 0
	for _, src := range []string{"a.cc", "b.cc", "c.cc", "main.cc"} {
		ours := base + "-" + strings.TrimSuffix(src, ".cc") + ".o"
		theirs := base + "-gcc-" + strings.TrimSuffix(src, ".cc") + ".o"
		testenv.Run(t, dir, "g++", append(append([]string{}, flags...), "-c", src, "-o", ours)...)
		testenv.Run(t, dir, "g++", append(append([]string{}, flags...), "-mrecord-mcount", "-c", src, "-o", theirs)...)
		want := gccSites(t, mustRead(t, filepath.Join(dir, theirs))).onlyRecorded()
		record(t, filepath.Join(dir, ours))
		data := mustRead(t, filepath.Join(dir, ours))
		got := ourSites(t, data)
		if got.String() != want.String() {
			t.Errorf("%s: per-object sites differ\nrecordmcount: %v\ngcc:          %v", src, got, want)
		}
		if got.count() == 0 {
			t.Errorf("%s: no sites", src)
		}
		for _, s := range openELF(t, data).Sections {
			if s.Type == elf.SHT_GROUP {
				groups++
			}
		}
		objs = append(objs, ours)
	}
	if groups == 0 {
		t.Fatal("no COMDAT groups in the objects: the test does not test what it should")
	}
	link := "-pie"
	if pic == "-fno-pie" {
		link = "-no-pie"
	}
	fentry := strings.Contains(strings.Join(flags, " "), "-mfentry")
	var plain int
	for _, gc := range []string{"", "-Wl,--gc-sections"} {
		prog := filepath.Join(dir, base+"-prog"+gc)
		args := append(append([]string{link}, objs...), "stub.o", "-o", prog)
		if gc != "" {
			args = append(args, gc)
		}
		r := testenv.Exec(t, dir, "g++", args...)
		if r.Code != 0 || r.Stderr != "" {
			t.Fatalf("link %v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		checkNoTextrel(t, prog)
		sites := checkLinkedCalls(t, prog)
		if fentry {
			checkComplete(t, prog, sites)
		}
		if out := testenv.Run(t, dir, prog); strings.TrimSpace(out) == "" {
			t.Error("program printed nothing")
		}
		if gc == "" {
			plain = len(sites)
		} else if strings.Contains(strings.Join(flags, " "), "-ffunction-sections") && len(sites) >= plain {
			// unused_function has a section of its own only with -ffunction-sections.
			t.Errorf("--gc-sections kept %d of %d entries", len(sites), plain)
		}
	}
}
