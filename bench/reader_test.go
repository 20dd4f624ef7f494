package bench_test

// reader_*: how fast, and in how much memory, the ftrace command reads a big trace: a
// synthetic function_graph trace (cmd/ftrace/internal/tracegen: a few hundred functions
// calling each other to depth 24, 4 threads) of FTKIT_READER_EVENTS events (default
// 100M, ~600 MB at ~6 bytes per event). Each reading command runs once; wall time gives
// events per second, the kernel's max RSS the memory. Not timed tests: figures only.
// Run: go test ./bench -run '^$' -bench Reader -benchtime 1x   (figures in RESULTS.md)

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

func BenchmarkReader(b *testing.B) {
	events := envInt("FTKIT_READER_EVENTS", 100_000_000)
	dir := b.TempDir()
	trace := filepath.Join(dir, "big.dat")
	tracegen(b, dir, "-events", strconv.Itoa(events), "-threads", "4", "-o", trace)
	st, _ := os.Stat(trace)
	b.Logf("%d events, %d bytes (%.2f bytes/event)", events, st.Size(), float64(st.Size())/float64(events))
	ftrace := testenv.Tool(b, "ftrace")
	for _, cmd := range [][]string{
		{"info"}, {"report"}, {"report", "--per-thread"}, {"flame", "--folded", "-o", os.DevNull},
		{"pprof", "-o", filepath.Join(dir, "p.pb.gz")},
	} {
		name := strings.Join(cmd[:min(len(cmd), 2)], "_")
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c := exec.Command(ftrace, append(cmd, trace)...)
				c.Stdout, c.Stderr = nil, os.Stderr
				cpu0 := childrenCPU()
				start := time.Now()
				rss, err := testenv.PeakRSS(b, c, 0) // KiB
				if err != nil {
					b.Fatalf("ftrace %s: %v", strings.Join(cmd, " "), err)
				}
				wall := time.Since(start)
				cpu := childrenCPU() - cpu0 // ftrace's and, a few ms, PeakRSS's middleman's
				b.ReportMetric(float64(events)/wall.Seconds()/1e6, "Mevents/s")
				b.ReportMetric(float64(rss)/1024, "MB-maxRSS")
				b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
			}
		})
	}
}

// BenchmarkReaderManyTraces: the memory of reading the traces of one run together (a test
// suite's hundreds of processes) against reading one of them, same run: FTKIT_READER_TRACES
// traces (default 400) of FTKIT_READER_TRACE_EVENTS events each (default 200k, 2
// threads). Each trace is folded into the output as it is read, so the ratio stays near 1
// whatever the number of traces (before, pprof and flame kept every thread's call paths
// to the last trace).
// Run: go test ./bench -run '^$' -bench ReaderManyTraces -benchtime 1x
func BenchmarkReaderManyTraces(b *testing.B) {
	traces := envInt("FTKIT_READER_TRACES", 400)
	events := envInt("FTKIT_READER_TRACE_EVENTS", 200_000)
	dir := b.TempDir()
	first := filepath.Join(dir, "run.dat")
	tracegen(b, dir, "-events", strconv.Itoa(events), "-threads", "2", "-processes", strconv.Itoa(traces), "-o", first)
	all, _ := filepath.Glob(first + "*")
	ftrace := testenv.Tool(b, "ftrace")
	maxRSS := func(args []string, files []string) float64 {
		c := exec.Command(ftrace, append(args, files...)...)
		c.Stdout, c.Stderr = nil, os.Stderr
		kib, err := testenv.PeakRSS(b, c, 0)
		if err != nil {
			b.Fatalf("ftrace %s: %v", strings.Join(args, " "), err)
		}
		return float64(kib) / 1024
	}
	for _, cmd := range [][]string{
		{"pprof", "-o", filepath.Join(dir, "p.pb.gz")}, {"flame", "--folded", "-o", os.DevNull}, {"report"},
	} {
		b.Run(cmd[0], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				one := maxRSS(cmd, all[:1])
				many := maxRSS(cmd, all)
				b.ReportMetric(one, "MB-maxRSS-1")
				b.ReportMetric(many, "MB-maxRSS-all")
				b.ReportMetric(many/one, "ratio")
			}
		})
	}
}

// tracegen builds cmd/ftrace/internal/tracegen in dir and runs it with args.
func tracegen(b *testing.B, dir string, args ...string) {
	gen := filepath.Join(dir, "tracegen")
	if out, err := exec.Command("go", "build", "-o", gen, "github.com/ftkit/ftkit/cmd/ftrace/internal/tracegen").CombinedOutput(); err != nil {
		b.Fatalf("building tracegen: %v\n%s", err, out)
	}
	if out, err := exec.Command(gen, args...).CombinedOutput(); err != nil {
		b.Fatalf("tracegen: %v\n%s", err, out)
	}
}

// childrenCPU is the CPU time of the children this process has waited for.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}
