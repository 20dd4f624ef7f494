package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// TestRealWorld builds Debian's zlib, lz4 and zstd the ftkit way (testdata/ftlink/ftkit-cc:
// gcc -pg -mfentry + recordmcount on every object, ftlink on every linked file), runs
// their own test suites on the ftlinked programs, then checks every linked file: ftlink
// --check is clean and the table is exactly the set of functions that start with
// ftlink's nop (objdump). zlib's programs also link ftkit's runtime, and its test program
// using libz.so is traced: the runtime patches the ftlinked library's sites. Skipped with
// -short.
func TestRealWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds and tests three Debian packages")
	}
	testenv.Need(t, "gcc", "make", "objdump", "readelf", "bash")
	env := []string{
		"FTKIT_RECORDMCOUNT=" + testenv.Tool(t, "recordmcount"),
		"FTKIT_FTLINK=" + ftlinkBin(t),
	}
	cc := "CC=" + srcDir("ftkit-cc")
	for _, pkg := range []struct {
		name  string
		steps [][]string // commands run in the source tree, in order
		files []string   // linked files to check afterwards
		min   int        // at least this many sites in all files together
		rt    bool       // link ftkit's runtime into the executables
		trace func(t *testing.T, dir string)
	}{
		{"zlib", [][]string{
			{"sh", "-c", "CC=" + srcDir("ftkit-cc") + " CFLAGS=-O2 ./configure"},
			{"make", "-j2"},
			{"make", "test"},
		}, []string{"example", "minigzip", "examplesh", "minigzipsh", "libz.so.1.2.13"}, 300, true, traceZlib},
		{"lz4", [][]string{
			{"make", "-j2", "-C", "lib", cc, "liblz4.a"},
			{"make", "-j2", "-C", "programs", cc, "lz4"},
			{"make", "-C", "tests", cc, "test-lz4-essentials"},
		}, []string{"programs/lz4", "tests/datagen"}, 200, false, nil},
		{"zstd", [][]string{
			{"make", "-j2", "-C", "tests", cc, "check"},
		}, []string{"programs/zstd", "tests/datagen"}, 1000, false, nil},
	} {
		t.Run(pkg.name, func(t *testing.T) {
			src := testenv.DebianSource(t, pkg.name)
			dir := t.TempDir()
			testenv.CopyTree(t, src, dir)
			log := filepath.Join(dir, "ftkit-cc.log")
			env := append(env, "FTKIT_CC_LOG="+log, "FTKIT_EXE_LIBS=")
			if pkg.rt {
				env[len(env)-1] += "-rdynamic -L" + runtimeLib(t) + " -lftrt -lpthread -ldl"
			}
			start := time.Now()
			for _, step := range pkg.steps {
				r := execEnv(t, dir, env, step...)
				if r.Code != 0 {
					t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(step, " "), r.Code, tail(r.Stdout, 3000), tail(r.Stderr, 3000))
				}
			}
			t.Logf("%s: built and tested in %v", pkg.name, time.Since(start).Round(time.Second))
			lb, _ := os.ReadFile(log)
			if !strings.Contains(string(lb), "ftlink ") {
				t.Fatalf("nothing was ftlinked:\n%s", lb)
			}
			total := 0
			for _, f := range pkg.files {
				p := filepath.Join(dir, f)
				r := testenv.Exec(t, dir, ftlinkBin(t), "--check", p)
				if r.Code != 0 || !strings.Contains(r.Stdout, "ok:") || !strings.Contains(r.Stdout, "(processed)") {
					t.Errorf("ftlink --check %s: exit %d\n%s%s", f, r.Code, r.Stdout, r.Stderr)
				}
				oracle := objdumpNopSites(t, p)
				checkLinked(t, p, oracle)
				total += len(oracle)
				t.Logf("%s: %d sites, all nop'ed", f, len(oracle))
			}
			if total < pkg.min {
				t.Errorf("only %d sites in %v, want at least %d", total, pkg.files, pkg.min)
			}
			if pkg.trace != nil {
				pkg.trace(t, dir)
			}
		})
	}
}

// traceZlib runs zlib's test program linked with libz.so (and ftkit's runtime) with the
// function tracer on the library's compression entry points.
func traceZlib(t *testing.T, dir string) {
	if !strings.Contains(testenv.Run(t, dir, "readelf", "-sW", "examplesh"), " ftrace_set_filter") {
		t.Fatal("examplesh is not linked with ftkit's runtime")
	}
	trace := filepath.Join(dir, "trace.dat")
	r := execEnv(t, dir, []string{"LD_LIBRARY_PATH=" + dir, "FTRACE_TRACER=function",
		"FTRACE_FILTER=deflate*,inflate*,compress*,uncompress*", "FTRACE_OUTPUT=" + trace},
		"./examplesh", filepath.Join(dir, "tmpfile"))
	if r.Code != 0 || strings.Contains(r.Stderr, "refused") {
		t.Fatalf("traced examplesh: exit %d\n%s%s", r.Code, r.Stdout, tail(r.Stderr, 3000))
	}
	rep := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "report", "--format", "json", trace)
	var rj struct {
		Functions []struct {
			Name  string
			Calls uint64
		}
	}
	if err := json.Unmarshal([]byte(rep), &rj); err != nil {
		t.Fatalf("ftrace report: %v\n%s", err, rep)
	}
	calls := map[string]uint64{}
	for _, f := range rj.Functions {
		calls[f.Name] = f.Calls
	}
	for _, fn := range []string{"deflate", "inflate", "compress", "uncompress", "deflateInit_", "inflateEnd"} {
		if calls[fn] == 0 {
			t.Errorf("%s not traced in libz.so (report: %v)", fn, calls)
		}
	}
	t.Logf("examplesh traced: %v", calls)
}

func execEnv(t *testing.T, dir string, env []string, args ...string) testenv.Result {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return testenv.Exec(t, dir, args[0], args[1:]...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
