package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		pass    bool
		compile bool
		exe     bool
		srcs    []string
		objs    []string
		out     string
	}{
		{[]string{"--version"}, true, false, true, nil, nil, "a.out"},
		{[]string{"-E", "a.c"}, true, false, true, []string{"a.c"}, nil, "a.out"},
		{[]string{"-S", "a.c", "-o", "-"}, true, false, true, []string{"a.c"}, nil, "-"},
		{[]string{"-MM", "a.c"}, true, false, true, []string{"a.c"}, nil, "a.out"},
		{[]string{"-O2", "-c", "a.c", "b.cc", "s.S"}, false, true, false, []string{"a.c", "b.cc", "s.S"}, []string{"a.o", "b.o", "s.o"}, "a.out"},
		{[]string{"-c", "-o", "x/y.o", "-MD", "-MF", "y.d", "src/y.c"}, false, true, false, []string{"src/y.c"}, []string{"x/y.o"}, "x/y.o"},
		{[]string{"-c", "-ox.o", "-x", "c", "-"}, false, true, false, []string{"-"}, []string{"x.o"}, "x.o"},
		{[]string{"a.o", "b.o", "-o", "prog", "-lm"}, false, false, true, nil, nil, "prog"},
		{[]string{"-shared", "-fPIC", "l.c", "-o", "libl.so"}, false, false, false, []string{"l.c"}, nil, "libl.so"},
		{[]string{"-r", "a.o", "-o", "all.o"}, false, false, false, nil, nil, "all.o"},
		{[]string{"-static", "a.o"}, false, false, false, nil, nil, "a.out"},
		{[]string{"-I", "inc.c", "-include", "x.h", "m.c"}, false, false, true, []string{"m.c"}, nil, "a.out"},
		{[]string{"-x", "c++", "t.h", "-x", "none", "u.c"}, false, false, true, []string{"t.h", "u.c"}, nil, "a.out"},
	}
	for _, tt := range tests {
		inv, err := parse(tt.args)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		var srcs []string
		for _, s := range inv.sources {
			srcs = append(srcs, s.path)
		}
		var objs []string
		if inv.compileOnly {
			objs = inv.objects(inv.sources)
		}
		if inv.passThrough() != tt.pass || inv.compileOnly != tt.compile || inv.executable() != tt.exe && !tt.compile ||
			!reflect.DeepEqual(srcs, tt.srcs) || !reflect.DeepEqual(objs, tt.objs) || inv.output() != tt.out {
			t.Errorf("%q: pass %v compile %v exe %v sources %q objects %q out %q", tt.args, inv.passThrough(), inv.compileOnly,
				inv.executable(), srcs, objs, inv.output())
		}
	}
	// languages: -x applies to what follows until -x none
	inv, _ := parse([]string{"-x", "c++", "t.h", "-x", "none", "u.c", "v.s", "w.C"})
	want := []lang{langCXX, langC, langAsm, langCXX}
	for i, s := range inv.sources {
		if s.lang != want[i] {
			t.Errorf("%s: lang %d, want %d", s.path, s.lang, want[i])
		}
	}
	if _, err := parse([]string{"-c", "-o", "x.o", "a.c", "b.c"}); err == nil {
		t.Errorf("-o with -c and two sources accepted")
	}
}

func TestResponseFiles(t *testing.T) {
	dir := t.TempDir()
	rsp := filepath.Join(dir, "args.rsp")
	os.WriteFile(rsp, []byte("-S 'my file.c' \"-DX=a b\" -o\tout.s\n@"+filepath.Join(dir, "more.rsp")), 0o644)
	os.WriteFile(filepath.Join(dir, "more.rsp"), []byte(`-DY=1 back\ slash.c`), 0o644)
	inv, err := parse([]string{"-O2", "@" + rsp, "@not-a-file"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-O2", "-S", "my file.c", "-DX=a b", "-o", "out.s", "-DY=1", "back slash.c", "@not-a-file"}
	if !reflect.DeepEqual(inv.args, want) {
		t.Errorf("expanded %q, want %q", inv.args, want)
	}
	os.WriteFile(rsp, []byte(`-c "open`), 0o644)
	if _, err := parse([]string{"@" + rsp}); err == nil || !strings.Contains(err.Error(), "unterminated") {
		t.Errorf("unterminated quote: %v", err)
	}
}

func TestCompileFlagsAndLinkWith(t *testing.T) {
	inv, _ := parse([]string{"-O2", "-I", "inc", "-x", "c", "a.src", "-x", "none", "b.o", "-o", "prog", "-lm", "-Wl,--as-needed", "-MD", "-MF", "p.d", "-L", "lib"})
	if got, want := inv.compileFlags(), []string{"-O2", "-I", "inc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("compile flags %q, want %q", got, want)
	}
	got := inv.linkWith(map[int]string{inv.sources[0].index: "/tmp/a.o"})
	want := []string{"-O2", "-I", "inc", "-x", "c", "-x", "none", "/tmp/a.o", "-x", "c", "-x", "none", "b.o", "-o", "prog", "-lm", "-Wl,--as-needed", "-MD", "-MF", "p.d", "-L", "lib"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("link args\n %q\nwant %q", got, want)
	}
}

// fakePrefix makes an install prefix whose tools and compiler only log their arguments
// (and create the files a compiler would), for checking what ftcc runs.
func fakePrefix(t *testing.T) (prefix, cc, log string) {
	prefix = t.TempDir()
	log = filepath.Join(prefix, "log")
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
	os.MkdirAll(filepath.Join(prefix, "lib"), 0o755)
	os.WriteFile(filepath.Join(prefix, "lib", "libftrt.a"), nil, 0o644)
	for _, tool := range []string{"recordmcount", "ftlink"} {
		os.WriteFile(filepath.Join(prefix, "bin", tool), []byte("#!/bin/sh\necho "+tool+" \"$@\" >> "+log+"\n"), 0o755)
	}
	cc = filepath.Join(prefix, "fakecc")
	os.WriteFile(cc, []byte(`#!/bin/sh
# what it builds for: asked by ftcc before it instruments (not logged)
if [ "$1" = -dumpmachine ]; then echo "${FAKECC_MACHINE:-x86_64-linux-gnu}"; exit 0; fi
echo cc "$@" >> `+log+`
if [ "$1" = --version ]; then if [ -n "$FAKECC_CLANG" ]; then echo "Debian clang version 14.0.6"; else echo "fakecc (GCC) 12.2.0"; fi; fi
out=
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
[ -n "$out" ] && [ "$out" != - ] && : > "$out"
exit 0
`), 0o755)
	t.Setenv("FTCC_PREFIX", prefix)
	return prefix, cc, log
}

// With the runtime's headers installed, instrumented sources find ftrace_trace.h
// (markers) after the program's own include directories.
func TestIncludeDir(t *testing.T) {
	prefix, cc, log := fakePrefix(t)
	t.Chdir(t.TempDir())
	inc := filepath.Join(prefix, "include")
	os.MkdirAll(inc, 0o755)
	os.WriteFile(filepath.Join(inc, "ftrace_trace.h"), nil, 0o644)
	if code := run([]string{cc, "-I", "mine", "-c", "a.c"}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "cc -I mine -c a.c -pg -mfentry -fno-ipa-ra -idirafter "+inc+"\n") {
		t.Errorf("log:\n%s", b)
	}
}

func TestCommands(t *testing.T) {
	prefix, cc, log := fakePrefix(t)
	dir := t.TempDir()
	t.Chdir(dir)
	lib := filepath.Join(prefix, "lib", "libftrt.a")
	tests := []struct {
		args []string
		env  string
		want []string // the log, with $LIB for the runtime
	}{
		{[]string{"--version"}, "", []string{"cc --version"}},
		{[]string{"-E", "a.c"}, "", []string{"cc -E a.c"}},
		{[]string{"-O2", "-c", "a.c", "-o", "a.o"}, "", []string{"cc --version", "cc -O2 -c a.c -o a.o -pg -mfentry -fno-ipa-ra", "recordmcount a.o"}},
		{[]string{"-c", "s.S", "-o", "s.o"}, "", []string{"cc -c s.S -o s.o"}},
		{[]string{"-c", "a.c", "b.c"}, "", []string{"cc --version", "cc -c a.c b.c -pg -mfentry -fno-ipa-ra", "recordmcount a.o", "recordmcount b.o"}},
		{[]string{"-c", "a.c", "gen.c"}, "gen*", []string{"cc -c a.c", "cc -c gen.c -pg -mfentry"}[:0]},
		{[]string{"a.o", "-o", "prog"}, "", []string{"cc a.o -o prog -x none -rdynamic -Wl,-u,__fentry__ $LIB -lpthread -ldl"}},
		{[]string{"-shared", "a.o", "-o", "libx.so"}, "", []string{"cc -shared a.o -o libx.so"}},
	}
	for _, tt := range tests {
		os.Remove(log)
		os.Setenv("FTCC_OFF", tt.env)
		var stderr bytes.Buffer
		if code := run(append([]string{cc}, tt.args...), nil, &bytes.Buffer{}, &stderr); code != 0 {
			t.Errorf("%q: exit %d: %s", tt.args, code, stderr.String())
			continue
		}
		b, _ := os.ReadFile(log)
		got := strings.Split(strings.TrimSpace(string(b)), "\n")
		if tt.env != "" {
			// --ftrace-off sources are compiled on their own, without the flags
			want := []string{"cc -c gen.c", "cc --version", "cc -c a.c -pg -mfentry -fno-ipa-ra", "recordmcount a.o"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q with FTCC_OFF=%s: ran %q, want %q", tt.args, tt.env, got, want)
			}
			continue
		}
		var want []string
		for _, w := range tt.want {
			want = append(want, strings.ReplaceAll(w, "$LIB", lib))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: ran\n %q\nwant %q", tt.args, got, want)
		}
	}
	os.Setenv("FTCC_OFF", "")
	// CC=ftcc: no compiler named, $FTCC_CC (else cc) compiles
	t.Setenv("FTCC_CC", cc)
	for _, args := range [][]string{{"-c", "a.c"}, {"a.c", "-c"}} {
		os.Remove(log)
		if code := run(args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
			t.Errorf("%q without a compiler: exit %d", args, code)
		}
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), "cc "+strings.Join(args, " ")+" -pg -mfentry -fno-ipa-ra\n") {
			t.Errorf("%q without a compiler: ran %q", args, b)
		}
	}
	os.Unsetenv("FTCC_CC")
	// clang has no -fno-ipa-ra (and needs none)
	os.Remove(log)
	t.Setenv("FAKECC_CLANG", "1")
	if code := run([]string{cc, "-c", "a.c"}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Errorf("clang: exit %d", code)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "cc -c a.c -pg -mfentry\n") {
		t.Errorf("clang: ran %q, want -pg -mfentry alone", b)
	}
	os.Unsetenv("FAKECC_CLANG")
	// --ftrace-callops and FTCC_CALLOPS=1: the area before each function; ftcc's options
	// before the compiler too (ftcc --ftrace-off=x g++ ... ran cc with g++ as an input)
	for _, c := range []struct {
		args []string
		env  string
	}{{[]string{cc, "--ftrace-callops", "-c", "a.c"}, ""}, {[]string{cc, "-c", "a.c"}, "1"},
		{[]string{"--ftrace-callops", "--ftrace-verbose", cc, "-c", "a.c"}, ""}} {
		os.Remove(log)
		t.Setenv("FTCC_CALLOPS", c.env)
		if code := run(c.args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
			t.Errorf("%q: exit %d", c.args, code)
		}
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), "cc -c a.c -pg -mfentry -fpatchable-function-entry=8,8 -falign-functions=16 -fno-ipa-ra\n") {
			t.Errorf("%q FTCC_CALLOPS=%s: ran %q", c.args, c.env, b)
		}
	}
	os.Unsetenv("FTCC_CALLOPS")
	// a compiler for aarch64 (a cross gcc, clang --target=…): the kernel's arm64 flags, its
	// own runtime under lib/<triple>/, never the host's
	t.Setenv("FAKECC_MACHINE", "aarch64-unknown-linux-gnu")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{cc, "-c", "a.c"}, "cc -c a.c -fpatchable-function-entry=2 -fno-ipa-ra\n"},
		{[]string{cc, "--ftrace-callops", "-c", "a.c"}, "cc -c a.c -fpatchable-function-entry=4,2 -falign-functions=8 -fno-ipa-ra\n"},
	} {
		os.Remove(log)
		if code := run(c.args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
			t.Errorf("%q: exit %d", c.args, code)
		}
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), c.want) {
			t.Errorf("aarch64 %q: ran %q, want %q", c.args, b, c.want)
		}
	}
	var xerr bytes.Buffer
	if code := run([]string{cc, "a.o", "-o", "p"}, nil, &bytes.Buffer{}, &xerr); code == 0 ||
		!strings.Contains(xerr.String(), "no ftkit runtime for aarch64-linux-gnu") ||
		!strings.Contains(xerr.String(), "make runtime-aarch64") {
		t.Errorf("aarch64 without its runtime: exit %d: %s", code, xerr.String())
	}
	if !testing.Short() {
		// the host's runtime (a real x86-64 archive) is refused by name
		if host, err := filepath.Glob(filepath.Join(testenv.BuildDir(), "lib", "libftrt.a")); err == nil && len(host) == 1 {
			b, _ := os.ReadFile(host[0])
			os.WriteFile(lib, b, 0o644)
			xerr.Reset()
			if code := run([]string{cc, "a.o", "-o", "p"}, nil, &bytes.Buffer{}, &xerr); code == 0 ||
				!strings.Contains(xerr.String(), lib+" (EM_X86_64) not for it") {
				t.Errorf("aarch64 with the host's runtime: exit %d: %s", code, xerr.String())
			}
		}
	}
	a64lib := filepath.Join(prefix, "lib", "aarch64-linux-gnu", "libftrt.a")
	os.MkdirAll(filepath.Dir(a64lib), 0o755)
	os.WriteFile(a64lib, arWithMachine(elf.EM_AARCH64), 0o644)
	os.Remove(log)
	if code := run([]string{cc, "a.o", "-o", "p"}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Errorf("aarch64 link: exit %d", code)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "-Wl,-u,__fentry__ "+a64lib+" -lpthread") {
		t.Errorf("aarch64 link: ran %q, want %s", b, a64lib)
	}
	os.Setenv("FAKECC_MACHINE", "")
	os.WriteFile(lib, nil, 0o644)
	// a missing runtime is named
	os.Remove(lib)
	var stderr bytes.Buffer
	if code := run([]string{cc, "a.o", "-o", "p"}, nil, &bytes.Buffer{}, &stderr); code == 0 || !strings.Contains(stderr.String(), "the ftkit runtime "+lib+" is missing") {
		t.Errorf("missing runtime: exit %d: %s", code, stderr.String())
	}
	// a failing step is named with its file
	os.WriteFile(filepath.Join(prefix, "bin", "recordmcount"), []byte("#!/bin/sh\necho 'bad object' >&2\nexit 1\n"), 0o755)
	stderr.Reset()
	if code := run([]string{cc, "-c", "a.c"}, nil, &bytes.Buffer{}, &stderr); code == 0 || !strings.Contains(stderr.String(), "ftcc: recordmcount a.o failed: bad object") {
		t.Errorf("failing step: exit %d: %q", code, stderr.String())
	}
}

// Real builds through make with CC/CXX set to ftcc: a C program of two files, a C++
// shared library it uses, depfiles; the program runs the same and its trace names the
// functions of both.
func TestMakeBuild(t *testing.T) {
	testenv.Need(t, "gcc", "g++", "make")
	build, ftcc := builtFtcc(t)
	dir := t.TempDir()
	files := map[string]string{
		"Makefile": `CFLAGS = -O2 -g -MMD
CXXFLAGS = -O2 -g -fPIC -MMD
all: prog
libshape.so: shape.o
	$(CXX) -shared -o $@ $^
prog: main.o util.o libshape.so
	$(CC) -o $@ main.o util.o -L. -lshape -Wl,-rpath,$(CURDIR)
-include *.d
`,
		"main.c": `#include <stdio.h>
int scale(int); double area(double);
int main(void) { printf("%d %.0f\n", scale(3), area(2)); return 0; }
`,
		"util.c":   "__attribute__((noinline)) int scale(int x) { return x * 7; }\n",
		"shape.cc": "namespace geo { template <class T> __attribute__((noinline)) T sq(T x) { return x * x; } }\nextern \"C\" double area(double r) { return 3 * geo::sq(r); }\n",
	}
	for n, s := range files {
		os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644)
	}
	testenv.Run(t, dir, "make", "CC="+ftcc+" gcc", "CXX="+ftcc+" g++")
	if _, err := os.Stat(filepath.Join(dir, "main.d")); err != nil {
		t.Errorf("depfile: %v", err)
	}
	if out := testenv.Run(t, dir, "./prog"); out != "21 12\n" {
		t.Fatalf("prog: %q", out)
	}
	ftrace := filepath.Join(build, "bin", "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-o", "t.dat", "--", "./prog")
	rep := testenv.Run(t, dir, ftrace, "report", "t.dat")
	for _, fn := range []string{"main", "scale", "area", "geo::sq<double>"} {
		if !strings.Contains(rep, fn) {
			t.Errorf("report lacks %s:\n%s", fn, rep)
		}
	}
	// ftlink ran on both
	out := testenv.Run(t, dir, filepath.Join(build, "bin", "ftlink"), "-v", "prog", "libshape.so")
	if strings.Count(out, "already processed") != 2 {
		t.Errorf("ftlink -v:\n%s", out)
	}
}

// -static-libstdc++: the runtime's interposed C++ exception entry points would collide with
// the static copies, so the program is linked without it, silently (a line on stderr made
// configure probes fail: libtool's "static flag -static works" answered no) unless asked
// (FTCC_VERBOSE=1); it runs as it would untraced (exceptions included), its sites nops,
// and ftrace record says why nothing was traced. A -static link is as silent.
func TestStaticLibstdcxx(t *testing.T) {
	testenv.Need(t, "g++")
	build, ftcc := builtFtcc(t)
	dir := t.TempDir()
	src := `#include <iostream>
#include <stdexcept>
__attribute__((noinline)) int twice(int x) { if (x < 0) throw std::runtime_error("negative"); return 2 * x; }
int main() {
	try { twice(-1); } catch (const std::exception &e) { std::cout << "caught " << e.what() << "\n"; }
	std::cout << twice(21) << "\n";
}
`
	os.WriteFile(filepath.Join(dir, "x.cc"), []byte(src), 0o644)
	r := testenv.Exec(t, dir, ftcc, "g++", "-O2", "-static-libstdc++", "x.cc", "-o", "x")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("ftcc -static-libstdc++: exit %d\n%s", r.Code, r.Stderr)
	}
	r = testenv.Exec(t, dir, ftcc, "--ftrace-verbose", "g++", "-O2", "-static-libstdc++", "x.cc", "-o", "x")
	if r.Code != 0 || !strings.Contains(r.Stderr, "ftcc: x: linked without the ftkit runtime (-static-libstdc++") {
		t.Fatalf("ftcc --ftrace-verbose -static-libstdc++: exit %d\n%s", r.Code, r.Stderr)
	}
	// libtool's probe of -static: a link whose stderr must stay empty
	os.WriteFile(filepath.Join(dir, "conftest.c"), []byte("int main(void) { return 0; }\n"), 0o644)
	if r := testenv.Exec(t, dir, ftcc, "gcc", "-static", "conftest.c", "-o", "conftest"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("ftcc gcc -static: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if out := testenv.Run(t, dir, "./x"); out != "caught negative\n42\n" {
		t.Errorf("program printed %q", out)
	}
	r = testenv.Exec(t, dir, filepath.Join(build, "bin", "ftrace"), "record", "-o", "x.dat", "--", "./x")
	if r.Stdout != "caught negative\n42\n" || !strings.Contains(r.Stderr, "has call sites but not the ftkit runtime") ||
		strings.Contains(r.Stderr, "linked with libftrt and built with ftlink") { // the hint does not fit here
		t.Errorf("ftrace record: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// the same program linked with libstdc++.so is traced
	r = testenv.Exec(t, dir, ftcc, "g++", "-O2", "x.cc", "-o", "y")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("ftcc: exit %d\n%s", r.Code, r.Stderr)
	}
	testenv.Run(t, dir, filepath.Join(build, "bin", "ftrace"), "record", "-q", "-o", "y.dat", "--", "./y")
	if rep := testenv.Run(t, dir, filepath.Join(build, "bin", "ftrace"), "report", "y.dat"); !strings.Contains(rep, "twice(int)") {
		t.Errorf("report of the dynamically linked build:\n%s", rep)
	}
}

// A relocatable link (-r: objects merged into one, as some builds do before the final link)
// passes through: the merged object keeps its call-site table for the program's ftlink,
// and the program it goes into is traced.
func TestRelocatableLink(t *testing.T) {
	testenv.Need(t, "gcc")
	build, ftcc := builtFtcc(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("__attribute__((noinline)) int twice(int x) { return 2 * x; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.c"), []byte("#include <stdio.h>\nint twice(int);\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n"), 0o644)
	testenv.Run(t, dir, ftcc, "gcc", "-O2", "-c", "a.c", "m.c")
	if r := testenv.Exec(t, dir, ftcc, "gcc", "-r", "a.o", "m.o", "-o", "merged.o"); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("ftcc gcc -r: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if !hasTable(filepath.Join(dir, "merged.o")) {
		t.Fatal("merged.o lost its __mcount_loc table")
	}
	testenv.Run(t, dir, ftcc, "gcc", "merged.o", "-o", "prog")
	testenv.Run(t, dir, filepath.Join(build, "bin", "ftrace"), "record", "-q", "-o", "p.dat", "--", "./prog")
	if rep := testenv.Run(t, dir, filepath.Join(build, "bin", "ftrace"), "report", "p.dat"); !strings.Contains(rep, "twice") {
		t.Errorf("report of the program linked from merged.o:\n%s", rep)
	}
}

// builtFtcc is the build directory and its ftcc (the test is skipped without them).
func builtFtcc(t *testing.T) (build, ftcc string) {
	t.Helper()
	build = testenv.BuildDir()
	if build == "" {
		t.Skip("FTKIT_BUILD not set (run through make test)")
	}
	ftcc = filepath.Join(build, "bin", "ftcc")
	if _, err := os.Stat(ftcc); err != nil {
		t.Skip("ftcc not built")
	}
	return build, ftcc
}

// A language still in force at the link (`-x c m.c`, `-x c -` from stdin: configure-style
// checks) must not make the runtime archive a C source: gcc compiled libftrt.a as C for
// minutes (the zstd trial).
func TestLanguageInForceAtLink(t *testing.T) {
	testenv.Need(t, "gcc")
	_, ftcc := builtFtcc(t)
	dir := t.TempDir()
	src := "int main(void) { return 0; }\n"
	os.WriteFile(filepath.Join(dir, "m.c"), []byte(src), 0o644)
	for _, args := range [][]string{{"-x", "c", "m.c", "-o", "m1"}, {"-x", "c", "-", "-o", "m2"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, ftcc, append([]string{"gcc"}, args...)...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(src)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("ftcc gcc %q: %v\n%.500s", args, err, out)
			continue
		}
		if out := testenv.Run(t, dir, filepath.Join(dir, args[len(args)-1])); out != "" {
			t.Errorf("%s: %q", args[len(args)-1], out)
		}
	}
}

// arWithMachine is an ar archive holding one ELF object header of machine m (what ftcc
// reads of a runtime archive).
func arWithMachine(m elf.Machine) []byte {
	obj := make([]byte, 64)
	copy(obj, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(obj[16:], uint16(elf.ET_REL))
	binary.LittleEndian.PutUint16(obj[18:], uint16(m))
	binary.LittleEndian.PutUint32(obj[20:], 1)
	binary.LittleEndian.PutUint16(obj[52:], 64)
	hdr := fmt.Sprintf("%-16s%-12s%-6s%-6s%-8s%-10d`\n", "libftrt.o/", "0", "0", "0", "644", len(obj))
	return append(append([]byte("!<arch>\n"), hdr...), obj...)
}
