package main

import (
	"bytes"
	"os"
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

func TestSharedLibrary(t *testing.T) {
	testenv.Need(t, "gcc", "objdump", "readelf")
	ftlink := ftlinkBin(t)
	for _, c := range []struct {
		name, linker string
		local        bool
	}{{"bfd", "bfd", false}, {"bfd-local", "bfd", true}, {"gold", "gold", false}, {"lld-local", "lld", true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lib := filepath.Join(dir, "libftl.so")
			prog := filepath.Join(dir, "prog")
			ld := "-fuse-ld=" + c.linker
			libObjs := buildInstrumented(t, dir, "gcc", []string{srcDir("shlib", "lib.c")}, []string{"-fPIC"}, "ftkit")
			if c.local {
				fe := filepath.Join(dir, "fentry_local.o")
				testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "-o", fe, srcDir("fentry.c"))
				libObjs = append(libObjs, fe)
			}
			testenv.Run(t, dir, "gcc", append([]string{ld, "-shared", "-o", lib}, libObjs...)...)
			mainObjs := buildInstrumented(t, dir, "gcc", []string{srcDir("shlib", "main.c")}, []string{"-I" + srcDir("shlib")}, "ftkit")
			testenv.Run(t, dir, "gcc", append([]string{ld, "-o", prog, "-L" + dir, "-Wl,-rpath," + dir}, append(mainObjs, "-lftl")...)...)
			want := testenv.Run(t, dir, prog)
			libOracle, progOracle := objdumpSites(t, lib), objdumpSites(t, prog)
			testenv.Run(t, dir, ftlink, lib, prog)
			checkLinked(t, lib, libOracle)
			checkLinked(t, prog, progOracle)
			if got := testenv.Run(t, dir, prog); got != want {
				t.Errorf("after ftlink the program prints %q, want %q", got, want)
			}
			if r := testenv.Exec(t, dir, ftlink, "--check", lib, prog); r.Code != 0 {
				t.Errorf("ftlink --check: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
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
