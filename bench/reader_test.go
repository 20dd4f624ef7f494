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
	events := 100_000_000
	if v, err := strconv.Atoi(os.Getenv("FTKIT_READER_EVENTS")); err == nil && v > 0 {
		events = v
	}
	dir := b.TempDir()
	gen := filepath.Join(dir, "tracegen")
	if out, err := exec.Command("go", "build", "-o", gen, "github.com/ftkit/ftkit/cmd/ftrace/internal/tracegen").CombinedOutput(); err != nil {
		b.Fatalf("building tracegen: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "big.dat")
	if out, err := exec.Command(gen, "-events", strconv.Itoa(events), "-threads", "4", "-o", trace).CombinedOutput(); err != nil {
		b.Fatalf("tracegen: %v\n%s", err, out)
	}
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
				start := time.Now()
				if err := c.Run(); err != nil {
					b.Fatalf("ftrace %s: %v", strings.Join(cmd, " "), err)
				}
				wall := time.Since(start)
				rss := c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
				cpu := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
				b.ReportMetric(float64(events)/wall.Seconds()/1e6, "Mevents/s")
				b.ReportMetric(float64(rss)/1024, "MB-maxRSS")
				b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
			}
		})
	}
}
