package bench

// recordmcount's cost against the number of functions in one object (bench/RESULTS.md):
//
//	go test ./bench -run '^$' -bench RecordmcountScale -benchtime 1x
//
// Generated objects of n one-line functions (gcc -O1 -pg -mfentry -c, one source file),
// n = 30,000 and 300,000, recorded in process by mcountloc.Record; it reports the seconds
// per object and the ratio of the two (10 for a linear tool; the quadratic symbol lookup
// it replaced made it about 95).

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/mcountloc"
)

// manyFuncs compiles a source of n one-line functions and returns the object's bytes.
func manyFuncs(tb testing.TB, dir string, n int) []byte {
	tb.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "int f%d(int x) { return x * %d + 1; }\n", i, i%97+1)
	}
	src := filepath.Join(dir, fmt.Sprintf("f%d.c", n))
	obj := strings.TrimSuffix(src, ".c") + ".o"
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-pg", "-mfentry", "-c", "-o", obj, src).CombinedOutput(); err != nil {
		tb.Fatalf("gcc: %v\n%s", err, out)
	}
	data, err := os.ReadFile(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func BenchmarkRecordmcountScale(b *testing.B) {
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("no gcc")
	}
	dir := b.TempDir()
	secs := map[int]float64{}
	for _, n := range []int{30000, 300000} {
		data := manyFuncs(b, dir, n)
		best := 0.0
		for i := 0; i < 3; i++ {
			start := time.Now()
			res, err := mcountloc.Record(data)
			d := time.Since(start).Seconds()
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Sites) != n {
				b.Fatalf("%d functions: %d sites", n, len(res.Sites))
			}
			if i == 0 || d < best {
				best = d
			}
		}
		secs[n] = best
		b.ReportMetric(best, fmt.Sprintf("s/%dk-funcs", n/1000))
	}
	b.ReportMetric(secs[300000]/secs[30000], "ratio-300k/30k")
}

// TestRecordmcountScaleSmoke: the generated object records with one site per function.
func TestRecordmcountScaleSmoke(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc")
	}
	res, err := mcountloc.Record(manyFuncs(t, t.TempDir(), 200))
	if err != nil || len(res.Sites) != 200 || res.Sites[17].Func != "f17" {
		t.Fatalf("err %v, %d sites", err, len(res.Sites))
	}
}
