package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ftlink": func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
	})
}

var (
	selfOnce sync.Once
	selfDir  string
)

// ftlinkBin is this package's ftlink: the test binary under the name "ftlink"
// (testscript.Main dispatches on the program name).
func ftlinkBin(t testing.TB) string {
	t.Helper()
	selfOnce.Do(func() {
		d, err := os.MkdirTemp("", "ftlink-self-")
		if err != nil {
			t.Fatal(err)
		}
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(exe, filepath.Join(d, "ftlink")); err != nil {
			t.Fatal(err)
		}
		selfDir = d
	})
	return filepath.Join(selfDir, "ftlink")
}

type e2eConfig struct {
	name        string
	src         string // directory under testdata/ftlink
	cflags      []string
	ldflags     []string
	linker      string // bfd, gold, lld
	localFentry bool   // link testdata/ftlink/fentry.c (67 e8 / local e8 sites)
	table       string // ftkit (recordmcount), gcc (-mrecord-mcount), mixed (first object gcc)
	wantDropped int    // entries ftlink must drop (the overridden weak hook in prog/)
	runtime     bool   // link ftkit's runtime (libftrt.a: defines __fentry__, reads the table at start-up)
}

func e2eConfigs() []e2eConfig {
	nopie := []string{"-fno-pie"}
	return []e2eConfig{
		{name: "bfd-pie", src: "prog", linker: "bfd", table: "ftkit", wantDropped: 1},
		{name: "bfd-pie-local", src: "prog", linker: "bfd", localFentry: true, table: "ftkit", wantDropped: 1},
		{name: "bfd-nopie", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "bfd", table: "ftkit", wantDropped: 1},
		{name: "bfd-nopie-local", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "bfd", localFentry: true, table: "ftkit", wantDropped: 1},
		{name: "bfd-relr", src: "prog", ldflags: []string{"-Wl,-z,pack-relative-relocs"}, linker: "bfd", table: "ftkit", wantDropped: 1},
		{name: "bfd-gc", src: "prog", cflags: []string{"-ffunction-sections"}, ldflags: []string{"-Wl,--gc-sections"}, linker: "bfd", table: "ftkit"},
		{name: "bfd-cet-local", src: "prog", cflags: []string{"-fcf-protection=full"}, linker: "bfd", localFentry: true, table: "ftkit", wantDropped: 1},
		{name: "gold-pie", src: "prog", linker: "gold", table: "ftkit", wantDropped: 1},
		{name: "gold-nopie-local", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "gold", localFentry: true, table: "ftkit", wantDropped: 1},
		{name: "gold-ffs", src: "prog", cflags: []string{"-ffunction-sections"}, linker: "gold", table: "ftkit", wantDropped: 1},
		{name: "lld-pie", src: "prog", linker: "lld", table: "ftkit", wantDropped: 1},
		{name: "lld-nopie-local", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "lld", localFentry: true, table: "ftkit", wantDropped: 1},
		{name: "lld-gc-cet", src: "prog", cflags: []string{"-ffunction-sections", "-fcf-protection=full"}, ldflags: []string{"-Wl,--gc-sections"}, linker: "lld", table: "ftkit"},
		{name: "cxx-bfd", src: "cxx", linker: "bfd", table: "ftkit"},
		{name: "cxx-bfd-local-gc", src: "cxx", cflags: []string{"-ffunction-sections"}, ldflags: []string{"-Wl,--gc-sections"}, linker: "bfd", localFentry: true, table: "ftkit"},
		{name: "cxx-gold", src: "cxx", linker: "gold", table: "ftkit"},
		{name: "cxx-lld-nopie", src: "cxx", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "lld", table: "ftkit"},
		{name: "gcc-bfd-pie", src: "prog", linker: "bfd", table: "gcc", wantDropped: 1},
		{name: "gcc-bfd-nopie", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "bfd", table: "gcc", wantDropped: 1},
		{name: "gcc-bfd-relr-local", src: "prog", ldflags: []string{"-Wl,-z,pack-relative-relocs"}, linker: "bfd", localFentry: true, table: "gcc", wantDropped: 1},
		{name: "gcc-gold-pie", src: "prog", linker: "gold", table: "gcc", wantDropped: 1},
		{name: "mixed-bfd-pie", src: "prog", linker: "bfd", table: "mixed", wantDropped: 1},
		{name: "runtime-bfd-pie", src: "prog", linker: "bfd", runtime: true, table: "ftkit", wantDropped: 1},
		{name: "runtime-lld-nopie", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "lld", runtime: true, table: "ftkit", wantDropped: 1},
		{name: "runtime-cxx-bfd", src: "cxx", linker: "bfd", runtime: true, table: "ftkit"},
		{name: "mixed-bfd-nopie-local", src: "prog", cflags: nopie, ldflags: []string{"-no-pie"}, linker: "bfd", localFentry: true, table: "mixed", wantDropped: 1},
	}
}

// buildInstrumented compiles srcs with -O2 -pg -mfentry, tables the objects as asked, and
// returns the object files.
func buildInstrumented(t *testing.T, dir, cc string, srcs, cflags []string, table string) []string {
	t.Helper()
	var objs, ftkitObjs []string
	for i, src := range srcs {
		obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+".o")
		args := append([]string{"-O2", "-g", "-pg", "-mfentry", "-c", "-o", obj, src}, cflags...)
		if table == "gcc" || (table == "mixed" && i == 0) {
			args = append(args, "-mrecord-mcount")
		} else {
			ftkitObjs = append(ftkitObjs, obj)
		}
		testenv.Run(t, dir, cc, args...)
		objs = append(objs, obj)
	}
	if len(ftkitObjs) > 0 {
		testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), ftkitObjs...)
	}
	return objs
}

func TestEndToEnd(t *testing.T) {
	testenv.Need(t, "gcc", "g++", "objdump", "readelf", "ld.gold", "ld.lld")
	ftlink := ftlinkBin(t)
	for _, c := range e2eConfigs() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cc := "gcc"
			srcs := sources(t, srcDir(c.src), ".c")
			if c.src == "cxx" {
				cc, srcs = "g++", sources(t, srcDir(c.src), ".cc")
			}
			ld := append([]string{"-fuse-ld=" + c.linker}, c.ldflags...)
			// Reference output: the same sources without instrumentation.
			plain := filepath.Join(dir, "plain")
			testenv.Run(t, dir, cc, append(append(append([]string{"-O2", "-o", plain}, c.cflags...), ld...), srcs...)...)
			want := testenv.Run(t, dir, plain)

			objs := buildInstrumented(t, dir, cc, srcs, c.cflags, c.table)
			if c.localFentry {
				fe := filepath.Join(dir, "fentry_local.o")
				testenv.Run(t, dir, "gcc", append([]string{"-O2", "-c", "-o", fe, srcDir("fentry.c")}, c.cflags...)...)
				objs = append(objs, fe)
			}
			if c.runtime {
				objs = append(objs, "-L"+runtimeLib(t), "-lftrt", "-lpthread", "-ldl")
			}
			prog := filepath.Join(dir, "prog")
			testenv.Run(t, dir, cc, append(append([]string{"-o", prog}, ld...), objs...)...)
			if got := testenv.Run(t, dir, prog); got != want {
				t.Fatalf("instrumented program prints %q, plain %q", got, want)
			}
			oracle := objdumpSites(t, prog)
			if len(oracle) == 0 {
				t.Fatal("objdump finds no instrumented function")
			}

			r := testenv.Exec(t, dir, ftlink, "-v", prog)
			if r.Code != 0 {
				t.Fatalf("ftlink: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stderr, "dropped entry"); n != c.wantDropped {
				t.Errorf("ftlink dropped %d entries, want %d:\n%s", n, c.wantDropped, r.Stderr)
			}
			if c.wantDropped > 0 && !strings.Contains(r.Stderr, "not inside any function") {
				t.Errorf("the overridden weak hook is not reported:\n%s", r.Stderr)
			}
			checkLinked(t, prog, oracle)
			if got := testenv.Run(t, dir, prog); got != want {
				t.Errorf("after ftlink the program prints %q, want %q", got, want)
			}
			if (c.localFentry || c.runtime) && c.table != "gcc" && !strings.Contains(strings.Join(c.cflags, " "), "-fno-pie") {
				requireKind(t, prog, mcountloc.KindCallAddr)
			}

			// --check passes, and a second run changes nothing.
			chk := testenv.Exec(t, dir, ftlink, "--check", prog)
			if chk.Code != 0 || !strings.Contains(chk.Stdout, ": ok:") {
				t.Errorf("ftlink --check: exit %d\n%s%s", chk.Code, chk.Stdout, chk.Stderr)
			}
			before, _ := os.ReadFile(prog)
			st1, _ := os.Stat(prog)
			testenv.Run(t, dir, ftlink, prog)
			after, _ := os.ReadFile(prog)
			st2, _ := os.Stat(prog)
			if !bytes.Equal(before, after) || !st1.ModTime().Equal(st2.ModTime()) {
				t.Errorf("second ftlink run changed the file")
			}
		})
	}
}

// runtimeLib is the directory holding ftkit's runtime library. Under `make test`
// (FTKIT_BUILD set) it must be there; otherwise the test is skipped when it was not built.
func runtimeLib(t *testing.T) string {
	t.Helper()
	if testenv.BuildDir() == "" {
		if _, err := os.Stat(filepath.Join(testenv.Root(), "build", "lib", "libftrt.a")); err != nil {
			t.Skip("runtime not built (make runtime)")
		}
	}
	lib, _ := testenv.Runtime(t)
	return lib
}

// requireKind checks that at least one entry has the given call form.
func requireKind(t *testing.T, file string, k mcountloc.Kind) {
	t.Helper()
	for _, e := range readProcessedTable(t, file) {
		if mcountloc.Kind(e.kind) == k {
			return
		}
	}
	t.Errorf("%s: no %v site", file, k)
}

// TestGCCOracle compares the functions ftlink keeps for a recordmcount build with those
// of a gcc -mrecord-mcount build of the same sources.
func TestGCCOracle(t *testing.T) {
	testenv.Need(t, "gcc")
	ftlink := ftlinkBin(t)
	names := map[string][]string{}
	for _, table := range []string{"ftkit", "gcc"} {
		dir := t.TempDir()
		objs := buildInstrumented(t, dir, "gcc", sources(t, srcDir("prog"), ".c"), nil, table)
		prog := filepath.Join(dir, "prog")
		testenv.Run(t, dir, "gcc", append([]string{"-o", prog}, objs...)...)
		testenv.Run(t, dir, ftlink, prog)
		data, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		l, err := mcountloc.OpenLinked(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Sites {
			if !s.Good() || !s.Nop {
				t.Errorf("%s build: site %#x (%s) not good after ftlink: %v", table, s.Addr, s.Func, s.Err)
			}
			names[table] = append(names[table], s.Func)
		}
		sort.Strings(names[table])
	}
	if strings.Join(names["ftkit"], " ") != strings.Join(names["gcc"], " ") {
		t.Errorf("functions differ:\nrecordmcount: %v\ngcc:          %v", names["ftkit"], names["gcc"])
	}
}

// TestSharedLibrary: a -shared library and a program using it, both instrumented and
// ftlinked, with every linker, RELR, gcc -mrecord-mcount tables and ftkit's runtime.
func TestSharedLibrary(t *testing.T) {
	testenv.Need(t, "gcc", "objdump", "readelf", "ld.gold", "ld.lld")
	ftlink := ftlinkBin(t)
	relr := []string{"-Wl,-z,pack-relative-relocs"}
	for _, c := range []struct {
		name, linker string
		local        bool     // a local __fentry__ in the library (67 e8 sites)
		table        string   // ftkit (recordmcount) or gcc (-mrecord-mcount) for the library
		ldflags      []string // for the library and the program
		wantRelr     bool     // the library has DT_RELR
		noRun        bool     // the loader refuses the library (lld 14 RELR, see docs/ftlink.md)
		runtime      bool     // the program links ftkit's runtime and traces the library
	}{
		{name: "bfd", linker: "bfd", table: "ftkit"},
		{name: "bfd-local", linker: "bfd", local: true, table: "ftkit"},
		{name: "gold", linker: "gold", table: "ftkit"},
		{name: "lld-local", linker: "lld", local: true, table: "ftkit"},
		{name: "bfd-relr", linker: "bfd", table: "ftkit", ldflags: relr, wantRelr: true},
		{name: "bfd-relr-local", linker: "bfd", local: true, table: "ftkit", ldflags: relr, wantRelr: true},
		// lld 14 writes RELR without the GLIBC_ABI_DT_RELR version glibc 2.36 requires:
		// ftlink handles the file, but it cannot be loaded.
		{name: "lld-relr", linker: "lld", table: "ftkit", ldflags: []string{"-Wl,--pack-dyn-relocs=relr"}, wantRelr: true, noRun: true},
		{name: "gcc-bfd", linker: "bfd", table: "gcc"},
		{name: "gcc-bfd-relr", linker: "bfd", table: "gcc", ldflags: relr, wantRelr: true},
		{name: "gcc-gold", linker: "gold", table: "gcc"},
		{name: "runtime-bfd", linker: "bfd", table: "ftkit", runtime: true},
		{name: "runtime-bfd-relr", linker: "bfd", table: "ftkit", ldflags: relr, wantRelr: true, runtime: true},
		{name: "runtime-gcc-bfd", linker: "bfd", table: "gcc", runtime: true},
		{name: "runtime-lld", linker: "lld", table: "ftkit", runtime: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lib := filepath.Join(dir, "libftl.so")
			prog := filepath.Join(dir, "prog")
			ld := append([]string{"-fuse-ld=" + c.linker}, c.ldflags...)
			libObjs := buildInstrumented(t, dir, "gcc", []string{srcDir("shlib", "lib.c")}, []string{"-fPIC"}, c.table)
			if c.local {
				fe := filepath.Join(dir, "fentry_local.o")
				testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "-o", fe, srcDir("fentry.c"))
				libObjs = append(libObjs, fe)
			}
			testenv.Run(t, dir, "gcc", append(append(ld, "-shared", "-o", lib), libObjs...)...)
			if got := strings.Contains(testenv.Run(t, dir, "readelf", "-dW", lib), "(RELR)"); got != c.wantRelr {
				t.Fatalf("library has DT_RELR: %v, want %v", got, c.wantRelr)
			}
			mainObjs := buildInstrumented(t, dir, "gcc", []string{srcDir("shlib", "main.c")}, []string{"-I" + srcDir("shlib")}, "ftkit")
			link := append(append(ld, "-o", prog, "-L"+dir, "-Wl,-rpath,"+dir), mainObjs...)
			link = append(link, "-lftl")
			if c.runtime {
				// -rdynamic: the library's __fentry__ binds to the runtime's.
				link = append(link, "-rdynamic", "-L"+runtimeLib(t), "-lftrt", "-lpthread", "-ldl")
			}
			testenv.Run(t, dir, "gcc", link...)
			var want string
			if !c.noRun {
				want = testenv.Run(t, dir, prog)
			}
			relocs := testenv.Run(t, dir, "readelf", "-rW", lib)
			libOracle, progOracle := objdumpSites(t, lib), objdumpSites(t, prog)
			r := testenv.Exec(t, dir, ftlink, lib, prog)
			if r.Code != 0 || r.Stderr != "" {
				t.Fatalf("ftlink: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			checkLinked(t, lib, libOracle)
			checkLinked(t, prog, progOracle)
			if c.table == "ftkit" {
				// ftkit tables need no dynamic relocation: ftlink leaves the others alone.
				if got := testenv.Run(t, dir, "readelf", "-rW", lib); got != relocs {
					t.Errorf("ftlink changed the library's dynamic relocations:\n%s\nnow:\n%s", relocs, got)
				}
			}
			if r := testenv.Exec(t, dir, ftlink, "--check", lib, prog); r.Code != 0 {
				t.Errorf("ftlink --check: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if c.noRun {
				if r := testenv.Exec(t, dir, prog); r.Code == 0 || !strings.Contains(r.Stderr, "GLIBC_ABI_DT_RELR") {
					t.Errorf("the lld RELR library loads now (exit %d, %q): run it and update docs/ftlink.md", r.Code, r.Stderr)
				}
				return
			}
			if got := testenv.Run(t, dir, prog); got != want {
				t.Errorf("after ftlink the program prints %q, want %q", got, want)
			}
			if c.runtime {
				traceLibrary(t, dir, prog, want)
			}
		})
	}
}

// traceLibrary runs prog (linked with ftkit's runtime, using libftl.so) with the function
// tracer on the library's functions, and checks the trace counts every call: the runtime
// found the library's ftlinked table and patched its sites.
func traceLibrary(t *testing.T, dir, prog, want string) {
	t.Helper()
	trace := filepath.Join(dir, "trace.dat")
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_FILTER=lib_*,scale*", "FTRACE_OUTPUT="+trace)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("traced run: %v\n%s", err, out)
	}
	if string(out) != want {
		t.Errorf("traced run prints %q, want %q", out, want)
	}
	rep := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "report", "--format", "json", trace)
	var r struct {
		Functions []struct {
			Name  string
			Calls uint64
		}
	}
	if err := json.Unmarshal([]byte(rep), &r); err != nil {
		t.Fatalf("ftrace report: %v\n%s", err, rep)
	}
	calls := map[string]uint64{}
	for _, f := range r.Functions {
		calls[strings.SplitN(f.Name, ".", 2)[0]] += f.Calls // gcc clones: scale.constprop.0
	}
	// main.c calls lib_calc 100 times; lib_calc calls scale and lib_helper once each.
	for _, fn := range []string{"lib_calc", "lib_helper", "scale"} {
		if calls[fn] != 100 {
			t.Errorf("%s traced %d times, want 100 (report: %v)", fn, calls[fn], calls)
		}
	}
	if n := len(calls); n != 3 {
		t.Errorf("traced functions %v, want only the library's three", calls)
	}
}

// TestSharedGCCTableLLD pins down the note in docs/ftlink.md: lld cannot link a -shared
// library from gcc -mrecord-mcount objects (the read-only absolute table would need text
// relocations).
func TestSharedGCCTableLLD(t *testing.T) {
	testenv.Need(t, "gcc", "ld.lld")
	dir := t.TempDir()
	objs := buildInstrumented(t, dir, "gcc", []string{srcDir("shlib", "lib.c")}, []string{"-fPIC"}, "gcc")
	r := testenv.Exec(t, dir, "gcc", append([]string{"-fuse-ld=lld", "-shared", "-o", filepath.Join(dir, "libftl.so")}, objs...)...)
	if r.Code == 0 {
		t.Errorf("lld linked a -shared library with gcc -mrecord-mcount tables: update docs/ftlink.md")
	} else if !strings.Contains(r.Stderr, "R_X86_64_64") {
		t.Errorf("lld failed for another reason than the table's relocations: %s", r.Stderr)
	}
}

// TestGoldGCSections pins down the linker note in docs/ftlink.md: gold with --gc-sections
// drops every __mcount_loc part, even when __start___mcount_loc is referenced, so ftlink
// finds no table and says how tables are made.
func TestGoldGCSections(t *testing.T) {
	testenv.Need(t, "gcc", "ld.gold")
	dir := t.TempDir()
	objs := buildInstrumented(t, dir, "gcc", sources(t, srcDir("prog"), ".c"), []string{"-ffunction-sections"}, "ftkit")
	keep := filepath.Join(dir, "keep.c")
	writeFile(t, keep, "extern const char __start___mcount_loc[];\nconst void *keep_table = __start___mcount_loc;\n")
	prog := filepath.Join(dir, "prog")
	testenv.Run(t, dir, "gcc", append([]string{"-fuse-ld=gold", "-Wl,--gc-sections", "-Wl,--undefined=__start___mcount_loc", "-o", prog, keep}, objs...)...)
	r := testenv.Exec(t, dir, ftlinkBin(t), prog)
	if r.Code != 1 || !strings.Contains(r.Stderr, "no __mcount_loc section") || !strings.Contains(r.Stderr, "recordmcount") {
		t.Errorf("gold --gc-sections: ftlink exit %d, stderr %q; want exit 1 and the no-table advice (did gold start keeping the table? update docs/ftlink.md)", r.Code, r.Stderr)
	}
}
