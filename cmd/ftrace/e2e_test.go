package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/chrome"
	"github.com/ftkit/ftkit/internal/testenv"
)

// End-to-end tests: C programs built through the real flow (gcc -pg -mfentry →
// recordmcount → link with libftrt.a → ftlink), recorded with `ftrace record` and read
// back with the other commands.

// buildTraced compiles src (a C file's text) into dir/name through the ftkit flow.
func buildTraced(t *testing.T, dir, name, src string) string {
	t.Helper()
	return buildTracedWith(t, "gcc", ".c", dir, name, src)
}

// buildTracedWith compiles src with compiler (gcc or g++) through the ftkit flow.
func buildTracedWith(t *testing.T, compiler, ext, dir, name, src string) string {
	t.Helper()
	testenv.Need(t, compiler)
	lib, inc := testenv.Runtime(t)
	c := filepath.Join(dir, name+ext)
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, name+".o")
	prog := filepath.Join(dir, name)
	// -fno-optimize-sibling-calls: gcc -O2 otherwise turns fib's second recursive call
	// into a loop, and there are fewer calls to count.
	testenv.Run(t, dir, compiler, "-O2", "-g", "-pthread", "-pg", "-mfentry", "-fno-optimize-sibling-calls", "-I"+inc, "-c", c, "-o", obj)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	testenv.Run(t, dir, compiler, "-pthread", "-o", prog, obj, "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	return prog
}

type reportJSON struct {
	Tracer    string
	Functions []struct {
		Name    string
		Calls   uint64
		TotalNS uint64 `json:"total_ns"`
		Partial uint64
	}
}

func reportCalls(t *testing.T, dir string, args ...string) (reportJSON, map[string]uint64) {
	t.Helper()
	r, calls := reportAll(t, dir, args...)
	for _, f := range r.Functions {
		if f.Partial != 0 {
			t.Errorf("%s: %d unfinished calls", f.Name, f.Partial)
		}
	}
	return r, calls
}

// snapshotCalls is reportCalls of a snapshot of a running program, in which a call may
// be under way (unfinished) when it is taken.
func snapshotCalls(t *testing.T, dir, path string) map[string]uint64 {
	t.Helper()
	_, calls := reportAll(t, dir, path)
	return calls
}

// reportAll is `ftrace report --format json ARGS` and its calls by function name.
func reportAll(t *testing.T, dir string, args ...string) (reportJSON, map[string]uint64) {
	t.Helper()
	out := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), append([]string{"report", "--format", "json"}, args...)...)
	var r reportJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report json: %v\n%s", err, out)
	}
	calls := map[string]uint64{}
	for _, f := range r.Functions {
		calls[f.Name] += f.Calls
	}
	return r, calls
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

const fibSrc = `#include <stdio.h>
__attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { printf("fib(20) = %d\n", fib(20)); return 0; }
`

func TestE2EFib(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "fib", fibSrc)
	ftrace := testenv.Tool(t, "ftrace")
	plain := testenv.Run(t, dir, prog)
	for _, tracer := range []string{"function_graph", "function"} {
		t.Run(tracer, func(t *testing.T) {
			out := testenv.Run(t, dir, ftrace, "record", "-t", tracer, "-o", tracer+".dat", "--", prog)
			if out != plain || out != "fib(20) = 6765\n" {
				t.Errorf("traced output %q, plain %q", out, plain)
			}
			r, calls := reportCalls(t, dir, tracer+".dat")
			if r.Tracer != tracer {
				t.Errorf("tracer %q", r.Tracer)
			}
			// the runtime's writer thread writes the file: no write on the traced thread
			// is recorded (format 1 showed them as calls of ftkit_trace_flush)
			if n := calls[testenv.TraceFlush]; n != 0 {
				t.Errorf("%d buffer flushes recorded, want 0", n)
			}
			delete(calls, testenv.TraceFlush)
			if calls["fib"] != 21891 || calls["main"] != 1 || len(calls) != 2 {
				t.Errorf("calls %v, want fib 21891, main 1", calls)
			}
			info := testenv.Run(t, dir, ftrace, "info", tracer+".dat")
			for _, want := range []string{"tracer:             " + tracer, "flags:              complete", "lost events:        0", prog + " (main)"} {
				if !strings.Contains(info, want) {
					t.Errorf("info lacks %q:\n%s", want, info)
				}
			}
		})
	}
	// The graph: main → fib(20) → fib(19) → ... nests 20 deep (fib(1) at depth 20).
	graph := testenv.Run(t, dir, ftrace, "graph", "function_graph.dat")
	if !regexp.MustCompile(`(?m)^ +\d+\) +\|  main\(\) \{$`).MatchString(graph) ||
		!regexp.MustCompile(`(?m)^ +\d+\) .* us \|  `+strings.Repeat("  ", 20)+`fib\(\);$`).MatchString(graph) ||
		regexp.MustCompile(`(?m)^ +\d+\) .* \|  `+strings.Repeat("  ", 21)+`fib`).MatchString(graph) {
		t.Errorf("graph does not nest fib 20 deep under main:\n%.2000s", graph)
	}
	if n := strings.Count(graph, "fib() {") + strings.Count(graph, "fib();"); n != 21891 {
		t.Errorf("graph shows %d fib calls, want 21891", n)
	}
	// Filters: only fib recorded.
	testenv.Run(t, dir, ftrace, "record", "-F", "fib", "-o", "filtered.dat", "--", prog)
	if _, calls := reportCalls(t, dir, "filtered.dat"); calls["fib"] != 21891 || len(calls)-btoi(calls[testenv.TraceFlush] > 0) != 1 {
		t.Errorf("filtered calls %v", calls)
	}
	// notrace fib: only main.
	testenv.Run(t, dir, ftrace, "record", "-N", "fib", "-o", "notrace.dat", "--", prog)
	if _, calls := reportCalls(t, dir, "notrace.dat"); calls["main"] != 1 || len(calls) != 1 {
		t.Errorf("notrace calls %v", calls)
	}
	// graph_function fib: fib's subtrees only, the outermost at depth 0; graph_notrace fib:
	// main alone.
	testenv.Run(t, dir, ftrace, "record", "-G", "fib", "-o", "gf.dat", "--", prog)
	if _, calls := reportCalls(t, dir, "gf.dat"); calls["fib"] != 21891 || len(calls)-btoi(calls[testenv.TraceFlush] > 0) != 1 {
		t.Errorf("graph-function calls %v", calls)
	}
	if g := testenv.Run(t, dir, ftrace, "graph", "gf.dat"); !regexp.MustCompile(`(?m)^ +\d+\) +\|  fib\(\) \{$`).MatchString(g) {
		t.Errorf("graph-function graph does not start at fib:\n%.600s", g)
	}
	testenv.Run(t, dir, ftrace, "record", "--graph-notrace", "fib", "-o", "gn.dat", "--", prog)
	if _, calls := reportCalls(t, dir, "gn.dat"); calls["main"] != 1 || len(calls) != 1 {
		t.Errorf("graph-notrace calls %v", calls)
	}
	// Every output format reads the real trace.
	testenv.Run(t, dir, ftrace, "dump", "--chrome", "-o", "t.json", "function_graph.dat")
	data, err := os.ReadFile(filepath.Join(dir, "t.json"))
	if err != nil {
		t.Fatal(err)
	}
	counts, err := chrome.Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	_, graphCalls := reportCalls(t, dir, "function_graph.dat")
	if want := 21892 + int(graphCalls[testenv.TraceFlush]); counts["B"] != want || counts["E"] != want {
		t.Errorf("chrome: %d B and %d E events, want %d each", counts["B"], counts["E"], want)
	}
	testenv.Run(t, dir, ftrace, "pprof", "-o", "p.pb.gz", "function_graph.dat")
	top := testenv.Run(t, dir, "go", "tool", "pprof", "-top", filepath.Join(dir, "p.pb.gz"))
	if !regexp.MustCompile(`(?m)^ .*%.*\bfib$`).MatchString(top) || !strings.Contains(top, "Type: time") {
		t.Errorf("pprof -top:\n%s", top)
	}
	folded := testenv.Run(t, dir, ftrace, "flame", "--folded", "function_graph.dat")
	if !strings.Contains(folded, "main;fib;fib;fib ") {
		t.Errorf("folded:\n%.500s", folded)
	}
}

// TestRecordWrapperKeepsEveryTrace: a wrapper that is not traced (a shell) running the
// traced program three times under ftrace record keeps three traces (before, each replaced
// the last at the output name, and record credited the last as the program's own); run
// outside record with no FTRACE_SESSION, the output name keeps the last only, as before.
func TestRecordWrapperKeepsEveryTrace(t *testing.T) {
	testenv.Need(t, "sh")
	dir := t.TempDir()
	prog := buildTraced(t, dir, "fib", fibSrc)
	ftrace := testenv.Tool(t, "ftrace")
	script := prog + "; " + prog + "; " + prog
	r := testenv.Exec(t, dir, ftrace, "record", "-o", "w.dat", "--", "sh", "-c", script)
	if r.Code != 0 || r.Stdout != strings.Repeat("fib(20) = 6765\n", 3) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "w.dat*"))
	if len(names) != 3 {
		t.Fatalf("traces %v, want w.dat and two w.dat.<pid>", names)
	}
	pids := map[string]bool{}
	for _, n := range names {
		_, calls := reportCalls(t, dir, n)
		if calls["fib"] != 21891 || calls["main"] != 1 {
			t.Errorf("%s: calls %v", n, calls)
		}
		info := testenv.Run(t, dir, ftrace, "info", n)
		m := regexp.MustCompile(`(?m)^pid: +([0-9]+)`).FindStringSubmatch(info)
		if m == nil {
			t.Fatalf("info %s names no pid:\n%s", n, info)
		}
		if pids[m[1]] || (n != filepath.Join(dir, "w.dat") && !strings.HasSuffix(n, ".dat."+m[1])) {
			t.Errorf("%s: the trace of pid %s", n, m[1])
		}
		pids[m[1]] = true
	}
	for _, want := range []string{
		`(?m)^ftrace: w\.dat is the trace of pid [0-9]+ \(fib\), which the program \(pid [0-9]+\) ran; the program wrote none itself$`,
		`(?m)^ftrace: traces of the run's other processes: w\.dat\.[0-9]+ w\.dat\.[0-9]+$`,
		`(?m)^ftrace: \(report, graph, dump --chrome, pprof and flame read several traces as one: ftrace report w\.dat w\.dat\.\*\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.Stderr) {
			t.Errorf("stderr lacks %s:\n%s", want, r.Stderr)
		}
	}
	// the others summed up: fib's 21,892 graph calls in each, two events a call
	if m := regexp.MustCompile(`(?m)^ftrace: the other 2 traces: 2 threads, ([0-9]+) events$`).FindStringSubmatch(r.Stderr); m == nil {
		t.Errorf("stderr sums up no other traces:\n%s", r.Stderr)
	} else if n, _ := strconv.Atoi(m[1]); n < 2*2*21892 {
		t.Errorf("the other traces: %d events, want %d at least", n, 2*2*21892)
	}
	// the program traced itself: no word of a wrapper
	r = testenv.Exec(t, dir, ftrace, "record", "-o", "self.dat", "--", prog)
	if r.Code != 0 || strings.Contains(r.Stderr, "wrote none itself") || strings.Contains(r.Stderr, "other traced") {
		t.Errorf("exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
	// outside ftrace record, no session: each run replaces the last's trace
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_OUTPUT=e.dat")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "e.dat*")); len(names) != 1 {
		t.Errorf("without a session: traces %v, want e.dat alone", names)
	}
}

const treeSrc = `#include <pthread.h>
#include <stdio.h>
static volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void a(void) { leaf(); leaf(); }
__attribute__((noinline)) void b(void) { a(); }
__attribute__((noinline)) void *thread_main(void *p) { b(); leaf(); return p; }
int main(void)
{
	pthread_t t;
	b();
	a();
	if (pthread_create(&t, NULL, thread_main, NULL) || pthread_join(t, NULL))
		return 1;
	printf("sink %d\n", sink);
	return 0;
}
`

// TestE2ECallTree checks the exact call tree of each thread in `ftrace graph`.
func TestE2ECallTree(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "tree", treeSrc)
	ftrace := testenv.Tool(t, "ftrace")
	out := testenv.Run(t, dir, ftrace, "record", "--", prog)
	if out != "sink 7\n" {
		t.Errorf("output %q", out)
	}
	graph := testenv.Run(t, dir, ftrace, "graph")
	// Keep the FUNCTION column of each thread.
	var threads []string
	var cur []string
	for _, l := range strings.Split(graph, "\n") {
		if strings.HasPrefix(l, "# thread") && len(cur) > 0 {
			threads = append(threads, strings.Join(cur, "\n"))
			cur = nil
		}
		if i := strings.Index(l, "|  "); i >= 0 && !strings.HasPrefix(l, "#") {
			cur = append(cur, l[i+3:])
		}
	}
	threads = append(threads, strings.Join(cur, "\n"))
	want := []string{
		`main() {
  b() {
    a() {
      leaf();
      leaf();
    } /* a */
  } /* b */
  a() {
    leaf();
    leaf();
  } /* a */
} /* main */`,
		`thread_main() {
  b() {
    a() {
      leaf();
      leaf();
    } /* a */
  } /* b */
  leaf();
} /* thread_main */`,
	}
	if len(threads) != 2 || threads[0] != want[0] || threads[1] != want[1] {
		t.Errorf("graph:\n%s\nwant threads:\n%s\n\n%s", graph, want[0], want[1])
	}
	_, calls := reportCalls(t, dir)
	wantCalls := map[string]uint64{"main": 1, "b": 2, "a": 3, "leaf": 7, "thread_main": 1}
	for k, v := range wantCalls {
		if calls[k] != v {
			t.Errorf("%s: %d calls, want %d (all: %v)", k, calls[k], v, calls)
		}
	}
	// Per thread: each thread has 1 call of b, and 4 and 3 of leaf.
	out = testenv.Run(t, dir, ftrace, "report", "--per-thread", "--sort", "name")
	if len(regexp.MustCompile(`(?m)^ +\d+ +1 .*  b \[tree\.c:6\]$`).FindAllString(out, -1)) != 2 ||
		!regexp.MustCompile(`(?m)^ +\d+ +4 .*  leaf \[tree\.c:4\]$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^ +\d+ +3 .*  leaf \[tree\.c:4\]$`).MatchString(out) {
		t.Errorf("per-thread report:\n%s", out)
	}
}

const liveSrc = `#include <stdio.h>
#include <unistd.h>
static volatile int sink;
__attribute__((noinline)) void tick(void) { sink++; }
__attribute__((noinline)) void other(void) { sink--; }
int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 3)
		return 2;
	f = fopen(argv[1], "w");
	fprintf(f, "%d\n", getpid());
	fclose(f);
	for (int i = 0; i < 20000 && access(argv[2], F_OK) != 0; i++) {
		tick();
		other();
		usleep(500);
	}
	return 0;
}
`

// TestE2ELive drives a running program through `ftrace live`: it starts with tracing
// off, gets enabled with a filter, and a snapshot shows what it recorded.
func TestE2ELive(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700) // the runtime and ftrace live use only a private XDG_RUNTIME_DIR
	t.Setenv("XDG_RUNTIME_DIR", dir)
	prog := buildTraced(t, dir, "live", liveSrc)
	ftrace := testenv.Tool(t, "ftrace")
	pidFile, stopFile := filepath.Join(dir, "pid"), filepath.Join(dir, "stop")
	cmd := exec.Command(ftrace, "record", "-q", "--control", "-t", "nop", "-o", "live.dat", "--", prog, pidFile, stopFile)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(stopFile, nil, 0o644)
		if err := cmd.Wait(); err != nil {
			t.Errorf("record: %v\n%s", err, out.String())
		}
	}()
	var pid string
	for i := 0; i < 500 && pid == ""; i++ {
		b, _ := os.ReadFile(pidFile)
		if strings.HasSuffix(string(b), "\n") {
			pid = strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == "" {
		t.Fatalf("program did not start\n%s", out.String())
	}
	live := func(args ...string) string {
		t.Helper()
		var r testenv.Result
		for i := 0; i < 200; i++ { // the control thread may not be listening yet
			r = testenv.Exec(t, dir, ftrace, append([]string{"live", pid}, args...)...)
			if r.Code == 0 || !strings.Contains(r.Stderr, "no control socket") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r.Code != 0 {
			t.Fatalf("ftrace live %s: exit %d\n%s", strings.Join(args, " "), r.Code, r.Stderr)
		}
		return r.Stdout
	}
	if st := live("status"); !strings.Contains(st, "pid="+pid) {
		t.Errorf("status %q", st)
	}
	live("filter", "tick")
	live("tracer", "function")
	live("enable")
	time.Sleep(200 * time.Millisecond)
	snap := filepath.Join(dir, "snap.dat")
	if got := strings.TrimSpace(live("snapshot", snap)); got != snap {
		t.Errorf("snapshot reply %q, want %q", got, snap)
	}
	calls := snapshotCalls(t, dir, snap)
	if calls["tick"] == 0 || len(calls) != 1 {
		t.Errorf("snapshot calls %v, want tick only", calls)
	}
	// then the graph tracer, graphing other()'s calls only: tick's count stays as it was
	live("disable")
	snap2 := filepath.Join(dir, "snap2.dat")
	live("snapshot", snap2)
	before := snapshotCalls(t, dir, snap2)
	live("filter", "")
	live("graph_function", "other")
	live("tracer", "function_graph")
	live("enable")
	time.Sleep(200 * time.Millisecond)
	live("snapshot", snap2)
	if after := snapshotCalls(t, dir, snap2); after["other"] == 0 || after["tick"] != before["tick"] {
		t.Errorf("graph_function other: snapshot calls %v after %v, want more of other and no more tick", after, before)
	}
	// the header names every tracer that ran, not the last one (a trial's lighttpd trace,
	// switched from function_graph to nop, said "function")
	for f, want := range map[string]string{snap: "function", snap2: "function+function_graph"} {
		if info := testenv.Run(t, dir, ftrace, "info", f); !regexp.MustCompile(`(?m)^tracer: +` + regexp.QuoteMeta(want) + `$`).MatchString(info) {
			t.Errorf("info %s: want tracer %s:\n%s", filepath.Base(f), want, info)
		}
	}
	if r := testenv.Exec(t, dir, ftrace, "live", pid, "graph_function", "nosuch"); r.Code == 0 || !strings.Contains(r.Stderr, "graph_function 'nosuch': matches no function") {
		t.Errorf("graph_function nosuch: %+v", r)
	}
	// a snapshot that cannot be written names where it was tried (the nginx trial:
	// "Permission denied" alone, from a worker that dropped root)
	nodir := filepath.Join(dir, "nodir", "s.dat")
	if r := testenv.Exec(t, dir, ftrace, "live", pid, "snapshot", nodir); r.Code == 0 || !strings.Contains(r.Stderr, nodir+": No such file or directory (name another: snapshot PATH)") {
		t.Errorf("snapshot into no directory: %+v", r)
	}
	if r := testenv.Exec(t, dir, ftrace, "live", pid, "tracer", "bogus"); r.Code == 0 || !strings.Contains(r.Stderr, "refused") {
		t.Errorf("bogus tracer accepted: %+v", r)
	}
	// finish: the trace is complete while the program runs on, and says why
	live("finish")
	info := testenv.Run(t, dir, ftrace, "info", "live.dat")
	if !strings.Contains(info, "flags:              complete") || !strings.Contains(info, "written because:    finish (ftrace live finish") {
		t.Errorf("after live finish:\n%s", info)
	}
}

// TestE2ELiveStaleSocket: a program killed with SIGKILL leaves its control socket behind;
// `ftrace live` on its pid then says the process is gone and removes the socket, instead
// of "connection refused".
func TestE2ELiveStaleSocket(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", dir)
	prog := buildTraced(t, dir, "live", liveSrc)
	pidFile, stopFile := filepath.Join(dir, "pid"), filepath.Join(dir, "stop")
	cmd := exec.Command(prog, pidFile, stopFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+filepath.Join(dir, "k.dat"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	sock := filepath.Join(dir, fmt.Sprintf("ftkit-%d.sock", pid))
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("no socket left to test with: %v", err)
	}
	r := testenv.Exec(t, dir, testenv.Tool(t, "ftrace"), "live", strconv.Itoa(pid), "status")
	if r.Code == 0 || !strings.Contains(r.Stderr, fmt.Sprintf("no process %d", pid)) || !strings.Contains(r.Stderr, "stale control socket") {
		t.Errorf("live on a killed process: exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("stale socket still there: %v", err)
	}
}

// A C++ function whose symbol GNU's demangler cannot read (gtest's decltype templates:
// libstdc++'s __cxa_demangle in the process and c++filt leave it mangled) is shown by its
// demangled name in reports; record -F / -N with that name reach it too, in the program
// or in a traced library it needs: ftrace record adds its mangled symbol for the runtime
// (the fmt trial's -F matched nothing, and -N 'testing::*' left such functions traced,
// then one in libgtest.so); so do -A and -R specs (the yaml-cpp trial).
func TestRecordUndemangledNames(t *testing.T) {
	for _, inLib := range []bool{false, true} {
		t.Run(map[bool]string{false: "program", true: "library"}[inLib], func(t *testing.T) {
			testRecordUndemangledNames(t, inLib)
		})
	}
}

func testRecordUndemangledNames(t *testing.T, inLib bool) {
	testenv.Need(t, "c++filt", "gcc")
	dir := t.TempDir()
	const sym = "_ZN7testing8internal11MatcherBaseIPcE19MatchAndExplainImplINS3_11ValuePolicyINS0_9EqMatcherIS2_EELb1EEEEEDTcldtclsrT_3Getfp_E15MatchAndExplainfp0_clptfp1_L_ZNS_19MatchResultListener6streamEvEEEERKS3_RKS2_PSA_"
	if out, err := exec.Command("c++filt", sym).Output(); err != nil || strings.TrimSpace(string(out)) != sym {
		t.Skipf("this c++filt reads the symbol (%q, %v): nothing to show", out, err)
	}
	// the function in assembly with its __fentry__ site, as gcc -pg -mfentry writes it
	asm := "\t.text\n\t.globl " + sym + "\n\t.type " + sym + ", @function\n" + sym + ":\n\tcall __fentry__@PLT\n\tmovl $7, %eax\n\tret\n\t.size " + sym + ", .-" + sym + "\n\t.section .note.GNU-stack,\"\",@progbits\n"
	// the program reaches it through a function of the same file, so that in the library
	// case the program's symbols do not name it (as a gtest test does not)
	wrap := "extern int matcher(void) __asm__(\"" + sym + "\");\nint call_matcher(void) { return matcher(); }\n"
	src := "#include <stdio.h>\nint call_matcher(void);\n__attribute__((noinline)) int plain_c(void) { return 3; }\nint main(void) { printf(\"%d\\n\", call_matcher() + plain_c()); return 0; }\n"
	os.WriteFile(filepath.Join(dir, "sym.s"), []byte(asm), 0o644)
	os.WriteFile(filepath.Join(dir, "wrap.c"), []byte(wrap), 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte(src), 0o644)
	lib, inc := testenv.Runtime(t)
	testenv.Run(t, dir, "gcc", "-c", "sym.s", "-o", "sym.o")
	testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-c", "wrap.c", "-o", "wrap.o")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-I"+inc, "-c", "main.c", "-o", "main.o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), "sym.o", "main.o")
	if inLib {
		testenv.Run(t, dir, "gcc", "-shared", "-o", "libsym.so", "sym.o", "wrap.o")
		testenv.Run(t, dir, testenv.Tool(t, "ftlink"), "libsym.so")
		testenv.Run(t, dir, "gcc", "-rdynamic", "-o", "prog", "main.o", "-L.", "-lsym", "-Wl,-rpath,$ORIGIN", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	} else {
		testenv.Run(t, dir, "gcc", "-o", "prog", "main.o", "sym.o", "wrap.o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	}
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), "prog")
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct {
		flags []string
		want  map[string]uint64
	}{
		{[]string{"-F", "*MatcherBase<char*>::MatchAndExplainImpl*"}, map[string]uint64{"matcher": 1}},
		{[]string{"-N", "testing::*"}, map[string]uint64{"main": 1, "plain_c": 1}},
		{nil, map[string]uint64{"matcher": 1, "main": 1, "plain_c": 1}},
	} {
		args := append(append([]string{"record", "-q", "-t", "function", "-o", "t.dat"}, c.flags...), "--", "./prog")
		if r := testenv.Exec(t, dir, ftrace, args...); r.Code != 0 || r.Stdout != "10\n" || strings.Contains(r.Stderr, "matches no function") {
			t.Fatalf("%v: exit %d, stdout %q\n%s", c.flags, r.Code, r.Stdout, r.Stderr)
		}
		_, calls := reportCalls(t, dir, filepath.Join(dir, "t.dat"))
		got := map[string]uint64{}
		for name, n := range calls {
			if strings.Contains(name, "MatchAndExplainImpl") {
				name = "matcher"
			}
			got[name] += n
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v: calls %v, want %v", c.flags, got, c.want)
		}
	}
	// so do -R and -A specs: the function's return value (7) is recorded
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-o", "v.dat", "-R", "*MatcherBase<char*>::MatchAndExplainImpl*@retval/d32", "--", "./prog")
	if r.Code != 0 || r.Stdout != "10\n" || strings.Contains(r.Stderr, "matches no function") {
		t.Fatalf("-R: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if g := testenv.Run(t, dir, ftrace, "graph", "v.dat"); !regexp.MustCompile(`MatchAndExplainImpl.*\) = 7;`).MatchString(g) {
		t.Errorf("-R: the matcher's value is not shown:\n%s", g)
	}
}

const endingsSrc = `#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void crash(void) { leaf(); raise(SIGSEGV); }
__attribute__((noinline)) void quit(void) { leaf(); _exit(7); }
__attribute__((noinline)) void killme(void) { leaf(); raise(SIGKILL); }
__attribute__((noinline)) int child(void) { leaf(); leaf(); return 0; }
int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "crash"))
		crash();
	if (!strcmp(argv[1], "quit"))
		quit();
	if (!strcmp(argv[1], "kill"))
		killme();
	if (!strcmp(argv[1], "daemon")) {	/* the parent leaves at once, the child runs on */
		int ready[2];
		char c;

		/* once the child runs (its trace opened by the fork handlers): a parent that
		   left before that left no .part to name under load (a CI run) */
		if (pipe(ready) != 0)
			return 1;
		if (fork() == 0) {
			close(ready[0]);
			if (write(ready[1], "r", 1) != 1)
				return 1;
			close(ready[1]);
			usleep(500000);
			return child();
		}
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			return 1;
		return 0;
	}
	if (!strcmp(argv[1], "fork") || !strcmp(argv[1], "fork2")) {
		int st;
		pid_t p = fork();
		if (p == 0 && argv[1][4] == '2') {	/* and a grandchild */
			p = fork();
			if (p == 0)
				return child();
			if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				return 1;
			return child();
		}
		if (p == 0)
			return child();
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "child failed: status %#x\n", st);
			return 1;
		}
		leaf();
	}
	return 0;
}
`

// graphFunctions returns the FUNCTION column of `ftrace graph`, one line per call line.
func graphFunctions(t *testing.T, dir, file string, flags ...string) string {
	t.Helper()
	out := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), append(append([]string{"graph"}, flags...), file)...)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "|  "); i >= 0 && !strings.HasPrefix(l, "#") {
			lines = append(lines, l[i+3:])
		}
	}
	return strings.Join(lines, "\n")
}

// TestE2EEndings: traces of programs that crash, _exit or fork are complete and read back.
func TestE2EEndings(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "endings", endingsSrc)
	ftrace := testenv.Tool(t, "ftrace")

	t.Run("fatal signal", func(t *testing.T) {
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "-q", "--", prog, "crash")
		if r.Code != 128+11 {
			t.Fatalf("exit %d, want 139 (SIGSEGV)\n%s", r.Code, r.Stderr)
		}
		info := testenv.Run(t, d, ftrace, "info")
		for _, w := range []string{"flags:              complete,abnormal", "written because:    fatal signal", "signal:             11"} {
			if !strings.Contains(info, w) {
				t.Errorf("info lacks %q:\n%s", w, info)
			}
		}
		want := "main() {\n  crash() {\n    leaf();\n  } /* crash */ /* unfinished */\n} /* main */ /* unfinished */"
		if got := graphFunctions(t, d, "ftrace.dat"); got != want {
			t.Errorf("graph:\n%s\nwant:\n%s", got, want)
		}
		// said as a shell would have (ftrace itself exits normally, with 139)
		if r := testenv.Exec(t, d, ftrace, "record", "--", prog, "crash"); r.Code != 139 || !strings.Contains(r.Stderr, "ftrace: endings: killed by signal 11 (SIGSEGV)") {
			t.Errorf("exit %d, stderr:\n%s", r.Code, r.Stderr)
		}
	})
	t.Run("_exit", func(t *testing.T) {
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "-q", "--", prog, "quit")
		if r.Code != 7 {
			t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
		}
		info := testenv.Run(t, d, ftrace, "info")
		if !strings.Contains(info, "flags:              complete") || !strings.Contains(info, "written because:    exit") {
			t.Errorf("info:\n%s", info)
		}
		want := "main() {\n  quit() {\n    leaf();\n  } /* quit */ /* unfinished */\n} /* main */ /* unfinished */"
		if got := graphFunctions(t, d, "ftrace.dat"); got != want {
			t.Errorf("graph:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		// Nothing can finalise: the trace stays a .part file, which reads back (with
		// the records of full staging buffers only: none for this short run).
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "--", prog, "kill")
		if r.Code != 128+9 || !strings.Contains(r.Stderr, "partial trace in ftrace.dat.") {
			t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
		}
		parts, _ := filepath.Glob(filepath.Join(d, "ftrace.dat.*.part"))
		if len(parts) != 1 {
			t.Fatalf("part files %v", parts)
		}
		ir := testenv.Exec(t, d, ftrace, "info", parts[0])
		if info := ir.Stdout; !strings.Contains(info, "written because:    live (not finalised)") || !strings.Contains(info, "flags:              none") {
			t.Errorf("info:\n%s", info)
		}
		// on stderr too, as the other readers say it
		if !strings.Contains(ir.Stderr, "ftrace: warning: "+parts[0]+": not finalised") {
			t.Errorf("info's stderr: %q", ir.Stderr)
		}
		for _, cmd := range []string{"graph", "report"} {
			r := testenv.Exec(t, d, ftrace, cmd, parts[0])
			if r.Code != 0 || !strings.Contains(r.Stderr, "not finalised") {
				t.Errorf("%s of a .part: exit %d, stderr %q (want it said not finalised)", cmd, r.Code, r.Stderr)
			}
		}
	})
	t.Run("SIGKILL-ring", func(t *testing.T) {
		// A flight recorder's events are in the process's memory until written: a
		// SIGKILL loses them, which record and the readers say (the zstd trial was told
		// of a partial trace and of "up to 100 ms" missing, in a file of no events).
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "--ring", "1M", "--", prog, "kill")
		if r.Code != 128+9 || !strings.Contains(r.Stderr, "a flight recorder's events live in the process's memory") {
			t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
		}
		parts, _ := filepath.Glob(filepath.Join(d, "ftrace.dat.*.part"))
		if len(parts) != 1 {
			t.Fatalf("part files %v", parts)
		}
		if ir := testenv.Exec(t, d, ftrace, "info", parts[0]); !strings.Contains(ir.Stderr, "a killed process's events are lost") ||
			strings.Contains(ir.Stderr, "100 ms") {
			t.Errorf("info's stderr: %q", ir.Stderr)
		}
	})
	t.Run("fork", func(t *testing.T) {
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "--", prog, "fork")
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
		}
		if !regexp.MustCompile(`(?m)^ftrace: traces of the run's other processes: ftrace\.dat\.\d+$`).MatchString(r.Stderr) {
			t.Errorf("record does not name the child's trace:\n%s", r.Stderr)
		}
		if got, want := graphFunctions(t, d, "ftrace.dat"), "main() {\n  leaf();\n} /* main */"; got != want {
			t.Errorf("parent graph:\n%s\nwant:\n%s", got, want)
		}
		kids, _ := filepath.Glob(filepath.Join(d, "ftrace.dat.*"))
		if len(kids) != 1 {
			t.Fatalf("child traces %v", kids)
		}
		// The child's stream starts inside main, entered before the fork: its return
		// has no record in the child's file (docs/trace-format.md).
		if got, want := graphFunctions(t, d, kids[0]), "child() {\n  leaf();\n  leaf();\n} /* child */"; got != want {
			t.Errorf("child graph:\n%s\nwant:\n%s", got, want)
		}
	})
	// a daemon's trace is still being written when record ends: record names it and says
	// so (the nginx trial: record was silent about it)
	t.Run("daemon", func(t *testing.T) {
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "--", prog, "daemon")
		m := regexp.MustCompile(`(?m)^ftrace: forked children's traces at \.part: \S*ftrace\.dat\.(\d+)\.part \(still written: process (\d+) is running\)$`).FindStringSubmatch(r.Stderr)
		if r.Code != 0 || m == nil || m[1] != m[2] {
			t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
		}
	})
	// a grandchild writes ftrace.dat.<pid>.<pid>: named too (the dash trial)
	t.Run("fork2", func(t *testing.T) {
		d := t.TempDir()
		r := testenv.Exec(t, d, ftrace, "record", "--", prog, "fork2")
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
		}
		if !regexp.MustCompile(`(?m)^ftrace: traces of the run's other processes: ftrace\.dat\.\d+ ftrace\.dat\.\d+\.\d+$`).MatchString(r.Stderr) {
			t.Errorf("record does not name the child's and grandchild's traces:\n%s", r.Stderr)
		}
	})
}

const cxxSrc = `#include <cstdio>
#include <stdexcept>
namespace shop {
struct Till {
	int sales = 0;
	__attribute__((noinline)) void ring(int v);
};
__attribute__((noinline)) void Till::ring(int v)
{
	if (v < 0)
		throw std::invalid_argument("negative");
	sales += v;
}
__attribute__((noinline)) void sell(Till &t, int v) { t.ring(v); }
}
int main()
{
	shop::Till t;
	shop::sell(t, 3);
	try {
		shop::sell(t, -1);
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
	}
	std::printf("total %d\n", t.sales);
	return 0;
}
`

// A C++ name with operator[] pasted from report's output selects that function in every
// command, record -F too: its "[" opens no class and is a "[" itself, as fnmatch takes
// it (the ninja trial: "unterminated [" from the readers, EINVAL from the runtime, and
// record went on tracing nothing).
func TestRecordOperatorBracketName(t *testing.T) {
	dir := t.TempDir()
	// operator new: libstdc++ is loaded, whose demangler the runtime matches names with
	prog := buildTracedWith(t, "g++", ".cc", dir, "grid", `#include <cstdio>
struct Grid {
	int *v = new int[4]{1, 2, 3, 4};
	__attribute__((noinline)) int &operator[](int i) { return v[i & 3]; }
};
__attribute__((noinline)) int sum(Grid &g) { int s = 0; for (int i = 0; i < 4; i++) s += g[i]; return s; }
int main() { Grid g; std::printf("%d\n", sum(g)); delete[] g.v; return 0; }
`)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-o", "all.dat", "--", prog)
	rep := testenv.Run(t, dir, ftrace, "report", "all.dat")
	m := regexp.MustCompile(`(?m)^ +4 .*  (Grid::operator\[\]\(int\))( \[|$)`).FindStringSubmatch(rep)
	if m == nil {
		t.Fatalf("report shows no Grid::operator[] with 4 calls:\n%s", rep)
	}
	name := m[1]
	for _, args := range [][]string{{"report", "-F", name, "all.dat"}, {"graph", "-F", name, "all.dat"}} {
		r := testenv.Exec(t, dir, ftrace, args...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "operator[]") || strings.Contains(r.Stdout, "sum(") || r.Stderr != "" {
			t.Errorf("%s -F %q: exit %d\n%s%s", args[0], name, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-F", name, "-o", "one.dat", "--", prog)
	if r.Code != 0 || r.Stdout != "10\n" || r.Stderr != "" {
		t.Fatalf("record -F %q: exit %d, stdout %q, stderr %q", name, r.Code, r.Stdout, r.Stderr)
	}
	// the function or its clone ([clone .isra.0] at -O2), alone
	if _, calls := reportCalls(t, dir, "one.dat"); len(calls) != 1 || calls[name]+calls[name+m[2]+"clone .isra.0]"] != 4 {
		t.Errorf("record -F %q: calls %v", name, calls)
	}
}

// A C++ program that uses nothing of libstdc++ is linked without it (--as-needed, as
// Debian's g++ links by default), so the process has no demangler: record -F/-A/-T
// with C++ names matched nothing ("0 events") until the runtime loaded the library for
// its demangler on seeing them.
func TestRecordCXXNamesWithoutLibstdcxx(t *testing.T) {
	dir := t.TempDir()
	testenv.Need(t, "g++")
	lib, inc := testenv.Runtime(t)
	src := filepath.Join(dir, "q.cc")
	if err := os.WriteFile(src, []byte(`#include <cstdio>
namespace ns {
__attribute__((noinline)) int f(int x) { return 2 * x + 1; }
__attribute__((noinline)) int g(int x) { return f(x) + f(x + 1); }
}
__attribute__((noipa)) int h(int x) { return x; }
__attribute__((noipa)) int hh(int x) { return x; }
int main(int argc, char **) { int s = hh(0); for (int i = 0; i < 5; i++) s += ns::g(i + argc) + h(0); std::printf("%d\n", s); return 0; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "q")
	testenv.Run(t, dir, "g++", "-O2", "-pg", "-mfentry", "-I"+inc, "-c", src, "-o", prog+".o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), prog+".o")
	testenv.Run(t, dir, "g++", "-Wl,--as-needed", "-o", prog, prog+".o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := f.ImportedLibraries()
	f.Close()
	for _, l := range libs {
		if strings.HasPrefix(l, "libstdc++") {
			t.Fatalf("%s needs %s: the case of a program without it is not made", prog, l)
		}
	}
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct {
		args  []string
		calls map[string]uint64
	}{
		{[]string{"-F", "ns::f"}, map[string]uint64{"ns::f(int)": 10}},
		{[]string{"-F", "ns::*", "-N", "ns::g(int)"}, map[string]uint64{"ns::f(int)": 10}},
		{[]string{"-F", "ns::g", "-T", "ns::f@traceoff"}, map[string]uint64{"ns::g(int)": 1}},
		// a global function's plain name, read in its mangled symbol (_Z1hi), not hh's
		{[]string{"-F", "h"}, map[string]uint64{"h(int)": 5}},
	} {
		args := append(append([]string{"record", "-q", "-o", "t.dat"}, c.args...), "--", prog)
		r := testenv.Exec(t, dir, ftrace, args...)
		if r.Code != 0 || r.Stdout != "80\n" || r.Stderr != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, r.Code, r.Stdout, r.Stderr)
		}
		if _, calls := reportCalls(t, dir, "t.dat"); fmt.Sprint(calls) != fmt.Sprint(c.calls) {
			t.Errorf("%v: calls %v, want %v", c.args, calls, c.calls)
		}
	}
	testenv.Run(t, dir, ftrace, "record", "-q", "-o", "a.dat", "-A", "ns::f@arg1", "-R", "ns::f@retval", "--", prog)
	if g := testenv.Run(t, dir, ftrace, "graph", "a.dat"); !strings.Contains(g, "ns::f(1) = 3;") || !strings.Contains(g, "ns::f(6) = 13;") {
		t.Errorf("-A/-R ns::f: graph shows no values:\n%s", g)
	}
	// the C++ program had the library mapped for it; a C program given the same kind of
	// globs has no C++ name to demangle and does not get it
	if info := testenv.Run(t, dir, ftrace, "info", "a.dat"); !strings.Contains(info, "libstdc++") {
		t.Errorf("the C++ program's memory map names no libstdc++:\n%s", info)
	}
	csrc := filepath.Join(dir, "c.c")
	if err := os.WriteFile(csrc, []byte(`#include <stdio.h>
__attribute__((noinline)) int work(int x) { return 2 * x + 1; }
int main(void) { int s = 0; for (int i = 0; i < 4; i++) s += work(i); printf("%d\n", s); return 0; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cprog := filepath.Join(dir, "c")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", csrc, "-o", cprog+".o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), cprog+".o")
	testenv.Run(t, dir, "gcc", "-o", cprog, cprog+".o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	for _, flags := range [][]string{{"-N", "ns::none"}, {"-N", "none(int)"}, {"-A", "work(*@arg1"}} {
		args := append(append([]string{"record", "-q", "-o", "c.dat", "-F", "work"}, flags...), "--", cprog)
		if r := testenv.Exec(t, dir, ftrace, args...); r.Code != 0 || r.Stdout != "16\n" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", flags, r.Code, r.Stdout, r.Stderr)
		}
		if info := testenv.Run(t, dir, ftrace, "info", "c.dat"); strings.Contains(info, "libstdc++") {
			t.Errorf("C program, %v: libstdc++ was loaded into it:\n%s", flags, info)
		}
		if _, calls := reportCalls(t, dir, "c.dat"); calls["work"] != 4 {
			t.Errorf("C program, %v: calls %v", flags, calls)
		}
	}
}

// TestE2ECXX: demangled names, and frames left by an exception marked unwound.
func TestE2ECXX(t *testing.T) {
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "shop", cxxSrc)
	out := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "record", "-q", "--", prog)
	if out != "caught negative\ntotal 3\n" {
		t.Errorf("output %q", out)
	}
	want := `main() {
  shop::sell(shop::Till&, int) {
    shop::Till::ring(int);
  } /* shop::sell(shop::Till&, int) */
  shop::sell(shop::Till&, int) {
    shop::Till::ring(int); /* unwound */
  } /* shop::sell(shop::Till&, int) */ /* unwound */
} /* main */`
	if got := graphFunctions(t, dir, "ftrace.dat"); got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}
}

// C++ functions are named at record time as the readers name them: without their
// parameters ("shop::sell", as uftrace shows them), with them, or mangled; -F, -N, -A and
// -R take each form, and ftrace args agrees (the re2 trial: -A 'ratio@...' recorded
// nothing, silently, while ftrace args planned it; 'ratio(int, double)@...' the reverse).
func TestE2ECXXNames(t *testing.T) {
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "shop", cxxSrc)
	ftrace := testenv.Tool(t, "ftrace")
	for _, name := range []string{"shop::Till::ring", "shop::Till::ring(int)", "shop::Till::ri*", "_ZN4shop4Till4ringEi"} {
		r := testenv.Exec(t, dir, ftrace, "record", "-q", "-t", "function", "-F", name, "-A", name+"@arg2/d32", "--", prog)
		if r.Code != 0 || r.Stdout != "caught negative\ntotal 3\n" || r.Stderr != "" {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", name, r.Code, r.Stdout, r.Stderr)
		}
		d := testenv.Run(t, dir, ftrace, "dump", "ftrace.dat")
		if !strings.Contains(d, "shop::Till::ring(int) (3) <- shop::sell") || !strings.Contains(d, "shop::Till::ring(int) (-1) <- shop::sell") ||
			strings.Contains(d, "main") {
			t.Errorf("-F/-A %s: dump\n%s", name, d)
		}
		if plan := testenv.Run(t, dir, ftrace, "args", "-A", name+"@arg2/d32", prog); !strings.Contains(plan, "ring(arg2/d32 @rsi)") {
			t.Errorf("ftrace args -A %s: %q", name, plan)
		}
	}
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-t", "function", "-N", "shop::sell", "--", prog)
	if _, calls := reportCalls(t, dir); r.Code != 0 || calls["shop::sell(shop::Till&, int)"] != 0 || calls["shop::Till::ring(int)"] != 2 {
		t.Errorf("-N shop::sell: exit %d %q, calls %v", r.Code, r.Stderr, calls)
	}
	// a spec that matches nothing is said, once
	r = testenv.Exec(t, dir, ftrace, "record", "-q", "-t", "function", "-A", "shop::nosuch@arg1", "-A", "shop::sell@arg2/d32", "--", prog)
	if r.Code != 0 || strings.Count(r.Stderr, "FTRACE_ARGS: 'shop::nosuch' matches no function") != 1 {
		t.Errorf("-A shop::nosuch: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// ftrace args names a deleting destructor as the readers do, "[deleting]" after it: its
// line read as the complete destructor's (the leveldb trial).
func TestArgsDeletingDestructor(t *testing.T) {
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "dtor", `#include <cstdio>
struct B { int v; B(int x) : v(x) {} virtual ~B() { std::printf("~B %d\n", v); } };
__attribute__((noinline)) void drop(B *b) { delete b; }
int main() { B local(1); drop(new B(2)); return 0; }
`)
	got := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "args", prog, "B::~B*")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	deleting := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "B::~B(B *const this @rdi) [deleting]") {
			deleting++
		} else if !strings.HasSuffix(l, "B::~B(B *const this @rdi)") {
			t.Errorf("line %q", l)
		}
	}
	if len(lines) != 2 || deleting != 1 {
		t.Errorf("ftrace args B::~B*: want the complete and the deleting destructor, one tagged:\n%s", got)
	}
}

// A C++ function that GNU's demangler (the runtime's, through libstdc++) names otherwise
// than the readers do: std::call_once's lambda helper (_FUN), whose name as report prints
// it, given to record -F, matched nothing (the re2 trial: 7 functions of re2). record
// hands the runtime its mangled symbol.
func TestRecordOtherwiseDemangled(t *testing.T) {
	testenv.Need(t, "c++filt")
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "once", `#include <mutex>
#include <cstdio>
static std::once_flag flag;
__attribute__((noinline)) void init(int x) { std::call_once(flag, [](int y) { std::printf("once %d\n", y); }, x); }
int main() { init(1); init(2); return 0; }
`)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-t", "function", "-o", "all.dat", "--", prog)
	_, calls := reportCalls(t, dir, filepath.Join(dir, "all.dat"))
	var name string
	for n := range calls {
		if strings.HasSuffix(n, "::_FUN()") {
			name = n
		}
	}
	if name == "" {
		t.Fatalf("no _FUN in %v", calls)
	}
	if out, _ := exec.Command("c++filt", symbolOf(t, prog, "_FUN")).Output(); strings.TrimSpace(string(out)) == name {
		t.Skip("c++filt names it as the readers do: nothing to show")
	}
	recordByName(t, dir, prog, name, "once 1\n")
}

// A deleting destructor as report names it ("S::~S() [deleting]"), given to record -F:
// GNU's demangler, the runtime's, names it without the tag, so the glob matched nothing
// (the leveldb trial: 11 of 359 names of a report). record hands the runtime its symbol.
func TestRecordDeletingDestructor(t *testing.T) {
	testenv.Need(t, "c++filt")
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "dtor", `#include <cstdio>
struct Base { virtual ~Base(); virtual int f() = 0; };
Base::~Base() {}
struct Leaf : Base { int v; explicit Leaf(int x) : v(x) {} ~Leaf() override; int f() override { return v; } };
Leaf::~Leaf() { std::printf("gone %d\n", v); }
__attribute__((noinline)) Base *make(int x) { return new Leaf(x); }
int main() { Base *b = make(3); int r = b->f(); delete b; Leaf l(4); return r - 3; }
`)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-t", "function", "-o", "all.dat", "--", prog)
	_, calls := reportCalls(t, dir, filepath.Join(dir, "all.dat"))
	const name = "Leaf::~Leaf() [deleting]"
	if calls[name] != 1 {
		t.Fatalf("no single call of %q in %v", name, calls)
	}
	recordByName(t, dir, prog, name, "gone 3\ngone 4\n")
}

// recordByName records prog with -F name (as report printed it): the program prints
// stdout, and name is the one function traced, called once.
func recordByName(t *testing.T, dir, prog, name, stdout string) {
	t.Helper()
	r := testenv.Exec(t, dir, testenv.Tool(t, "ftrace"), "record", "-q", "-t", "function", "-F", name, "-o", "f.dat", "--", prog)
	if r.Code != 0 || r.Stdout != stdout || strings.Contains(r.Stderr, "matches no function") {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if _, got := reportCalls(t, dir, filepath.Join(dir, "f.dat")); len(got) != 1 || got[name] != 1 {
		t.Errorf("-F %q: calls %v", name, got)
	}
}

// A function in an executable section of its own name (lmdb's mdb_env_* API is in
// "text_env") is traced like the others: its site is recorded, made a nop and found by
// -F. Before, recordmcount left it out: untraced, its site calling the runtime's
// __fentry__ stub on every call.
func TestE2ECustomSection(t *testing.T) {
	dir := t.TempDir()
	prog := buildTracedWith(t, "gcc", ".c", dir, "sec", `#include <stdio.h>
__attribute__((section("text_env"), noinline)) int env_open(int x) { return x * 2; }
__attribute__((noinline)) int plain(int x) { return env_open(x) + 1; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", plain(argc) + env_open(argc)); return 0; }
`)
	ftrace := testenv.Tool(t, "ftrace")
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-t", "function", "-F", "env_open", "--", prog)
	if r.Code != 0 || r.Stdout != "5\n" || r.Stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if _, calls := reportCalls(t, dir); len(calls) != 1 || calls["env_open"] != 2 {
		t.Errorf("calls %v, want env_open's 2", calls)
	}
}

// symbolOf is the first function symbol of prog whose name contains part.
func symbolOf(t *testing.T, prog, part string) string {
	t.Helper()
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && strings.Contains(s.Name, part) {
			return s.Name
		}
	}
	t.Fatalf("%s: no symbol containing %q", prog, part)
	return ""
}

const unwindSrc = `#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static volatile int sink;
__attribute__((noinline)) void deep(int n) { if (n == 0) longjmp(env, 1); deep(n - 1); sink++; }
__attribute__((noinline)) int recurse(int n) { return n == 0 ? 0 : 1 + recurse(n - 1); }
__attribute__((noinline)) void *quitter(void *p) { sink++; pthread_exit(p); }
__attribute__((noinline)) void *run_quitter(void *p) { return quitter(p); }
int main(void)
{
	pthread_t t;
	if (setjmp(env) == 0)
		deep(3);
	printf("recurse %d\n", recurse(100000));
	if (pthread_create(&t, NULL, run_quitter, NULL) || pthread_join(t, NULL))
		return 1;
	return 0;
}
`

// TestE2EUnwinding: longjmp and pthread_exit leave frames marked unwound; recursion
// deeper than the shadow stack is cut, counted, and the graph stays balanced.
func TestE2EUnwinding(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "unwind", unwindSrc)
	ftrace := testenv.Tool(t, "ftrace")
	if out := testenv.Run(t, dir, ftrace, "record", "-q", "--", prog); out != "recurse 100000\n" {
		t.Errorf("output %q", out)
	}
	// the summary counts the calls not graphed (over depth), and no lost events when none were
	sum := exec.Command(ftrace, "record", "--no-loss", "-o", "sum.dat", "--", prog)
	sum.Dir = dir
	var se strings.Builder
	sum.Stderr = &se
	if err := sum.Run(); err != nil || !regexp.MustCompile(`events, \d+ calls not graphed \(`).MatchString(se.String()) ||
		strings.Contains(se.String(), " lost") {
		t.Errorf("record's summary (%v):\n%s", err, se.String())
	}
	g := graphFunctions(t, dir, "ftrace.dat", "--depth", "5")
	wantDeep := `main() {
  deep() {
    deep() {
      deep() {
        deep(); /* unwound */
      } /* deep */ /* unwound */
    } /* deep */ /* unwound */
  } /* deep */ /* unwound */
  recurse() {
    recurse() {
      recurse() {
        recurse();
      } /* recurse */
    } /* recurse */
  } /* recurse */
} /* main */
run_quitter() {
  quitter(); /* unwound */
} /* run_quitter */ /* unwound */`
	if g != wantDeep {
		t.Errorf("graph:\n%s\nwant:\n%s", g, wantDeep)
	}
	_, calls := reportCalls(t, dir)
	info := testenv.Run(t, dir, ftrace, "info")
	m := regexp.MustCompile(`calls not graphed: +(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("info:\n%s", info)
	}
	var over uint64
	fmt.Sscan(m[1], &over)
	if calls["deep"] != 4 || calls["quitter"] != 1 || calls["recurse"]+over != 100001 || calls["recurse"] < 100 {
		t.Errorf("calls %v, calls not graphed %d: want deep 4, quitter 1, recurse recorded + cut = 100001", calls, over)
	}
}

const signalSrc = `#include <signal.h>
#include <stdio.h>
static volatile int sink;
__attribute__((noinline)) void in_handler(void) { sink++; }
__attribute__((noinline)) void handler(int s) { (void)s; in_handler(); }
__attribute__((noinline)) void work(void) { raise(SIGUSR1); sink++; }
int main(void)
{
	signal(SIGUSR1, handler);
	work();
	printf("sink %d\n", sink);
	return 0;
}
`

// TestE2ESignal: a handler running on the thread's stack nests inside the call it
// interrupted.
func TestE2ESignal(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "sig", signalSrc)
	ftrace := testenv.Tool(t, "ftrace")
	for _, tracer := range []string{"function_graph", "function"} {
		r := testenv.Exec(t, dir, ftrace, "record", "-q", "-t", tracer, "-o", tracer+".dat", "--", prog)
		if r.Code != 0 || r.Stdout != "sink 2\n" {
			t.Fatalf("%s: exit %d, output %q\n%s", tracer, r.Code, r.Stdout, r.Stderr)
		}
	}
	want := "main() {\n  work() {\n    handler() {\n      in_handler();\n    } /* handler */\n  } /* work */\n} /* main */"
	if got := graphFunctions(t, dir, "function_graph.dat"); got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}
	_, calls := reportCalls(t, dir, "function.dat")
	if calls["handler"] != 1 || calls["in_handler"] != 1 || calls["work"] != 1 || calls["main"] != 1 {
		t.Errorf("function tracer calls %v", calls)
	}
}

// TestE2ERecordSignals: `ftrace record` hands the program the signal dispositions it was
// given itself (it catches ^C while it waits, it does not ignore it: an ignored signal would
// stay ignored in the program, and make or a shell would never see ^C).
func TestE2ERecordSignals(t *testing.T) {
	dir := t.TempDir()
	ftrace := testenv.Tool(t, "ftrace")
	direct := testenv.Run(t, dir, "grep", "SigIgn", "/proc/self/status")
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-o", "x.dat", "--", "grep", "SigIgn", "/proc/self/status")
	if r.Stdout != direct {
		t.Errorf("ignored signals under ftrace record: %q, run directly: %q", r.Stdout, direct)
	}
}

// TestE2EZlib traces Debian's zlib test program (example.c over a libz.a built the ftkit
// way) with both tracers: the program's output is unchanged, and the function-graph
// trace is consistent with the function trace — the same calls of the same functions,
// every entry with its exit. Skipped with -short.
func TestE2EZlib(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds Debian's zlib")
	}
	testenv.Need(t, "gcc", "make", "bash")
	lib, _ := testenv.Runtime(t)
	src := testenv.DebianSource(t, "zlib")
	dir := t.TempDir()
	testenv.CopyTree(t, src, dir)
	ftkitCC := filepath.Join(testenv.Root(), "testdata", "ftlink", "ftkit-cc")
	env := append(os.Environ(), "FTKIT_RECORDMCOUNT="+testenv.Tool(t, "recordmcount"), "FTKIT_FTLINK="+testenv.Tool(t, "ftlink"))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("sh", "-c", "CC="+ftkitCC+" CFLAGS=-O2 ./configure --static")
	run("make", "-j2", "libz.a")
	run(ftkitCC, "-O2", "-I.", "-c", "test/example.c", "-o", "example.o")
	run("gcc", "example.o", "-o", "example", "libz.a", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	run(testenv.Tool(t, "ftlink"), "example")
	prog := filepath.Join(dir, "example")
	plain := testenv.Run(t, dir, prog)
	ftrace := testenv.Tool(t, "ftrace")
	per := map[string]map[string]uint64{}
	for _, tracer := range []string{"function", "function_graph"} {
		out := testenv.Run(t, dir, ftrace, "record", "-q", "-t", tracer, "-o", tracer+".dat", "--", prog)
		if out != plain {
			t.Errorf("%s: output changed:\n%s\nwant:\n%s", tracer, out, plain)
		}
		_, per[tracer] = reportCalls(t, dir, tracer+".dat") // fails on unfinished calls
	}
	fn, fg := per["function"], per["function_graph"]
	if len(fn) < 50 || fn["deflate"] == 0 || fn["inflate"] == 0 {
		t.Errorf("too few functions traced: %v", fn)
	}
	for name, n := range fn {
		if fg[name] != n {
			t.Errorf("%s: %d calls traced by function, %d by function_graph", name, n, fg[name])
		}
	}
	for name := range fg {
		if _, ok := fn[name]; !ok {
			t.Errorf("%s: only in the function_graph trace", name)
		}
	}
	if g := testenv.Run(t, dir, ftrace, "graph", "--limit", "1", "function_graph.dat"); strings.Contains(g, "returns without entry") {
		t.Errorf("graph trace not balanced:\n%s", g)
	}
}

const noreturnSrc = `#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline, noreturn)) void die(int c) { printf("die %d\n", c); exit(0); }
__attribute__((noinline)) void check(int x) { if (x > 0) die(x); }
__attribute__((noinline)) void next_fn(int x) { printf("next %d\n", x); }
int main(int argc, char **argv) { (void)argv; next_fn(argc); check(argc); return 0; }
`

// The function tracer's caller of a noreturn function called as its caller's last
// instruction: the return address is past the caller's end, the call is not.
func TestE2ENoreturnCaller(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "noret", noreturnSrc)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-t", "function", "-o", "nr.dat", "--", prog)
	out := testenv.Run(t, dir, ftrace, "graph", "nr.dat")
	if !regexp.MustCompile(`(?m)  die <- check$`).MatchString(out) {
		t.Errorf("die's caller is not check:\n%s", out)
	}
	if out := testenv.Run(t, dir, ftrace, "dump", "nr.dat"); !strings.Contains(out, "die <- check") {
		t.Errorf("dump: die's caller is not check:\n%s", out)
	}
}

// An executable built without ftcc whose shared library was built with it: record names
// the library and says to link the executable with ftcc (the tinyxml2 trial was told the
// program was not built for ftkit at all).
func TestRecordPlainExecutableTracedLibrary(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	ftcc, ftrace := testenv.Tool(t, "ftcc"), testenv.Tool(t, "ftrace")
	os.WriteFile(filepath.Join(dir, "lib.c"), []byte("int lf(int x) { return x + 1; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte("#include <stdio.h>\nint lf(int);\nint main(void) { printf(\"%d\\n\", lf(1)); return 0; }\n"), 0o644)
	testenv.Run(t, dir, ftcc, "gcc", "-O2", "-shared", "-fPIC", "-o", "libl.so", "lib.c")
	testenv.Run(t, dir, "gcc", "-O2", "-o", "prog", "main.c", "-L.", "-ll", "-Wl,-rpath,$ORIGIN")
	r := testenv.Exec(t, dir, ftrace, "record", "-o", "p.dat", "--", "./prog")
	if r.Code != 0 || r.Stdout != "2\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "./prog was not built for ftkit, but its library "+filepath.Join(dir, "libl.so")+" has call sites: link prog with ftcc too") {
		t.Errorf("stderr %q", r.Stderr)
	}
}

// A library's versioned functions (.symver: "vf@@V2", "vf@V1" at one address, as
// liblzma's): -F takes the source name at record and read time, and the readers show it
// without the version (xz trial).
func TestVersionedSymbols(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	ftcc, ftrace := testenv.Tool(t, "ftcc"), testenv.Tool(t, "ftrace")
	os.WriteFile(filepath.Join(dir, "lib.c"), []byte(`int vf_impl(int x) { return x + 1; }
__asm__(".symver vf_impl, vf@@V2");
__asm__(".symver vf_impl, vf@V1");
int other(int x) { return x * 2; }
`), 0o644)
	os.WriteFile(filepath.Join(dir, "v.map"), []byte("V1 { global: vf; other; local: *; };\nV2 { global: vf; } V1;\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte("#include <stdio.h>\nint vf(int); int other(int);\nint main(void) { printf(\"%d\\n\", vf(1) + other(2)); return 0; }\n"), 0o644)
	testenv.Run(t, dir, ftcc, "gcc", "-O2", "-shared", "-fPIC", "-Wl,--version-script=v.map", "-o", "libv.so", "lib.c")
	testenv.Run(t, dir, ftcc, "gcc", "-O2", "-o", "prog", "main.c", "-L.", "-lv", "-Wl,-rpath,$ORIGIN")
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-t", "function", "-F", "vf", "-o", "v.dat", "--", "./prog")
	if r.Code != 0 || r.Stdout != "6\n" || r.Stderr != "" {
		t.Fatalf("record: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	rep := testenv.Run(t, dir, ftrace, "report", "-F", "vf", "v.dat")
	if !regexp.MustCompile(`(?m)^ +1 +vf( \[|$)`).MatchString(rep) || strings.Contains(rep, "@") || strings.Contains(rep, "other") {
		t.Errorf("report:\n%s", rep)
	}
}

// info on a flight recorder's trace: the calls open where the ring's oldest block begins
// get entries rebuilt from block headers (dump and graph show them). info's events line
// and its thread table count the file's events alike, and says how many were rebuilt (the
// nginx trial: the table said 161855, the events line 161829).
func TestInfoRingRebuiltEntries(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "ring", `__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += leaf(i); return s; }
int main(void) { return work(300000) == 42; }
`)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "--ring", "64K", "-o", "r.dat", "--", prog)
	info := testenv.Run(t, dir, ftrace, "info", "r.dat")
	ev := regexp.MustCompile(`(?m)^events: +(\d+) `).FindStringSubmatch(info)
	rb := regexp.MustCompile(`(?m)^entries rebuilt: +(\d+) `).FindStringSubmatch(info)
	row := regexp.MustCompile(`(?m)^ +\d+ +ring +(\d+) `).FindStringSubmatch(info)
	if ev == nil || rb == nil || row == nil || ev[1] != row[1] || rb[1] != "2" {
		t.Fatalf("info:\n%s", info)
	}
	n, _ := strconv.Atoi(ev[1])
	lines := strings.Count(testenv.Run(t, dir, ftrace, "dump", "r.dat"), "\n") - 1 // its header line
	if lines != n+2 {
		t.Errorf("dump shows %d events, info %d + 2 rebuilt", lines, n)
	}
	if !strings.Contains(info, "where a ring's oldest block begins") {
		t.Errorf("info does not say the entries were rebuilt at the ring's start:\n%s", info)
	}
}

// A program that has used up its descriptors (memcached at its -c limit): a live tracer
// switch needs /proc/self/task to unregister the running tracer and cannot have it. It is
// refused with the reason, the tracer runs on as it was, and later commands are answered;
// the switch had left the graph ops linked into the list twice, and the next one spun in
// the core forever, with the program's thread.
func TestLiveSwitchWithoutDescriptors(t *testing.T) {
	dir := t.TempDir()
	lib, inc := testenv.Runtime(t)
	src := filepath.Join(dir, "fds.c")
	if err := os.WriteFile(src, []byte(`#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
__attribute__((noinline)) int work(int x) { return x + 1; }
int main(void) {
	struct rlimit r = { 25, 25 };
	int last = -1, fd, filled = 0;
	setrlimit(RLIMIT_NOFILE, &r);
	while ((fd = open("/dev/null", O_RDONLY)) >= 0)
		last = fd;
	close(last); /* for the control connection */
	printf("ready %d\n", getpid());
	fflush(stdout);
	long s = 0;
	for (int i = 0; i < 3000 && access("stop", F_OK); i++) {
		for (int k = 0; k < 100; k++)
			s += work(k);
		if (!filled && !access("fill", F_OK)) {
			while ((fd = open("/dev/null", O_RDONLY)) >= 0)
				last = fd; /* the last one too */
			filled = 1;
		}
		if (last > 20 && !access("free", F_OK))
			while (last > 20)
				close(last--); /* the program's own, opened after ours */
		usleep(2000);
	}
	printf("%ld\n", s > 0);
	return 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "fds")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-I"+inc, "-c", src, "-o", prog+".o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), prog+".o")
	testenv.Run(t, dir, "gcc", "-o", prog, prog+".o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	ftrace := testenv.Tool(t, "ftrace")
	cmd := exec.Command(ftrace, "record", "-q", "-o", "t.dat", "--", prog)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	pid, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		t.Fatalf("program said %q (%v)", line, err)
	}
	live := func(args ...string) testenv.Result {
		c := exec.Command(ftrace, append([]string{"live", pid}, args...)...)
		c.Dir = dir
		var o, e strings.Builder
		c.Stdout, c.Stderr = &o, &e
		done := make(chan error, 1)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			code := 0
			if err != nil {
				code = 1
			}
			return testenv.Result{Code: code, Stdout: o.String(), Stderr: e.String()}
		case <-time.After(20 * time.Second):
			c.Process.Kill()
			t.Fatalf("ftrace live %v: no answer in 20 s", args)
		}
		return testenv.Result{}
	}
	for _, tracer := range []string{"nop", "function", "function_graph"} {
		// the running tracer named again is kept as it is, as the kernel's current_tracer
		if r := live("tracer", tracer); tracer == "function_graph" && r.Code != 0 {
			t.Errorf("tracer %s (the running one): %+v", tracer, r)
		} else if tracer != "function_graph" && (r.Code == 0 || !strings.Contains(r.Stderr, "Too many open files")) {
			t.Errorf("tracer %s: %+v, want a refusal for want of a descriptor", tracer, r)
		}
		if r := live("status"); !strings.Contains(r.Stdout, "tracer=function_graph enabled=1 recording=1") {
			t.Errorf("after tracer %s: status %+v, want function_graph recording as before", tracer, r)
		}
	}
	// a filter whose names cannot be read for want of a descriptor says so (not "matches
	// no function"), and works once there is one: the names were not taken for none
	if r := live("filter", "work"); r.Code == 0 || !strings.Contains(r.Stderr, "Too many open files") {
		t.Errorf("filter work without a descriptor: %+v, want a refusal for want of one", r)
	}
	if r := live("snapshot", "s.dat"); r.Code == 0 || !strings.Contains(r.Stderr, "Too many open files (the process has none left now") {
		t.Errorf("snapshot without a descriptor: %+v, want a refusal for want of one", r)
	}
	// none left at all: the server cannot take the request, which ftrace live says at
	// once (not after its 10 s), and takes it once one is free
	os.WriteFile(filepath.Join(dir, "fill"), nil, 0o644)
	for i := 0; i < 100; i++ {
		if ents, _ := os.ReadDir("/proc/" + pid + "/fd"); len(ents) >= 25 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	if r := live("status"); r.Code == 0 || !strings.Contains(r.Stderr, "has all the 25 descriptors its limit allows open") ||
		time.Since(t0) > 5*time.Second {
		t.Errorf("status with no descriptor left: %+v after %v, want a refusal for want of one within 5 s", r, time.Since(t0))
	}
	os.WriteFile(filepath.Join(dir, "free"), nil, 0o644)
	var r testenv.Result
	for i := 0; i < 50; i++ {
		if r = live("filter", "work"); r.Code == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.Code != 0 {
		t.Errorf("filter work once descriptors were freed: %+v", r)
	}
	if r := live("snapshot", "s.dat"); r.Code != 0 {
		t.Errorf("snapshot once descriptors were freed: %+v", r)
	}
	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record: %v", err)
	}
	if _, calls := reportCalls(t, dir, "t.dat"); calls["work"] == 0 {
		t.Errorf("calls %v: work not recorded", calls)
	}
}

// ftrace args -A says when a spec's arg1 is not the function's first parameter: on x86-64
// a function returning its value in memory (a std::string) gets the result's address
// first (the yaml-cpp trial's -A 'greet@arg1/S' printed <bad>).
func TestArgsHiddenResultNote(t *testing.T) {
	dir := t.TempDir()
	prog := buildTracedWith(t, "g++", ".cc", dir, "greet", `#include <cstdio>
#include <string>
__attribute__((noinline)) std::string greet(const std::string &who, int n) { return "hi " + who + " #" + std::to_string(n); }
__attribute__((noinline)) int plain(int n) { return n + 1; }
int main() { std::printf("%s %d\n", greet("Alice", 42).c_str(), plain(1)); }
`)
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct {
		spec string
		note bool
	}{{"greet@arg1/S", true}, {"greet@arg2/S", false}, {"plain@arg1", false}} {
		out := testenv.Run(t, dir, ftrace, "args", "-A", c.spec, prog)
		if got := strings.Contains(out, "note: it returns its value in memory: arg1 (%rdi) is the address of the result"); got != c.note {
			t.Errorf("ftrace args -A %s: note %v, want %v:\n%s", c.spec, got, c.note, out)
		}
	}
}

// The same with programs that exec themselves: each exec'd image's trace is named after
// its process, <output>.<pid>.exec1 beside <output>.<pid> (the make trial: ftrace.dat.exec1
// was another process's than ftrace.dat, and ftrace.dat.exec1.<pid> read as its exec).
func TestRecordWrapperExecNames(t *testing.T) {
	testenv.Need(t, "sh")
	dir := t.TempDir()
	prog := buildTraced(t, dir, "selfexec", `#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) int work(int n) { return n * 3; }
int main(int argc, char **argv)
{
	printf("%d %s %d\n", (int)getpid(), argc > 1 ? argv[1] : "-", work(15));
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "again"))
		execl("/proc/self/exe", argv[0], "done", (char *)0);
	return 0;
}
`)
	ftrace := testenv.Tool(t, "ftrace")
	r := testenv.Exec(t, dir, ftrace, "record", "-q", "-o", "x.dat", "--", "sh", "-c", prog+" again; "+prog+" again; "+prog)
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
	// the images each process ran, by pid, from the program's own output
	images := map[string]int{}
	var last string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		f := strings.Fields(l)
		images[f[0]]++
		last = f[0]
	}
	want := map[string]string{filepath.Join(dir, "x.dat"): last}
	for pid, n := range images {
		if pid == last {
			continue
		}
		want[filepath.Join(dir, "x.dat."+pid)] = pid
		if n == 2 {
			want[filepath.Join(dir, "x.dat."+pid+".exec1")] = pid
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "x.dat*"))
	if len(names) != len(want) || len(want) != 5 {
		t.Errorf("traces %v, want %v", names, want)
	}
	for _, n := range names {
		m := regexp.MustCompile(`(?m)^pid: +([0-9]+)`).FindStringSubmatch(testenv.Run(t, dir, ftrace, "info", n))
		if m == nil || want[n] != m[1] {
			t.Errorf("%s: the trace of pid %v, want %s", n, m, want[n])
		}
	}
}
