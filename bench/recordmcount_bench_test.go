package bench

// recordmcount benchmark (bench/RESULTS.md):
//
//	go test ./bench -run '^$' -bench RecordmcountZstd -benchtime 10x
//
// The library sources of Debian's zstd (lib/*/*.c: common, compress, decompress, dictBuilder,
// legacy, deprecated)
// are compiled once per run, file by file, alternately with `gcc -O2 -pg -mfentry` and with
// `gcc -O2 -pg -mfentry -mrecord-mcount` (gcc writing the table itself), so both compile
// times are measured under the same load. Then:
//
//   - inprocess: mcountloc.Record on every object held in memory (MB/s, objects/s);
//   - cli: the recordmcount binary once per object on fresh copies, as a build rule would
//     run it (process start, read, record, atomic write with fsync);
//   - cli-batch: one recordmcount run on all the copies (files processed in parallel);
//   - the extra build time: (gcc + recordmcount) / gcc, against gcc -mrecord-mcount / gcc,
//     in CPU time (user + system of the child processes, steadier on a shared machine)
//     and in wall time.

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// zstdFlags are the flags the real-world oracle test uses for zstd's library.
var zstdFlags = []string{"-DZSTD_DISABLE_ASM", "-DZSTD_MULTITHREAD", "-pthread"}

// zstdSources lists zstd's library sources (at most limit when limit > 0, smallest first).
func zstdSources(tb testing.TB, limit int) []string {
	tb.Helper()
	src := testenv.DebianSource(tb, "zstd")
	var files []string
	for _, d := range []string{"common", "compress", "decompress", "dictBuilder", "legacy", "deprecated"} {
		m, err := filepath.Glob(filepath.Join(src, "lib", d, "*.c"))
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		tb.Fatalf("no sources in %s/lib", src)
	}
	if limit > 0 {
		size := func(p string) int64 {
			st, err := os.Stat(p)
			if err != nil {
				tb.Fatal(err)
			}
			return st.Size()
		}
		sort.Slice(files, func(i, j int) bool { return size(files[i]) < size(files[j]) })
		files = files[:min(limit, len(files))]
	}
	sort.Strings(files)
	return files
}

// timing is a measured duration of child processes: wall time and CPU time.
type timing struct{ wall, cpu time.Duration }

func (t *timing) add(o timing) { t.wall += o.wall; t.cpu += o.cpu }

// timedRun runs a command and returns its wall and CPU time (user + system, children
// included).
func timedRun(tb testing.TB, dir, name string, args ...string) timing {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t0)
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	st := cmd.ProcessState
	return timing{wall: wall, cpu: st.UserTime() + st.SystemTime()}
}

// zstdBuild is the result of compiling the sources both ways.
type zstdBuild struct {
	objs      []string // compiled with -pg -mfentry, not yet recorded
	data      [][]byte // their contents
	sites     []int    // sites in each (0: recordmcount leaves it unchanged)
	bytes     int64
	gcc, gccR timing // compile times without and with -mrecord-mcount
}

// compileZstd compiles each source with and without -mrecord-mcount, alternately and one
// compiler at a time, into dir.
func compileZstd(tb testing.TB, dir string, files []string) *zstdBuild {
	tb.Helper()
	testenv.Need(tb, "gcc")
	zb := &zstdBuild{}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".c")
		lib := filepath.Dir(filepath.Dir(f))
		args := append([]string{"-O2", "-pg", "-mfentry", "-I", filepath.Dir(f), "-I", lib, "-I", filepath.Join(lib, "common")}, zstdFlags...)
		obj := filepath.Join(dir, base+".o")
		zb.gcc.add(timedRun(tb, dir, "gcc", append(append([]string{}, args...), "-c", f, "-o", obj)...))
		zb.gccR.add(timedRun(tb, dir, "gcc", append(append([]string{}, args...), "-mrecord-mcount", "-c", f, "-o", filepath.Join(dir, base+".gcc.o"))...))
		data, err := os.ReadFile(obj)
		if err != nil {
			tb.Fatal(err)
		}
		res, err := mcountloc.Record(data)
		if err != nil {
			tb.Fatalf("%s: %v", obj, err)
		}
		zb.objs = append(zb.objs, obj)
		zb.data = append(zb.data, data)
		zb.sites = append(zb.sites, len(res.Sites))
		zb.bytes += int64(len(data))
	}
	return zb
}

// recordAll runs mcountloc.Record on every object in memory and returns the sites found.
func recordAll(tb testing.TB, zb *zstdBuild) int {
	sites := 0
	for i, d := range zb.data {
		res, err := mcountloc.Record(d)
		if err != nil {
			tb.Fatalf("%s: %v", zb.objs[i], err)
		}
		if (res.Out != nil) != (zb.sites[i] > 0) {
			tb.Fatalf("%s: %d sites, output %v (%s)", zb.objs[i], zb.sites[i], res.Out != nil, res.Note)
		}
		sites += len(res.Sites)
	}
	return sites
}

// recordCLI copies every object to dir and runs the recordmcount binary once per object.
func recordCLI(tb testing.TB, zb *zstdBuild, tool, dir string) timing {
	var t timing
	for i, d := range zb.data {
		p := filepath.Join(dir, filepath.Base(zb.objs[i]))
		if err := os.WriteFile(p, d, 0o644); err != nil {
			tb.Fatal(err)
		}
		t.add(timedRun(tb, dir, tool, p))
		if st, err := os.Stat(p); err != nil || (st.Size() > int64(len(d))) != (zb.sites[i] > 0) {
			tb.Fatalf("%s: %d sites, file grew from %d bytes (%v)", p, zb.sites[i], len(d), err)
		}
	}
	return t
}

func BenchmarkRecordmcountZstd(b *testing.B) {
	files := zstdSources(b, 0)
	b.Logf("compiling %d zstd sources twice (with and without -mrecord-mcount)", len(files))
	zb := compileZstd(b, b.TempDir(), files)
	tool := testenv.Tool(b, "recordmcount")
	n := float64(len(zb.objs))
	mb := float64(zb.bytes) / 1e6

	b.Run("inprocess", func(b *testing.B) {
		b.SetBytes(zb.bytes)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			recordAll(b, zb)
		}
		sec := b.Elapsed().Seconds() / float64(b.N)
		b.ReportMetric(n/sec, "objects/s")
	})
	var cli timing
	b.Run("cli", func(b *testing.B) {
		cli = timing{}
		dir := b.TempDir()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			cli.add(recordCLI(b, zb, tool, dir))
		}
		b.StopTimer()
		per := cli.wall.Seconds() / float64(b.N)
		b.ReportMetric(mb/per, "MB/s")
		b.ReportMetric(n/per, "objects/s")
		cli.wall /= time.Duration(b.N)
		cli.cpu /= time.Duration(b.N)
	})
	b.Run("cli-batch", func(b *testing.B) {
		dir := b.TempDir()
		var wall time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			args := make([]string, len(zb.objs))
			for j, d := range zb.data {
				args[j] = filepath.Join(dir, filepath.Base(zb.objs[j]))
				if err := os.WriteFile(args[j], d, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			wall += timedRun(b, dir, tool, args...).wall
		}
		per := wall.Seconds() / float64(b.N)
		b.ReportMetric(mb/per, "MB/s")
		b.ReportMetric(n/per, "objects/s")
	})
	b.Run("buildtime", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			// Nothing to repeat: the compile times were measured once, above.
		}
		b.ReportMetric(zb.gcc.cpu.Seconds(), "gcc-cpu-s")
		b.ReportMetric(cli.cpu.Seconds(), "recordmcount-cpu-s")
		b.ReportMetric((zb.gcc.cpu+cli.cpu).Seconds()/zb.gcc.cpu.Seconds(), "recordmcount-cpu-ratio")
		b.ReportMetric(zb.gccR.cpu.Seconds()/zb.gcc.cpu.Seconds(), "mrecord-mcount-cpu-ratio")
		b.ReportMetric((zb.gcc.wall+cli.wall).Seconds()/zb.gcc.wall.Seconds(), "recordmcount-wall-ratio")
		b.ReportMetric(zb.gccR.wall.Seconds()/zb.gcc.wall.Seconds(), "mrecord-mcount-wall-ratio")
		b.ReportMetric(n, "objects")
		b.ReportMetric(mb, "MB")
	})
}

// TestRecordmcountBenchSmoke runs the benchmark's steps once on the three smallest zstd
// sources, so the benchmark code cannot rot unnoticed; the figures come from the benchmark.
func TestRecordmcountBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles zstd sources: -short")
	}
	files := zstdSources(t, 3)
	zb := compileZstd(t, t.TempDir(), files)
	if sites := recordAll(t, zb); sites == 0 {
		t.Fatal("no sites recorded")
	}
	cli := recordCLI(t, zb, testenv.Tool(t, "recordmcount"), t.TempDir())
	if cli.cpu <= 0 || zb.gcc.cpu <= 0 || zb.gccR.cpu <= 0 {
		t.Fatalf("timings not measured: recordmcount %v, gcc %v, gcc -mrecord-mcount %v", cli, zb.gcc, zb.gccR)
	}
}
