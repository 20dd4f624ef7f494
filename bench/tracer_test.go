package bench_test

// tracer_*: recording cost per call of ftkit's tracers against uftrace and LLVM XRay FDR
// on the same workloads (bench/tracer/tracer_bench.c), and the overhead of the runtime
// linked in with tracing off. Every figure is the median of several runs of the measured
// loop (the program times it itself; start-up and write-out excluded), all in one run.
// Run: go test ./bench -run '^$' -bench Tracer -benchtime 1x   (figures in RESULTS.md)

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

type trBenchProgs struct {
	plain, ftkit, uftrace, clangPlain, xray string
}

// gcc flags of every gcc build.
var trGCC = []string{"-O2"}

func trBenchBuild(t testing.TB, withOthers bool) trBenchProgs {
	t.Helper()
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(testenv.Root(), "bench", "tracer", "tracer_bench.c")
	run := func(name string, args ...string) {
		t.Helper()
		if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
	}
	var p trBenchProgs
	p.plain = filepath.Join(dir, "plain")
	run("gcc", append(append([]string{}, trGCC...), src, "-o", p.plain)...)

	lib, inc := testenv.Runtime(t)
	obj := filepath.Join(dir, "ftkit.o")
	p.ftkit = filepath.Join(dir, "ftkit")
	run("gcc", append(append([]string{}, trGCC...), "-pg", "-mfentry", "-I", inc, "-c", src, "-o", obj)...)
	run(testenv.Tool(t, "recordmcount"), obj)
	run("gcc", obj, "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", p.ftkit)
	run(testenv.Tool(t, "ftlink"), p.ftkit)
	if !withOthers {
		return p
	}
	testenv.Need(t, "uftrace", "clang")
	p.uftrace = filepath.Join(dir, "uftrace")
	run("gcc", append(append([]string{}, trGCC...), "-pg", src, "-o", p.uftrace)...)
	p.clangPlain = filepath.Join(dir, "clang-plain")
	run("clang", "-O2", src, "-o", p.clangPlain)
	p.xray = filepath.Join(dir, "xray")
	run("clang", "-O2", "-DBENCH_XRAY", "-fxray-instrument", "-fxray-instruction-threshold=1", src, "-o", p.xray)
	return p
}

type trResult struct{ calls, ns float64 }

// trBenchRun runs argv (with env additions) in a fresh directory and parses
// "calls C ns N check X"; it returns the check value too.
func trBenchRun(t testing.TB, env []string, argv ...string) (trResult, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && f[0] == "calls" && f[2] == "ns" && f[4] == "check" {
			c, err1 := strconv.ParseFloat(f[1], 64)
			n, err2 := strconv.ParseFloat(f[3], 64)
			if err1 == nil && err2 == nil {
				return trResult{c, n}, f[5]
			}
		}
	}
	t.Fatalf("%s: no result line in:\n%s", strings.Join(argv, " "), b)
	return trResult{}, ""
}

// trMedian runs a variant reps times and returns the median loop time.
func trMedian(t testing.TB, reps int, env []string, argv ...string) trResult {
	t.Helper()
	var ns []float64
	var r trResult
	for i := 0; i < reps; i++ {
		r, _ = trBenchRun(t, env, argv...)
		ns = append(ns, r.ns)
	}
	sort.Float64s(ns)
	r.ns = ns[len(ns)/2]
	return r
}

func trXRayEnv(dir string) []string {
	return []string{"XRAY_OPTIONS=xray_logfile_base=" + dir + "/xray-log.",
		"BENCH_XRAY_FDR=buffer_size=1048576:buffer_max=512:func_duration_threshold_us=0"}
}

// trXRayRecorded runs the XRay build once more and counts the function entries and
// exits (plain and tail) its FDR log holds (llvm-xray convert, streamed).
func trXRayRecorded(t testing.TB, prog string, argv []string) (enters, exits int) {
	t.Helper()
	testenv.Need(t, "llvm-xray")
	dir := t.TempDir()
	trBenchRun(t, trXRayEnv(dir), argv...)
	logs, _ := filepath.Glob(filepath.Join(dir, "xray-log.*"))
	if len(logs) != 1 {
		t.Fatalf("XRay logs %v", logs)
	}
	cmd := exec.Command("llvm-xray", "convert", "-instr_map="+prog, "-output-format=yaml", logs[0])
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("llvm-xray convert: %v", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, "kind: function-enter"):
			enters++
		case strings.Contains(l, "kind: function-exit"), strings.Contains(l, "kind: function-tail-exit"):
			exits++
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("llvm-xray convert: %v", err)
	}
	return enters, exits
}

var trEnvOff = []string{"FTRACE_TRACER=", "FTRACE_CONTROL=0"}

func trEnv(tracer string) []string {
	return []string{"FTRACE_TRACER=" + tracer, "FTRACE_NO_LOSS=1", "FTRACE_CONTROL=0"}
}

// TestTracerBenchRuns checks that every variant of the benchmark builds, runs and computes
// the same result (no timing asserted).
func TestTracerBenchRuns(t *testing.T) {
	p := trBenchBuild(t, false)
	for _, w := range [][]string{{"fib", "15", "2"}, {"msort", "1000", "2"}} {
		_, want := trBenchRun(t, nil, append([]string{p.plain}, w...)...)
		for _, env := range [][]string{trEnvOff, trEnv("function"), trEnv("function_graph")} {
			if _, got := trBenchRun(t, env, append([]string{p.ftkit}, w...)...); got != want {
				t.Errorf("%v %v: check %s, want %s", w, env, got, want)
			}
		}
	}
	if r, _ := trBenchRun(t, nil, p.plain, "tsc2", "1000", "3"); r.calls != 3000 || r.ns <= 0 {
		t.Errorf("tsc2 1000 3: %+v, want 3000 pairs in a positive time", r)
	}
}

// BenchmarkTracer reports, per workload: ns per call plain; disabled/plain ratio; the
// recording cost per call (traced − plain) of ftkit function and function_graph, uftrace
// record and XRay FDR; the ratios function_graph/uftrace and function_graph/XRay; and the
// cost of two back-to-back TSC reads against uftrace's per-call cost (the floor of the first
// ratio on this machine).
func BenchmarkTracer(b *testing.B) {
	p := trBenchBuild(b, true)
	const reps = 5
	// Two TSC reads (one at entry, one at exit) are the least a graph tracer pays per call:
	// "tsc_pair/uftrace" is the lowest graph/uftrace ratio this machine allows.
	tsc := trMedian(b, reps, nil, p.plain, "tsc2", "10000000", "1")
	tscPair := tsc.ns / tsc.calls
	for _, w := range []struct {
		name string
		args []string
	}{
		// One top-level call each: XRay FDR keeps the records of only one of several
		// top-level calls of a function (fib 22 x20 left 57k of 1.15M calls in its log),
		// which made it look cheap; with one call it records every call (checked below).
		{"fib", []string{"fib", "28", "1"}},         // 1.03M calls of a tiny function
		{"msort", []string{"msort", "400000", "1"}}, // 1.2M calls, ~30 ns bodies
	} {
		b.Run(w.name, func(b *testing.B) {
			arg := func(prog string) []string { return append([]string{prog}, w.args...) }
			// plain and disabled alternate, 3x the runs: their ratio is the fine one
			var plains, offs []float64
			var plain, off trResult
			for i := 0; i < 3*reps; i++ {
				plain, _ = trBenchRun(b, nil, arg(p.plain)...)
				off, _ = trBenchRun(b, trEnvOff, arg(p.ftkit)...)
				plains, offs = append(plains, plain.ns), append(offs, off.ns)
			}
			sort.Float64s(plains)
			sort.Float64s(offs)
			plain.ns, off.ns = plains[len(plains)/2], offs[len(offs)/2]
			fn := trMedian(b, reps, trEnv("function"), arg(p.ftkit)...)
			fg := trMedian(b, reps, trEnv("function_graph"), arg(p.ftkit)...)
			ufDir := b.TempDir()
			uf := trMedian(b, reps, nil, append([]string{"uftrace", "record", "-d", filepath.Join(ufDir, "uftrace.data")}, arg(p.uftrace)...)...)
			cplain := trMedian(b, reps, nil, arg(p.clangPlain)...)
			xr := trMedian(b, reps, trXRayEnv(b.TempDir()), arg(p.xray)...)
			// XRay's cost is per call it recorded: every call must be in its log (clang
			// may split or inline differently from gcc: it can record more calls).
			enters, exits := trXRayRecorded(b, p.xray, arg(p.xray))
			if float64(enters) < xr.calls || enters != exits {
				b.Fatalf("XRay FDR log: %d entries, %d exits for %.0f calls: not comparable", enters, exits, xr.calls)
			}
			xrCalls := trResult{calls: float64(enters)}

			per := func(r, base trResult) float64 { return (r.ns - base.ns) / r.calls }
			m := map[string]float64{
				"plain_ns/call":        plain.ns / plain.calls,
				"disabled/plain":       off.ns / plain.ns,
				"function_ns/call":     per(fn, plain),
				"graph_ns/call":        per(fg, plain),
				"uftrace_ns/call":      per(uf, plain),
				"xray_fdr_ns/call":     (xr.ns - cplain.ns) / xrCalls.calls,
				"xray_recorded/calls":  xrCalls.calls / xr.calls,
				"graph/uftrace":        per(fg, plain) / per(uf, plain),
				"graph/xray_fdr":       per(fg, plain) / ((xr.ns - cplain.ns) / xrCalls.calls),
				"function/graph_ratio": per(fn, plain) / per(fg, plain),
				"tsc_pair_ns":          tscPair,
				"tsc_pair/uftrace":     tscPair / per(uf, plain),
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var sb strings.Builder
			for _, k := range keys {
				b.ReportMetric(m[k], k)
				fmt.Fprintf(&sb, "  %-22s %8.3f\n", k, m[k])
			}
			b.Logf("%s (%.0f calls, median of %d):\n%s", w.name, plain.calls, reps, sb.String())
		})
	}
}

// trCPU runs argv (with env additions) in a fresh directory and returns the CPU time
// (user + system) the process took, whole, start-up and write-out included.
func trCPU(t testing.TB, env []string, argv ...string) time.Duration {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, b)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkTracerStartup reports what tracing adds to the CPU time of a short process
// (fib(10) once: 177 calls), the fixed cost a test suite running thousands of traced
// processes pays for each: plain, runtime linked but off, function and function_graph,
// each the median of alternating runs, as ms per process and as ratios to plain.
func BenchmarkTracerStartup(b *testing.B) {
	p := trBenchBuild(b, false)
	const runs = 41
	argv := []string{"fib", "10", "1"}
	variants := []struct {
		name string
		prog string
		env  []string
	}{
		{"plain", p.plain, nil},
		{"disabled", p.ftkit, trEnvOff},
		{"function", p.ftkit, []string{"FTRACE_TRACER=function", "FTRACE_CONTROL=0"}},
		{"function_graph", p.ftkit, []string{"FTRACE_TRACER=function_graph", "FTRACE_CONTROL=0"}},
		{"function_graph+control", p.ftkit, []string{"FTRACE_TRACER=function_graph"}},
	}
	cpu := make([][]float64, len(variants))
	for i := 0; i < runs; i++ {
		for j, v := range variants {
			d := trCPU(b, v.env, append([]string{v.prog}, argv...)...)
			cpu[j] = append(cpu[j], float64(d)/1e6)
		}
	}
	med := make([]float64, len(variants))
	for j := range variants {
		sort.Float64s(cpu[j])
		med[j] = cpu[j][runs/2]
	}
	var sb strings.Builder
	for j, v := range variants {
		b.ReportMetric(med[j], v.name+"_ms")
		if j > 0 {
			b.ReportMetric(med[j]-med[0], v.name+"_extra_ms")
			b.ReportMetric(med[j]/med[0], v.name+"/plain")
		}
		fmt.Fprintf(&sb, "  %-24s %6.3f ms  +%6.3f ms  %5.2fx plain\n", v.name, med[j], med[j]-med[0], med[j]/med[0])
	}
	b.Logf("CPU time per process (median of %d):\n%s", runs, sb.String())
}

// BenchmarkTracerGraphFilters reports what the graph tracer's record-time filters cost per
// call on fib (3.9M calls), fused (the default) against the generic path (FTRT_GRAPH_FUSED=0)
// in the same run, alternating: a time filter most calls are shorter than (-t 1us), a depth
// limit no call reaches, and graph_function on fib (every call inside its subtree). Each
// figure is the best of alternating runs minus plain's best (a shared machine's load only
// adds), ratios to the unfiltered graph tracer. The flight recorder keeps the writer thread
// out of the figures.
func BenchmarkTracerGraphFilters(b *testing.B) {
	p := trBenchBuild(b, false)
	const reps = 15
	work := []string{"fib", "26", "10"}
	argv := append([]string{p.ftkit}, work...)
	base := append(trEnv("function_graph"), "FTRACE_RING=4M")
	variants := []struct {
		name string
		env  []string
	}{
		{"graph", nil},
		{"time_filter", []string{"FTRACE_TIME_FILTER=1us"}},
		{"depth", []string{"FTRACE_GRAPH_DEPTH=1000"}},
		{"graph_function", []string{"FTRACE_GRAPH_FUNCTION=fib"}},
	}
	ns := make([][2][]float64, len(variants))
	var plains []float64
	var calls float64
	for i := 0; i < reps; i++ {
		r, _ := trBenchRun(b, nil, append([]string{p.plain}, work...)...)
		plains, calls = append(plains, r.ns), r.calls
		for j, v := range variants {
			for k, gen := range [][]string{nil, {"FTRT_GRAPH_FUSED=0"}} {
				r, _ := trBenchRun(b, append(append(append([]string{}, base...), v.env...), gen...), argv...)
				ns[j][k] = append(ns[j][k], r.ns)
			}
		}
	}
	best := func(v []float64) float64 {
		sort.Float64s(v)
		return v[0]
	}
	plain := best(plains)
	per := func(v []float64) float64 { return (best(v) - plain) / calls }
	graph := per(ns[0][0])
	var sb strings.Builder
	for j, v := range variants {
		fused, generic := per(ns[j][0]), per(ns[j][1])
		b.ReportMetric(fused, v.name+"_ns/call")
		b.ReportMetric(fused/generic, v.name+"_fused/generic")
		b.ReportMetric(fused/graph, v.name+"/graph")
		fmt.Fprintf(&sb, "  %-15s fused %6.1f ns  generic %6.1f ns  fused/generic %.3f  /graph %.3f\n",
			v.name, fused, generic, fused/generic, fused/graph)
	}
	b.Logf("fib 26 x10 (%.0f calls), best of %d:\n%s", calls, reps, sb.String())
}
