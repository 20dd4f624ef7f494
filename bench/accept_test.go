package bench_test

// Acceptance benchmarks of issue 12 (trace format v2, streaming writer, flight recorder):
//
//   BenchmarkAcceptGraphLong: fib recorded with function_graph for ~10 s with no buffer
//   limit and FTRACE_NO_LOSS=1: no event lost, and the per-call cost of the long run within
//   1.3x of a short run's (fib(n) once, the largest n taking at most ~0.6 s traced; the long
//   run repeats it) — same binary, runs alternating within one benchmark.
//   go test ./bench -run '^$' -bench AcceptGraphLong -benchtime 1x -v
//   (FTKIT_ACC_LONG_S: seconds of the long run, default 10; FTKIT_ACC_ROUNDS: rounds, 3)
//
//   BenchmarkAcceptFlight: a deterministic two-thread program run for ~60 s with
//   `ftrace record --ring 64M`, and once more, the same work, with `ftrace record
//   --no-loss` (full stream); every complete call tree of the ring trace must be in the full
//   trace, identical, at the same place, and the ring must hold the last trees of each thread.
//   go test ./bench -run '^$' -bench AcceptFlight -benchtime 1x -v
//   (FTKIT_ACC_FLIGHT_S: seconds, default 60; FTKIT_ACC_RING: ring size, default 64M)
//
//   TestAcceptFlightShort: the same check on a ~2 s run with a 512 KiB ring (skipped with
//   -short).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// accBuild builds a C source of bench/tracer through the ftkit flow (gcc -pg -mfentry,
// recordmcount, link with libftrt.a, ftlink).
func accBuild(t testing.TB, src string, cflags ...string) string {
	t.Helper()
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	lib, inc := testenv.Runtime(t)
	obj := filepath.Join(dir, "prog.o")
	prog := filepath.Join(dir, strings.TrimSuffix(src, ".c"))
	run := func(name string, args ...string) {
		t.Helper()
		if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
	}
	args := append([]string{"-O2", "-pg", "-mfentry", "-I", inc}, cflags...)
	run("gcc", append(args, "-c", filepath.Join(testenv.Root(), "bench", "tracer", src), "-o", obj)...)
	run(testenv.Tool(t, "recordmcount"), obj)
	run("gcc", obj, "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", prog)
	run(testenv.Tool(t, "ftlink"), prog)
	return prog
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// freeBytes is the space available to an unprivileged user under dir.
func freeBytes(t testing.TB, dir string) uint64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return st.Bavail * uint64(st.Bsize)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fibCalls is the number of calls fib(n) makes: 2 fib(n+1) - 1.
func fibCalls(n int) float64 {
	a, b := 0.0, 1.0
	for i := 0; i < n+1; i++ {
		a, b = b, a+b
	}
	return 2*a - 1
}

// fibRun is one run of tracer_bench fib.
type fibRun struct {
	calls, loopNS, wallNS float64
	trace                 traceCounts
}

// accFib runs `prog fib N REPS` with env added; when traced, the trace goes to out and is
// scanned, checked for losses and removed.
func accFib(t testing.TB, prog string, env []string, out string, n, reps int, extraCalls uint64) fibRun {
	t.Helper()
	cmd := exec.Command(prog, "fib", strconv.Itoa(n), strconv.Itoa(reps))
	cmd.Dir = filepath.Dir(out)
	cmd.Env = append(append(os.Environ(), env...), "FTRACE_OUTPUT="+out)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%s fib %d %d: %v\n%s", prog, n, reps, err, b)
	}
	var r fibRun
	var check string
	if _, err := fmt.Sscanf(string(b), "calls %g ns %g check %s", &r.calls, &r.loopNS, &check); err != nil {
		t.Fatalf("%s fib %d %d: output %q: %v", prog, n, reps, b, err)
	}
	r.wallNS = float64(wall.Nanoseconds())
	if _, err := os.Stat(out); err != nil {
		return r // untraced
	}
	defer os.Remove(out)
	c, err := scanTrace(out)
	if err != nil {
		t.Fatal(err)
	}
	r.trace = c
	// Every call of fib and of the few other traced functions (main, now_ns) entered and
	// returned, nothing lost, no block missing, the file finalised.
	want := uint64(r.calls) + extraCalls
	if c.Lost() != 0 || c.Flags&8 != 0 || c.MissingBlocks != 0 || c.Entries != want || c.Exits != want ||
		c.Unwound != 0 || c.Flags&1 == 0 || c.Ring {
		t.Errorf("fib %d x%d, %v: trace %+v; want %d entries and exits, nothing lost or missing, complete, streaming", n, reps, env, c, want)
	}
	return r
}

// accExtraCalls counts the traced calls of a fib run that are not calls of fib, with the
// reader of cmd/ftrace (`ftrace dump`) on a small run.
func accExtraCalls(t testing.TB, prog string) uint64 {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "small.dat")
	cmd := exec.Command(prog, "fib", "10", "1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function_graph", "FTRACE_NO_LOSS=1", "FTRACE_CONTROL=0", "FTRACE_OUTPUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", prog, err, b)
	}
	dump, err := exec.Command(testenv.Tool(t, "ftrace"), "dump", out).Output()
	if err != nil {
		t.Fatalf("ftrace dump: %v", err)
	}
	var extra, fib uint64
	for _, l := range strings.Split(string(dump), "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[2] == "entry" {
			if f[5] == "fib" {
				fib++
			} else {
				extra++
			}
		}
	}
	if fib != 177 { // calls of fib(10)
		t.Fatalf("ftrace dump of fib 10: %d entries of fib, want 177", fib)
	}
	return extra
}

// accInfo runs `ftrace info` and returns its events and lost-events figures.
func accInfo(t testing.TB, path string) (events, lost uint64) {
	t.Helper()
	b, err := exec.Command(testenv.Tool(t, "ftrace"), "info", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ftrace info %s: %v\n%s", path, err, b)
	}
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "events:"):
			fmt.Sscan(strings.TrimPrefix(l, "events:"), &events)
		case strings.HasPrefix(l, "lost events:"):
			fmt.Sscan(strings.TrimPrefix(l, "lost events:"), &lost)
		}
	}
	return events, lost
}

// TestTraceScanAgrees checks the counting reader against `ftrace info` on a fib trace and
// on a flight-recorder trace.
func TestTraceScanAgrees(t *testing.T) {
	prog := accBuild(t, "tracer_bench.c")
	dir := t.TempDir()
	for _, env := range [][]string{
		{"FTRACE_TRACER=function_graph", "FTRACE_NO_LOSS=1", "FTRACE_CONTROL=0"},
		{"FTRACE_TRACER=function", "FTRACE_NO_LOSS=1", "FTRACE_CONTROL=0"},
		{"FTRACE_TRACER=function_graph", "FTRACE_RING=512K", "FTRACE_CONTROL=0"},
	} {
		out := filepath.Join(dir, "t.dat")
		cmd := exec.Command(prog, "fib", "24", "1")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), env...), "FTRACE_OUTPUT="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", env, err, b)
		}
		c, err := scanTrace(out)
		if err != nil {
			t.Fatal(err)
		}
		events, lost := accInfo(t, out)
		// the calls a ring's first block lists as open are no events of the file: info
		// counts them no more than record's summary does (the bzip2 trial: 9 apart)
		if c.Events() != events || c.Lost() != lost || c.Flags&1 == 0 {
			t.Errorf("%v: scan %+v (%d events, %d lost), ftrace info %d events, %d lost", env, c, c.Events(), c.Lost(), events, lost)
		}
		ring := strings.HasPrefix(env[1], "FTRACE_RING")
		if c.Ring != ring || (ring && (c.RingBytes != 512<<10 || c.Events() >= 2*150049)) || (!ring && c.FirstDepth != 0) {
			t.Errorf("%v: ring %v of %d bytes, %d events (fib 24: 150049 calls)", env, c.Ring, c.RingBytes, c.Events())
		}
		os.Remove(out)
	}
}

// BenchmarkAcceptGraphLong: see the top of the file.
func BenchmarkAcceptGraphLong(b *testing.B) {
	prog := accBuild(b, "tracer_bench.c")
	extra := accExtraCalls(b, prog)
	dir := b.TempDir()
	out := filepath.Join(dir, "fib.dat")
	off := []string{"FTRACE_TRACER=", "FTRACE_CONTROL=0"}
	graph := []string{"FTRACE_TRACER=function_graph", "FTRACE_NO_LOSS=1", "FTRACE_CONTROL=0"}
	longS := envInt("FTKIT_ACC_LONG_S", 10)
	rounds := envInt("FTKIT_ACC_ROUNDS", 3)
	const shortPairs = 3

	// The short run: the largest fib(n) that takes at most ~0.6 s traced (probed on fib 27).
	probe := accFib(b, prog, graph, out, 27, 1, extra)
	perCall := probe.loopNS / probe.calls
	n := 27
	for fibCalls(n+1)*perCall <= 0.6e9 && n < 40 {
		n++
	}

	// The short run sets the long run's repetitions and the disk it needs.
	warm := accFib(b, prog, graph, out, n, 1, extra)
	reps := int(math.Round(float64(longS) * 1e9 / warm.loopNS))
	bytesPerRep := float64(warm.trace.Bytes)
	free := freeBytes(b, dir)
	if need := 1.2 * bytesPerRep * float64(reps); need > float64(free) {
		scaled := int(float64(free) / (1.2 * bytesPerRep))
		b.Logf("only %d MB free under %s: the long run needs %.0f MB; scaled down from %d to %d repetitions", free>>20, dir, need/1e6, reps, scaled)
		reps = scaled
	}
	if reps < 2 {
		b.Fatalf("no room for a long run (%d MB free)", free>>20)
	}
	b.Logf("short: fib %d x1 (%.0f calls, %.2f s traced, %.0f MB); long: x%d (%.0f M calls, ~%.0f MB)",
		n, warm.calls, warm.loopNS/1e9, bytesPerRep/1e6, reps, warm.calls*float64(reps)/1e6, bytesPerRep*float64(reps)/1e6)

	var shortCost, longCost, ratios, wallRatios []float64
	var longRun fibRun
	for r := 0; r < rounds; r++ {
		// Short runs are cheap and noisier (a slice of scheduling matters more): three
		// untraced/traced pairs per round, their median against the round's long pair.
		var scs, sws []float64
		var st fibRun
		for k := 0; k < shortPairs; k++ {
			so := accFib(b, prog, off, out, n, 1, extra)
			st = accFib(b, prog, graph, out, n, 1, extra)
			scs = append(scs, (st.loopNS-so.loopNS)/st.calls)
			sws = append(sws, (st.wallNS-so.wallNS)/st.calls)
		}
		lo := accFib(b, prog, off, out, n, reps, extra)
		lt := accFib(b, prog, graph, out, n, reps, extra)
		sc, lc := median(scs), (lt.loopNS-lo.loopNS)/lt.calls
		sw, lw := median(sws), (lt.wallNS-lo.wallNS)/lt.calls
		shortCost, longCost = append(shortCost, sc), append(longCost, lc)
		ratios, wallRatios = append(ratios, lc/sc), append(wallRatios, lw/sw)
		b.Logf("round %d: short %.1f ns/call (median of %d; last %.2f s), long %.1f ns/call (%.2f s, %d MB, %d events, 0 lost): long/short %.3f; whole process %.3f",
			r+1, sc, shortPairs, st.loopNS/1e9, lc, lt.loopNS/1e9, lt.trace.Bytes>>20, lt.trace.Events(), lc/sc, lw/sw)
		longRun = lt
	}
	ratio := median(ratios)
	b.ReportMetric(median(shortCost), "short_ns/call")
	b.ReportMetric(median(longCost), "long_ns/call")
	b.ReportMetric(ratio, "long/short")
	b.ReportMetric(median(wallRatios), "wall_long/short")
	b.ReportMetric(longRun.loopNS/1e9, "long_s")
	b.ReportMetric(float64(longRun.trace.Events()), "long_events")
	b.ReportMetric(0, "lost") // accFib failed the benchmark otherwise
	b.Logf("median over %d rounds: short %.1f, long %.1f ns/call, long/short %.3f (target <= 1.3), whole process %.3f",
		rounds, median(shortCost), median(longCost), ratio, median(wallRatios))
	if ratio > 1.3 {
		b.Errorf("per-call cost of the long run is %.3fx the short run's: target 1.3x not met", ratio)
	}
}

// --- flight recorder ---

// accTree is one call tree of step() in a dump: its tokens (name id << 2 | kind, kind 0
// entry, 1 exit, 2 unwound exit) and, when it starts with a whole tag() call, the thread
// index and iteration the tag spells.
type accTree struct {
	tok    []uint32
	tagged bool
	t, i   int
	start  uint64 // ns since the trace start, of the step entry
	end    uint64
}

// accDumpReader turns `ftrace dump` output into step trees, thread by thread.
type accDumpReader struct {
	names map[string]uint32
	list  []string
}

func (d *accDumpReader) id(name []byte) uint32 {
	if id, ok := d.names[string(name)]; ok {
		return id
	}
	id := uint32(len(d.list))
	d.names[string(name)] = id
	d.list = append(d.list, string(name))
	return id
}

func (d *accDumpReader) tokString(tok []uint32) string {
	var sb strings.Builder
	for _, k := range tok {
		sb.WriteString([]string{"+", "-", "~"}[k&3] + d.list[k>>2] + " ")
	}
	return sb.String()
}

// accThreadSpan is what one thread's dump stream held besides its trees.
type accThreadSpan struct {
	first, last uint64 // times of its first and last event
	trees       int
	unfinished  int // a step tree still open at the end of the stream
}

// read runs `ftrace dump path` and calls tree for each step tree of each thread, in order;
// it checks that each exit names the frame it closes and that depths nest.
func (d *accDumpReader) read(t testing.TB, path string, tree func(tid int, tr *accTree)) map[int]*accThreadSpan {
	t.Helper()
	cmd := exec.Command(testenv.Tool(t, "ftrace"), "dump", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	step := d.id([]byte("step"))
	tagID, bit0, bit1 := d.id([]byte("tag")), d.id([]byte("bit0")), d.id([]byte("bit1"))
	spans := map[int]*accThreadSpan{}
	var stack []uint32 // open frames of the current thread (names)
	var cur *accTree
	curTid := -1
	rootDepth := 0
	finishThread := func() {
		if cur != nil {
			spans[curTid].unfinished++
			cur = nil
		}
		stack = stack[:0]
	}
	r := bufio.NewReaderSize(pipe, 1<<20)
	var f [8][]byte
	line := 0
	for {
		l, err := r.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ftrace dump %s: %v", path, err)
		}
		line++
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		nf := 0
		for _, w := range bytes.Fields(l) {
			if nf < len(f) {
				f[nf] = w
			}
			nf++
		}
		if nf < 6 {
			t.Fatalf("%s: dump line %d: %q", path, line, l)
		}
		ts, _ := strconv.ParseUint(string(f[0]), 10, 64)
		tid, _ := strconv.Atoi(string(f[1]))
		depth, _ := strconv.Atoi(string(f[3]))
		if tid != curTid {
			if curTid >= 0 {
				finishThread()
			}
			if spans[tid] != nil {
				t.Fatalf("%s: thread %d's events are not together", path, tid)
			}
			spans[tid] = &accThreadSpan{first: ts}
			curTid = tid
		}
		sp := spans[tid]
		sp.last = ts
		name := d.id(f[5])
		kind := uint32(0)
		switch string(f[2]) {
		case "entry":
			if depth != len(stack) {
				t.Fatalf("%s: line %d: entry at depth %d with %d frames open: %q", path, line, depth, len(stack), l)
			}
			stack = append(stack, name)
			if name == step && cur == nil {
				cur = &accTree{start: ts}
				rootDepth = depth
			}
		case "exit":
			kind = 1
			if nf > 6 && string(f[6]) == "(unwound)" {
				kind = 2
			}
			if len(stack) == 0 || stack[len(stack)-1] != name || depth != len(stack)-1 {
				t.Fatalf("%s: line %d: exit of %s at depth %d, open frames %v", path, line, f[5], depth, len(stack))
			}
			stack = stack[:len(stack)-1]
		default:
			t.Fatalf("%s: line %d: event kind %q in a function_graph trace", path, line, f[2])
		}
		if cur == nil {
			continue
		}
		cur.tok = append(cur.tok, name<<2|kind)
		if kind != 0 && depth == rootDepth {
			cur.end = ts
			// Tagged: step { tag { 28 x bit0/bit1 } ... } with the whole tag recorded.
			tk := cur.tok
			if len(tk) >= 2+56+1 && tk[0] == step<<2 && tk[1] == tagID<<2 && tk[2+56] == tagID<<2|1 {
				v, ok := 0, true
				for j := 0; j < 28 && ok; j++ {
					e, x := tk[2+2*j], tk[3+2*j]
					switch {
					case e == bit0<<2 && x == bit0<<2|1:
						v <<= 1
					case e == bit1<<2 && x == bit1<<2|1:
						v = v<<1 | 1
					default:
						ok = false
					}
				}
				if ok {
					cur.tagged, cur.t, cur.i = true, v>>24, v&0xffffff
				}
			}
			sp.trees++
			tree(tid, cur)
			cur = nil
		}
	}
	if curTid >= 0 {
		finishThread()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ftrace dump %s: %v\n%s", path, err, stderr.Bytes())
	}
	return spans
}

// accRecord runs `ftrace record FLAGS -o out -- prog ARGS` and returns the program's
// "ns" figure and the wall time of the whole command.
func accRecord(t testing.TB, out string, flags []string, prog string, args ...string) (progNS float64, wall time.Duration) {
	t.Helper()
	argv := append(append(append([]string{"record", "-q", "-o", out}, flags...), "--", prog), args...)
	cmd := exec.Command(testenv.Tool(t, "ftrace"), argv...)
	cmd.Dir = filepath.Dir(out)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	wall = time.Since(start)
	if err != nil {
		t.Fatalf("ftrace %s: %v\n%s", strings.Join(argv, " "), err, b)
	}
	var th, it int
	if _, err := fmt.Sscanf(string(b), "threads %d iters %d ns %g", &th, &it, &progNS); err != nil {
		t.Fatalf("ftrace %s: output %q: %v", strings.Join(argv, " "), b, err)
	}
	return progNS, wall
}

// accFlightResult is what accFlight measured.
type accFlightResult struct {
	iters                  int
	ringS, fullS           float64 // the program's wall time under each
	ringBytes, fullBytes   int64
	ringEvents, fullEvents uint64
	matched                int     // complete ring trees found identical in the full trace
	coveredS               float64 // least, over the threads, of the time the ring's trees span
	firstIter              int     // least, over the threads, of the first complete ring tree's iteration
	perThread              []string
}

// accFlight runs the flight-recorder check: flight THREADS ITERS SPIN with the ring for
// about seconds, then the same with a full stream, and compares the trees.
func accFlight(t testing.TB, seconds float64, ring string, threads, spin int) accFlightResult {
	t.Helper()
	prog := accBuild(t, "flight.c", "-fno-optimize-sibling-calls")
	dir := t.TempDir()
	ringOut, fullOut := filepath.Join(dir, "ring.dat"), filepath.Join(dir, "full.dat")
	ringFlags := []string{"--ring", ring}
	// Calibrate the iterations on ring runs of at least 1 s (the ring run is the timed one).
	iters0 := 100
	var ns0 float64
	for {
		ns0, _ = accRecord(t, ringOut, ringFlags, prog, strconv.Itoa(threads), strconv.Itoa(iters0), strconv.Itoa(spin))
		if ns0 >= 1e9 || ns0 >= seconds*1e9 || iters0 >= 0xffffff/4 {
			break
		}
		iters0 *= 4
	}
	iters := int(seconds * 1e9 / ns0 * float64(iters0))
	if iters > 0xffffff {
		iters = 0xffffff
	}
	if iters < 10 {
		iters = 10
	}
	c0, err := scanTrace(ringOut)
	if err != nil {
		t.Fatal(err)
	}
	if need := 2 * float64(c0.Bytes) / float64(iters0) * float64(iters); need > float64(freeBytes(t, dir)) {
		t.Fatalf("the full trace needs about %.0f MB, more than is free under %s", need/1e6, dir)
	}
	args := []string{strconv.Itoa(threads), strconv.Itoa(iters), strconv.Itoa(spin)}
	var res accFlightResult
	res.iters = iters
	ns, _ := accRecord(t, ringOut, ringFlags, prog, args...)
	res.ringS = ns / 1e9
	ns, _ = accRecord(t, fullOut, []string{"--no-loss"}, prog, args...)
	res.fullS = ns / 1e9

	rc, err := scanTrace(ringOut)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := scanTrace(fullOut)
	if err != nil {
		t.Fatal(err)
	}
	res.ringBytes, res.fullBytes, res.ringEvents, res.fullEvents = rc.Bytes, fc.Bytes, rc.Events(), fc.Events()
	if !rc.Ring || rc.Flags&1 == 0 || rc.MissingBlocks != 0 || rc.Lost() != 0 {
		t.Errorf("ring trace: %+v; want a complete flight-recorder trace with no gap inside", rc)
	}
	if fc.Ring || fc.Flags&1 == 0 || fc.MissingBlocks != 0 || fc.Lost() != 0 || fc.Flags&8 != 0 || fc.Entries != fc.Exits {
		t.Errorf("full trace: %+v; want a complete streaming trace, nothing lost", fc)
	}

	d := &accDumpReader{names: map[string]uint32{}}
	// The ring trace: per thread, at most one partial tree (the ring began inside it), at
	// its start, then complete trees of one thread index, consecutive iterations, the last
	// one ITERS-1.
	type ringThread struct {
		t, first, next int
		partial        int
		trees          map[int]*accTree
		startNS        uint64
	}
	rings := map[int]*ringThread{}
	ringSpans := d.read(t, ringOut, func(tid int, tr *accTree) {
		rt := rings[tid]
		if rt == nil {
			rt = &ringThread{t: -1, trees: map[int]*accTree{}}
			rings[tid] = rt
		}
		switch {
		case !tr.tagged && rt.t < 0 && rt.partial == 0:
			rt.partial++
		case !tr.tagged:
			t.Errorf("ring trace, thread %d: an untagged step tree after %d trees: %.200s", tid, len(rt.trees), d.tokString(tr.tok))
		case rt.t < 0:
			rt.t, rt.first, rt.next, rt.startNS = tr.t, tr.i, tr.i+1, tr.start
			rt.trees[tr.i] = tr
		case tr.t != rt.t || tr.i != rt.next:
			t.Errorf("ring trace, thread %d: tree (%d, %d) after (%d, %d)", tid, tr.t, tr.i, rt.t, rt.next-1)
		default:
			rt.trees[tr.i] = tr
			rt.next++
		}
	})
	if len(rings) != threads {
		t.Fatalf("ring trace: step trees on %d threads, want %d", len(rings), threads)
	}
	byIndex := map[int]*ringThread{}
	res.coveredS, res.firstIter = math.Inf(1), iters
	for tid, rt := range rings {
		if rt.t < 0 || rt.t >= threads || byIndex[rt.t] != nil {
			t.Fatalf("ring trace, thread %d: thread index %d (threads %d)", tid, rt.t, threads)
		}
		byIndex[rt.t] = rt
		if rt.next != iters {
			t.Errorf("ring trace, thread %d (index %d): last tree is iteration %d, want %d", tid, rt.t, rt.next-1, iters-1)
		}
		if sp := ringSpans[tid]; sp.unfinished != 0 {
			t.Errorf("ring trace, thread %d: %d step trees unfinished", tid, sp.unfinished)
		} else {
			cov := float64(sp.last-rt.startNS) / 1e9
			res.coveredS = math.Min(res.coveredS, cov)
			res.perThread = append(res.perThread, fmt.Sprintf("thread %d: %d trees (iterations %d-%d) over its last %.2f s, %d partial tree before them",
				rt.t, len(rt.trees), rt.first, rt.next-1, cov, rt.partial))
		}
		if rt.first < res.firstIter {
			res.firstIter = rt.first
		}
	}
	if res.firstIter == 0 {
		t.Errorf("ring trace holds iteration 0: the ring never wrapped (make the run longer or the ring smaller)")
	}

	// The full trace: every thread makes iterations 0 .. ITERS-1 in order, all tagged; those
	// the ring holds must be identical.
	next := map[int]int{}
	idx := map[int]int{}
	mismatched := 0
	fullSpans := d.read(t, fullOut, func(tid int, tr *accTree) {
		if !tr.tagged {
			t.Fatalf("full trace, thread %d: untagged step tree: %.300s", tid, d.tokString(tr.tok))
		}
		if _, ok := idx[tid]; !ok {
			idx[tid] = tr.t
		}
		if tr.t != idx[tid] || tr.i != next[tid] {
			t.Fatalf("full trace, thread %d: tree (%d, %d), want (%d, %d)", tid, tr.t, tr.i, idx[tid], next[tid])
		}
		next[tid]++
		rt := byIndex[tr.t]
		if rt == nil {
			return
		}
		if rtree := rt.trees[tr.i]; rtree != nil {
			if !equalTok(rtree.tok, tr.tok) {
				mismatched++
				if mismatched <= 3 {
					j := 0
					for j < len(rtree.tok) && j < len(tr.tok) && rtree.tok[j] == tr.tok[j] {
						j++
					}
					t.Errorf("thread index %d iteration %d: ring tree (%d events) differs from the full trace's (%d) at event %d:\n ring ... %.300s\n full ... %.300s",
						tr.t, tr.i, len(rtree.tok), len(tr.tok), j, d.tokString(rtree.tok[j:]), d.tokString(tr.tok[j:]))
				}
			} else {
				res.matched++
			}
		}
	})
	for tid, n := range next {
		if n != iters || fullSpans[tid].unfinished != 0 {
			t.Errorf("full trace, thread %d: %d trees (%d unfinished), want %d", tid, n, fullSpans[tid].unfinished, iters)
		}
	}
	if len(next) != threads {
		t.Errorf("full trace: step trees on %d threads, want %d", len(next), threads)
	}
	want := 0
	for _, rt := range byIndex {
		want += len(rt.trees)
	}
	if res.matched != want || mismatched != 0 {
		t.Errorf("%d of %d complete ring trees identical in the full trace, %d differ", res.matched, want, mismatched)
	}
	return res
}

func equalTok(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (r accFlightResult) String() string {
	return fmt.Sprintf("%d iterations per thread; ring run %.1f s, trace %.1f MB, %d events; full run %.1f s, trace %.1f MB, %d events; "+
		"ring: %s; %d trees compared with the full trace's, all identical",
		r.iters, r.ringS, float64(r.ringBytes)/1e6, r.ringEvents, r.fullS, float64(r.fullBytes)/1e6, r.fullEvents,
		strings.Join(r.perThread, "; "), r.matched)
}

// TestAcceptFlightShort: the flight-recorder check on a short run with a small ring.
func TestAcceptFlightShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds")
	}
	r := accFlight(t, 2, "512K", 2, 3000)
	t.Log(r)
}

// BenchmarkAcceptFlight: see the top of the file.
func BenchmarkAcceptFlight(b *testing.B) {
	ring := os.Getenv("FTKIT_ACC_RING")
	if ring == "" {
		ring = "64M"
	}
	secs := envInt("FTKIT_ACC_FLIGHT_S", 60)
	r := accFlight(b, float64(secs), ring, 2, envInt("FTKIT_ACC_SPIN", 2000))
	b.Logf("--ring %s, %d s: %v", ring, secs, r)
	b.ReportMetric(r.ringS, "ring_run_s")
	b.ReportMetric(r.coveredS, "covered_s")
	b.ReportMetric(float64(r.matched), "trees_identical")
	b.ReportMetric(float64(r.ringBytes)/1e6, "ring_MB")
	b.ReportMetric(float64(r.fullBytes)/1e6, "full_MB")
}
