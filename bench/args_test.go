package bench_test

// args: what recording arguments and return values costs the graph and function tracers
// per call (issue 16): fib built with -g, every function's arguments and return value
// from its DWARF (what ftrace record --auto-args asks for), against the same tracer
// without them, in one run. Run:
//   go test ./bench -run '^$' -bench TracerArgs -benchtime 1x -v   (figures in RESULTS.md)

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/fnargs"
	"github.com/ftkit/ftkit/internal/testenv"
)

func BenchmarkTracerArgs(b *testing.B) {
	testenv.Need(b, "gcc")
	dir := b.TempDir()
	src := filepath.Join(testenv.Root(), "bench", "tracer", "tracer_bench.c")
	lib, inc := testenv.Runtime(b)
	obj, prog, plain := filepath.Join(dir, "fib.o"), filepath.Join(dir, "fib"), filepath.Join(dir, "plain")
	testenv.Run(b, dir, "gcc", "-O2", "-g", src, "-o", plain)
	testenv.Run(b, dir, "gcc", "-O2", "-g", "-pg", "-mfentry", "-I", inc, "-c", src, "-o", obj)
	testenv.Run(b, dir, testenv.Tool(b, "recordmcount"), obj)
	testenv.Run(b, dir, "gcc", obj, "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", prog)
	testenv.Run(b, dir, testenv.Tool(b, "ftlink"), prog)
	tab, err := fnargs.Load(prog)
	if err != nil {
		b.Fatal(err)
	}
	args, rets, _ := tab.RuntimeSpecs(nil)
	if !strings.Contains(args, "fib@") {
		b.Fatalf("no plan for fib in:\n%s", args)
	}
	specs := []string{"FTRACE_ARGS=" + strings.ReplaceAll(strings.TrimSpace(args), "\n", ";"),
		"FTRACE_RETVAL=" + strings.ReplaceAll(strings.TrimSpace(rets), "\n", ";")}
	const reps = 5
	argv := []string{"fib", "28", "1"}
	base := trMedian(b, reps, nil, append([]string{plain}, argv...)...)
	per := func(r trResult) float64 { return (r.ns - base.ns) / r.calls }
	m := map[string]float64{}
	for _, tracer := range []string{"function_graph", "function"} {
		// alternating runs (the machine's speed drifts): the medians of each
		var wo, wi []float64
		for i := 0; i < 2*reps+1; i++ {
			r, _ := trBenchRun(b, trEnv(tracer), append([]string{prog}, argv...)...)
			wo = append(wo, per(r))
			r, _ = trBenchRun(b, append(trEnv(tracer), specs...), append([]string{prog}, argv...)...)
			wi = append(wi, per(r))
		}
		sort.Float64s(wo)
		sort.Float64s(wi)
		without, with := wo[reps], wi[reps]
		m[tracer+"_ns/call"] = without
		m[tracer+"_args_ns/call"] = with
		m[tracer+"_args/without"] = with / without
	}
	for k, v := range m {
		b.ReportMetric(v, k)
	}
	b.Logf("fib(28), %d alternating runs each, median: %v", 2*reps+1, m)
}
