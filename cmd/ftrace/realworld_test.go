package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// TestRealWorldTraced builds Debian's zlib, lz4 and zstd the ftkit way (gcc -pg -mfentry
// and recordmcount on every object, executables linked with libftrt.a, ftlink on every
// linked file), then runs each package's own test suite twice, with FTRACE_TRACER=function
// and with FTRACE_TRACER=function_graph on all functions, every process writing its own
// trace. The suites must pass unchanged, and `ftrace report --format json` on every trace
// must be consistent:
//   - every file finalised (no .part left), no return without its entry;
//   - every graph entry has its exit, except the frames that were on the stack when the
//     process called exit() (checked with `ftrace graph`: they close the thread's stream);
//   - the suites are deterministic, so both tracers see the same processes and, when
//     neither lost anything, the same calls of the same functions; lost events are
//     accounted for by the reports' lost counts.
//
// Skipped with -short. zstd runs the first half of its `make check` (see below).
func TestRealWorldTraced(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds and tests three Debian packages, traced")
	}
	testenv.Need(t, "gcc", "make", "bash", "readelf")
	lib, _ := testenv.Runtime(t)
	tools := t.TempDir()
	// The compiler ftkit-cc calls: executables get the runtime (libz.so stays without it:
	// its __fentry__ resolves to the executable's, exported with -rdynamic).
	realCC := filepath.Join(tools, "gcc-ftrt")
	script := "#!/bin/bash\nfor a in \"$@\"; do case \"$a\" in -c|-E|-S|-M|-MM|-shared) exec gcc \"$@\";; esac; done\n" +
		"exec gcc \"$@\" -L" + lib + " -lftrt -lpthread -ldl -rdynamic\n"
	if err := os.WriteFile(realCC, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ftkitCC := filepath.Join(testenv.Root(), "testdata", "ftlink", "ftkit-cc")
	cc := "CC=" + ftkitCC
	buildEnv := []string{
		"FTKIT_RECORDMCOUNT=" + testenv.Tool(t, "recordmcount"),
		"FTKIT_FTLINK=" + testenv.Tool(t, "ftlink"),
		"FTKIT_REAL_CC=" + realCC,
	}
	for _, pkg := range []struct {
		name  string
		build [][]string // run in the source tree, untraced
		test  []string   // the test suite, run once per tracer
		min   int        // at least this many traced processes
		want  []string   // functions the suite must call
		// bufKB: per-thread trace buffer (0: the default, 16 MiB). lz4's biggest
		// process makes 1.3M calls: 128 MiB keeps all of them, so that the tracers'
		// counts compare per function. zstd's suite makes 135M calls, most in a few big
		// compressions: small buffers keep it fast, the overflow is counted as lost.
		bufKB int
		// exact: the suite is deterministic (single-threaded): both tracers must see the
		// same calls. zstd compresses with worker threads (-T): how often its pool and
		// workers wait and poll depends on timing, so only the totals are compared,
		// within 1%.
		exact bool
	}{
		{"zlib", [][]string{
			{"sh", "-c", "CC=" + ftkitCC + " CFLAGS=-O2 ./configure"},
			{"make", "-j2"},
		}, []string{"make", "test"}, 6, []string{"deflate", "inflate", "crc32"}, 0, true},
		{"lz4", [][]string{
			{"make", "-j2", "-C", "lib", cc, "liblz4.a"},
			{"make", "-j2", "-C", "programs", cc, "lz4"},
			{"make", "-j2", "-C", "tests", cc, "datagen"},
		}, []string{"make", "-C", "tests", cc, "test-lz4-essentials"}, 100, []string{"LZ4F_compressUpdate", "LZ4F_decompress"}, 131072, true},
		// zstd: `make -C tests check` runs playTests.sh (1843 lines, 717 processes), which
		// takes ≈ 7 min here traced twice and reported (≈ 85 s untraced): too long for CI.
		// We run its first part, up to the dictionary tests (simple tests, file removal,
		// multiple files, permissions and timestamps, output directories, content size,
		// advanced parameters, pass-through, concatenation, symbolic links, sparse files,
		// stream-size and size-hint modes: 328 processes, ≈ 2 min with the build on this
		// loaded 2-vCPU machine), the way `check` runs the whole script.
		{"zstd", [][]string{
			{"make", "-j2", "-C", "tests", cc, "zstd", "datagen"},
			{"sh", "-c", `sed '/^println "\\n===>  dictionary tests "/,$d' tests/playTests.sh > tests/playTests-part.sh &&
				grep -q 'size-hint mode' tests/playTests-part.sh && ! grep -q 'dictionary tests' tests/playTests-part.sh &&
				chmod +x tests/playTests-part.sh`},
		}, []string{"sh", "-c", "cd tests && ZSTD_BIN=../programs/zstd DATAGEN_BIN=./datagen ./playTests-part.sh"},
			300, []string{"ZSTD_compressStream2", "ZSTD_decompressStream"}, 2048, false},
	} {
		t.Run(pkg.name, func(t *testing.T) {
			src := testenv.DebianSource(t, pkg.name)
			dir := t.TempDir()
			testenv.CopyTree(t, src, dir)
			start := time.Now()
			for _, step := range pkg.build {
				if r := rwRun(dir, buildEnv, step); r.err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(step, " "), r.err, tail(r.out, 3000))
				}
			}
			t.Logf("built in %v", time.Since(start).Round(time.Second))
			sums := map[string]*suiteSum{}
			for _, tracer := range []string{"function", "function_graph"} {
				out := filepath.Join(dir, "traces-"+tracer)
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				env := append(append([]string{}, buildEnv...), "FTRACE_TRACER="+tracer, "FTRACE_CONTROL=0",
					"FTRACE_OUTPUT="+filepath.Join(out, "%p.dat"))
				if pkg.bufKB > 0 {
					env = append(env, fmt.Sprintf("FTRACE_BUFFER_KB=%d", pkg.bufKB), "FTRACE_NO_LOSS=1")
				}
				if r := rwRun(dir, env, pkg.test); r.err != nil {
					t.Fatalf("%s: %s: %v\n%s", tracer, strings.Join(pkg.test, " "), r.err, tail(r.out, 3000))
				}
				suite := time.Since(start)
				start = time.Now()
				sums[tracer] = checkSuiteTraces(t, out, tracer)
				s := sums[tracer]
				t.Logf("%s: suite passed in %v; %d traces (%d with frames open at exit), %d calls of %d functions, lost %d+%d, over depth %d; reports in %v",
					tracer, suite.Round(time.Second), s.files, s.exitFiles, s.total(), len(s.calls), s.lost, s.nobuf, s.depth, time.Since(start).Round(time.Second))
				if s.files < pkg.min {
					t.Errorf("%s: %d traces, want at least %d", tracer, s.files, pkg.min)
				}
				for _, f := range pkg.want {
					if s.calls[f] == 0 {
						t.Errorf("%s: %s never traced", tracer, f)
					}
				}
			}
			fn, fg := sums["function"], sums["function_graph"]
			if fn.files != fg.files {
				t.Errorf("%d processes traced by function, %d by function_graph", fn.files, fg.files)
			}
			a, b := fn.total()+fn.lost+fn.nobuf, fg.total()+fg.lost+fg.nobuf+fg.depth
			switch {
			case !pkg.exact:
				if d := math.Abs(float64(a)-float64(b)) / float64(a); d > 0.01 {
					t.Errorf("calls recorded + lost: function %d, function_graph %d (%.2f%% apart)", a, b, 100*d)
				}
			case fn.lost+fn.nobuf == 0 && fg.lost+fg.nobuf+fg.depth == 0:
				diffs := 0
				for name, n := range fn.calls {
					if fg.calls[name] != n {
						if diffs++; diffs <= 10 {
							t.Errorf("%s: %d calls traced by function, %d by function_graph", name, n, fg.calls[name])
						}
					}
				}
				for name := range fg.calls {
					if _, ok := fn.calls[name]; !ok {
						t.Errorf("%s: only in the function_graph traces", name)
					}
				}
			case a != b:
				t.Errorf("calls recorded + lost: function %d, function_graph %d", a, b)
			}
		})
	}
}

type rwResult struct {
	out string
	err error
}

// rwRun runs args in dir with the environment (minus FTRACE_*) plus env.
// rwTimeout bounds one build or suite run: a hang fails the test with the processes it
// left (and is killed with its whole process group) instead of running into go test's limit.
var rwTimeout = 10 * time.Minute

func rwRun(dir string, env, args []string) rwResult {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FTRACE_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return rwResult{"", err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return rwResult{buf.String(), err}
	case <-time.After(rwTimeout):
		pgid := cmd.Process.Pid
		ps, _ := exec.Command("ps", "-eo", "pgid,pid,stat,wchan:24,etime,args").Output()
		var left []string
		for _, l := range strings.Split(string(ps), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.Itoa(pgid) {
				left = append(left, l)
			}
		}
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		return rwResult{buf.String(), fmt.Errorf("timed out after %v; processes left:\n%s", rwTimeout, strings.Join(left, "\n"))}
	}
}

// suiteSum adds up the reports of every trace of a suite run.
type suiteSum struct {
	mu                 sync.Mutex
	files, exitFiles   int
	calls              map[string]uint64
	lost, nobuf, depth uint64
}

func (s *suiteSum) total() uint64 {
	var n uint64
	for _, c := range s.calls {
		n += c
	}
	return n
}

// checkSuiteTraces checks every trace in dir with `ftrace report --format json` (and
// `ftrace graph` for the ones with calls that never returned) and adds them up.
func checkSuiteTraces(t *testing.T, dir, tracer string) *suiteSum {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := &suiteSum{calls: map[string]uint64{}}
	var files []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".part") {
			t.Errorf("%s: not finalised", e.Name())
			continue
		}
		files = append(files, filepath.Join(dir, e.Name()))
	}
	sort.Strings(files)
	ftrace := testenv.Tool(t, "ftrace")
	work := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if err := checkOneTrace(ftrace, f, tracer, sum); err != nil {
					t.Errorf("%s: %v", filepath.Base(f), err)
				}
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	return sum
}

func checkOneTrace(ftrace, file, tracer string, sum *suiteSum) error {
	out, err := exec.Command(ftrace, "report", "--format", "json", file).Output()
	if err != nil {
		return fmt.Errorf("ftrace report: %v", err)
	}
	var r testenv.Report
	if err := json.Unmarshal(out, &r); err != nil {
		return fmt.Errorf("report json: %v", err)
	}
	if r.Tracer != tracer || !r.Complete || r.Unmatched != 0 {
		return fmt.Errorf("tracer %s complete %v, %d returns without entry", r.Tracer, r.Complete, r.Unmatched)
	}
	var partial uint64
	for _, f := range r.Functions {
		partial += f.Partial
	}
	if partial != r.Unfinished {
		return fmt.Errorf("%d unfinished calls, functions say %d", r.Unfinished, partial)
	}
	if r.Unfinished > 0 {
		if err := checkOpenAtExit(ftrace, file); err != nil {
			return err
		}
	}
	sum.mu.Lock()
	defer sum.mu.Unlock()
	sum.files++
	if r.Unfinished > 0 {
		sum.exitFiles++
	}
	for _, f := range r.Functions {
		if f.Name != testenv.TraceFlush {
			sum.calls[f.Name] += f.Calls
		}
	}
	sum.lost += r.Lost
	sum.nobuf += r.LostNoBuf
	sum.depth += r.LostDepth
	return nil
}

// checkOpenAtExit: calls without a return are allowed only as the frames still on a
// thread's stack at the end (the process called exit() inside them): in each thread's
// `ftrace graph`, once a line is marked unfinished, every later line is too, and those
// after the first close a frame.
func checkOpenAtExit(ftrace, file string) error {
	out, err := exec.Command(ftrace, "graph", file).Output()
	if err != nil {
		return fmt.Errorf("ftrace graph: %v", err)
	}
	seen := false
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "# thread ") {
			seen = false
			continue
		}
		i := strings.Index(l, "|  ")
		if i < 0 || strings.HasPrefix(l, "#") {
			continue
		}
		fn := l[i+3:]
		open := strings.HasSuffix(fn, "/* unfinished */")
		switch {
		case open && seen && !strings.HasPrefix(strings.TrimSpace(fn), "}"):
			return fmt.Errorf("unfinished call after the thread's end: %q", l)
		case !open && seen:
			return fmt.Errorf("a call after an unfinished one: %q", l)
		}
		seen = seen || open
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestRwRunTimeout: a hung suite is killed with its children and reported with them.
func TestRwRunTimeout(t *testing.T) {
	old := rwTimeout
	rwTimeout = time.Second
	defer func() { rwTimeout = old }()
	start := time.Now()
	r := rwRun(t.TempDir(), nil, []string{"sh", "-c", "sleep 60 & sleep 61; echo never"})
	if r.err == nil || !strings.Contains(r.err.Error(), "timed out") || !strings.Contains(r.err.Error(), "sleep 61") {
		t.Fatalf("err = %v", r.err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v", d)
	}
	if strings.Contains(r.out, "never") {
		t.Errorf("output %q", r.out)
	}
}
