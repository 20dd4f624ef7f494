package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// Call sites whose stack at the call is not the function's entry stack: gcc -pg without
// -mfentry (mcount after the frame setup) and GCC nested functions (push %r10 first). The
// tools refuse or leave them out, the runtime refuses them in tables ftlink did not
// process; either way the program computes the same under both tracers.

const mcountSrc = `#include <stdio.h>
int sq(int x) { return x * x; }
int sum(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i); return s; }
int main(void) { printf("s=%d\n", sum(5)); return 0; }
`

const mcountCxxSrc = `#include <cstdio>
#include <vector>
template <typename T> T sq(T x) { return x * x; }
struct Acc { long s = 0; void add(long v) { s += sq(v); } };
int main() { Acc a; std::vector<long> v{1, 2, 3, 4}; for (long x : v) a.add(x); std::printf("s=%ld\n", a.s); return 0; }
`

// nestedSrc: add uses the enclosing frame's k through the static chain (%r10), and is
// called through a pointer (an executable-stack trampoline).
const nestedSrc = `#include <stdio.h>
__attribute__((noinline)) static int apply(int (*f)(int), int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += f(i);
	return s;
}
int main(int argc, char **argv)
{
	int k = argc + 1;
	__attribute__((noinline)) int add(int x) { return x * k + (argv[0] != 0); }
	printf("s=%d direct=%d\n", apply(add, 5), add(7));
	return 0;
}
`

func writeSrc(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMcountObjectsRefused: recordmcount refuses real gcc/g++ -pg objects (no -mfentry)
// naming the file and the fix, and leaves them unchanged.
func TestMcountObjectsRefused(t *testing.T) {
	for _, tc := range []struct{ compiler, ext, src string }{
		{"gcc", ".c", mcountSrc},
		{"g++", ".cc", mcountCxxSrc},
	} {
		t.Run(tc.compiler, func(t *testing.T) {
			testenv.Need(t, tc.compiler)
			dir := t.TempDir()
			src := writeSrc(t, dir, "m"+tc.ext, tc.src)
			obj := filepath.Join(dir, "m.o")
			testenv.Run(t, dir, tc.compiler, "-O2", "-pg", "-c", src, "-o", obj)
			before, err := os.ReadFile(obj)
			if err != nil {
				t.Fatal(err)
			}
			r := testenv.Exec(t, dir, testenv.Tool(t, "recordmcount"), obj)
			if r.Code != 1 || !strings.Contains(r.Stderr, obj+":") || !strings.Contains(r.Stderr, "-mfentry") ||
				!strings.Contains(r.Stderr, "mcount") {
				t.Errorf("recordmcount on a -pg object: exit %d, stderr %q; want exit 1 naming the file and -mfentry", r.Code, r.Stderr)
			}
			after, err := os.ReadFile(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("recordmcount changed the refused object")
			}
		})
	}
}

// TestMcountRuntimeAndFtlink: -pg -mrecord-mcount programs (gcc's own table, mcount sites),
// C and C++, linked with libftrt: ftlink refuses them, and the runtime, given the
// unprocessed table, refuses the sites and the program prints the same as untraced.
func TestMcountRuntimeAndFtlink(t *testing.T) {
	lib, _ := testenv.Runtime(t)
	for _, tc := range []struct{ compiler, ext, src, want, pie string }{
		{"gcc", ".c", mcountSrc, "s=30\n", "pie"},
		{"g++", ".cc", mcountCxxSrc, "s=30\n", "pie"},
		// non-PIE: e8 calls to mcount@plt, whose target looks like a PLT stub for __fentry__
		{"gcc", ".c", mcountSrc, "s=30\n", "no-pie"},
		{"g++", ".cc", mcountCxxSrc, "s=30\n", "no-pie"},
	} {
		t.Run(tc.compiler+"-"+tc.pie, func(t *testing.T) {
			testenv.Need(t, tc.compiler)
			dir := t.TempDir()
			src := writeSrc(t, dir, "m"+tc.ext, tc.src)
			cflags, ldflags := []string{"-fpie"}, []string{"-pie"}
			if tc.pie == "no-pie" {
				cflags, ldflags = []string{"-fno-pie"}, []string{"-no-pie"}
			}
			testenv.Run(t, dir, tc.compiler, append(cflags, "-O2", "-pg", "-mrecord-mcount", "-c", src, "-o", "m.o")...)
			prog := filepath.Join(dir, "m")
			// Nothing in an mcount object references __fentry__: pull the runtime in by hand.
			testenv.Run(t, dir, tc.compiler, append(ldflags, "-o", prog, "m.o", "-Wl,-u,__fentry__", "-L"+lib, "-lftrt", "-lpthread", "-ldl")...)
			plain := testenv.Run(t, dir, prog)
			if plain != tc.want {
				t.Fatalf("untraced output %q, want %q", plain, tc.want)
			}
			for _, tracer := range []string{"function_graph", "function"} {
				r := testenv.Exec(t, dir, testenv.Tool(t, "ftrace"), "record", "-t", tracer, "-o", tracer+".dat", "--", prog)
				if r.Stdout != plain {
					t.Errorf("%s: traced output %q, untraced %q", tracer, r.Stdout, plain)
				}
				// every site refused, each as an mcount site
				if n := strings.Count(r.Stderr, "refused (an mcount site: built with -pg without -mfentry, recompile with -pg -mfentry)"); n < 2 || n != strings.Count(r.Stderr, "refused") {
					t.Errorf("%s: the runtime does not refuse every mcount site as such:\n%s", tracer, r.Stderr)
				}
			}
			before, err := os.ReadFile(prog)
			if err != nil {
				t.Fatal(err)
			}
			r := testenv.Exec(t, dir, testenv.Tool(t, "ftlink"), prog)
			if r.Code == 0 || !strings.Contains(r.Stderr, prog) || !strings.Contains(r.Stderr, "-mfentry") {
				t.Errorf("ftlink on an mcount program: exit %d, stderr %q", r.Code, r.Stderr)
			}
			if after, _ := os.ReadFile(prog); !bytes.Equal(before, after) {
				t.Error("ftlink changed the refused program")
			}
		})
	}
}

// TestNestedFunction: a real GCC nested function using its static chain, through the
// ftkit flow and through gcc's own table without ftlink: same output traced as untraced
// under both tracers, and the tools say why the site is left out.
func TestNestedFunction(t *testing.T) {
	testenv.Need(t, "gcc")
	lib, _ := testenv.Runtime(t)
	ftrace := testenv.Tool(t, "ftrace")
	for _, flow := range []string{"recordmcount+ftlink", "gcc-table-unlinked"} {
		t.Run(flow, func(t *testing.T) {
			dir := t.TempDir()
			src := writeSrc(t, dir, "n.c", nestedSrc)
			prog := filepath.Join(dir, "n")
			if flow == "recordmcount+ftlink" {
				testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", src, "-o", "n.o")
				r := testenv.Exec(t, dir, testenv.Tool(t, "recordmcount"), "n.o")
				if r.Code != 0 || !strings.Contains(r.Stderr, "add") || !strings.Contains(r.Stderr, "push %r10") {
					t.Errorf("recordmcount: exit %d, stderr %q; want a warning naming add and push %%r10", r.Code, r.Stderr)
				}
				testenv.Run(t, dir, "gcc", "-o", prog, "n.o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
				testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
			} else {
				testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-mrecord-mcount", "-c", src, "-o", "n.o")
				testenv.Run(t, dir, "gcc", "-o", prog, "n.o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
			}
			plain := testenv.Run(t, dir, prog)
			if plain != "s=25 direct=15\n" {
				t.Fatalf("untraced output %q", plain)
			}
			for _, tracer := range []string{"function_graph", "function"} {
				r := testenv.Exec(t, dir, ftrace, "record", "-t", tracer, "-o", tracer+".dat", "--", prog)
				if r.Code != 0 || r.Stdout != plain {
					t.Errorf("%s: exit %d, traced output %q, untraced %q\n%s", tracer, r.Code, r.Stdout, plain, r.Stderr)
					continue
				}
				_, calls := reportCalls(t, dir, tracer+".dat")
				apply := 0 // gcc may clone it: apply.constprop.0
				for name, n := range calls {
					if strings.HasPrefix(name, "apply") {
						apply += int(n)
					}
				}
				if apply != 1 || calls["main"] != 1 {
					t.Errorf("%s: calls %v, want apply and main once", tracer, calls)
				}
			}
		})
	}
}

// TestRecordWithoutTable: a -pg -mfentry program linked with libftrt but never run through
// recordmcount: the runtime and ftrace record both say why the trace is empty, and how to
// fix it.
func TestRecordWithoutTable(t *testing.T) {
	testenv.Need(t, "gcc")
	lib, _ := testenv.Runtime(t)
	dir := t.TempDir()
	src := writeSrc(t, dir, "m.c", mcountSrc)
	prog := filepath.Join(dir, "m")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", src, "-o", "m.o")
	testenv.Run(t, dir, "gcc", "-o", prog, "m.o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	r := testenv.Exec(t, dir, testenv.Tool(t, "ftrace"), "record", "-o", "t.dat", "--", prog)
	if r.Stdout != "s=30\n" {
		t.Errorf("output %q", r.Stdout)
	}
	for _, want := range []string{
		"ftkit: " + prog + ": no loaded object has a __mcount_loc call-site table", // the runtime, once
		"ftrace: " + prog + " has no __mcount_loc call-site table",                 // ftrace record
	} {
		if n := strings.Count(r.Stderr, want); n != 1 || !strings.Contains(r.Stderr, "run recordmcount") {
			t.Errorf("stderr says %q %d times, want once with the fix:\n%s", want, n, r.Stderr)
		}
	}
	// Untraced, the runtime says nothing: the program's stderr is its own.
	if r := testenv.Exec(t, dir, prog); r.Stderr != "" {
		t.Errorf("untraced run wrote %q on stderr", r.Stderr)
	}
}
