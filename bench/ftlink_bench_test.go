package bench

// ftlink benchmarks (docs/ftlink.md, bench/RESULTS.md):
//
//	go test ./bench -run '^$' -bench 'Ftlink|NopCost' -benchtime 5x
//
// BenchmarkFtlink300k: ftlink on a generated program with 300,000 instrumented functions
// (target ≤ 1 s), next to a baseline measured in the same run: reading the file and
// writing it back atomically, which every ftlink run has to do anyway.
// BenchmarkNopCost: run time of a call-heavy program built plain and built
// instrumented + ftlinked, run alternately; ratio of the best times (target ≤ 1.02).

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
)

const (
	genFuncs = 300000
	genFiles = 12
)

// genProgram builds (or finds in build/cache/ftlink-bench) the 300k-function program,
// instrumented and tabled but not yet ftlinked.
func genProgram(b *testing.B) string {
	b.Helper()
	testenv.Need(b, "gcc")
	ver, _ := exec.Command("gcc", "--version").Output()
	rm := testenv.Tool(b, "recordmcount")
	rmSum := fileSum(b, rm)
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprintf("v1 %d %d %s %s", genFuncs, genFiles, ver, rmSum))))[:16]
	dir := filepath.Join(testenv.Root(), "build", "cache", "ftlink-bench", key)
	prog := filepath.Join(dir, "prog300k")
	if _, err := os.Stat(prog); err == nil {
		return prog
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Logf("generating and compiling %d functions in %s (cached afterwards)", genFuncs, dir)
	per := genFuncs / genFiles
	objs := make([]string, genFiles)
	var wg sync.WaitGroup
	errs := make([]error, genFiles)
	sem := make(chan struct{}, 2) // two cores are shared: at most two compilers
	for i := 0; i < genFiles; i++ {
		var sb strings.Builder
		for j := i * per; j < (i+1)*per; j++ {
			fmt.Fprintf(&sb, "int f%d(int x) { return x * %d + %d; }\n", j, j%7+2, j)
		}
		if i == 0 {
			sb.WriteString("#include <stdio.h>\nint main(void) { printf(\"%d\\n\", f0(1) + f1(2)); return 0; }\n")
		}
		src := filepath.Join(dir, fmt.Sprintf("g%d.c", i))
		if err := os.WriteFile(src, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		objs[i] = strings.TrimSuffix(src, ".c") + ".o"
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command("gcc", "-O2", "-pg", "-mfentry", "-c", "-o", objs[i], src).CombinedOutput()
			if err == nil {
				out, err = exec.Command(rm, objs[i]).CombinedOutput()
			}
			if err != nil {
				errs[i] = fmt.Errorf("%v\n%s", err, out)
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	tmp := prog + ".tmp"
	testenv.Run(b, dir, "gcc", append([]string{"-o", tmp}, objs...)...)
	for _, o := range objs {
		os.Remove(o)
		os.Remove(strings.TrimSuffix(o, ".o") + ".c")
	}
	if err := os.Rename(tmp, prog); err != nil {
		b.Fatal(err)
	}
	return prog
}

func fileSum(b *testing.B, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

func BenchmarkFtlink300k(b *testing.B) {
	prog := genProgram(b)
	ftlink := testenv.Tool(b, "ftlink")
	orig, err := os.ReadFile(prog)
	if err != nil {
		b.Fatal(err)
	}
	work := filepath.Join(b.TempDir(), "prog")
	var tFtlink, tBase time.Duration
	for i := 0; i < b.N; i++ {
		if err := os.WriteFile(work, orig, 0o755); err != nil {
			b.Fatal(err)
		}
		// Baseline: read the file and replace it atomically.
		t0 := time.Now()
		data, err := os.ReadFile(work)
		if err == nil {
			err = elfrw.WriteFileAtomic(work, data)
		}
		if err != nil {
			b.Fatal(err)
		}
		tBase += time.Since(t0)

		t0 = time.Now()
		out, err := exec.Command(ftlink, work).CombinedOutput()
		tFtlink += time.Since(t0)
		if err != nil {
			b.Fatalf("ftlink: %v\n%s", err, out)
		}
	}
	out, err := exec.Command(ftlink, "--check", work).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("ok: %d sites good", genFuncs+1)) {
		b.Fatalf("ftlink --check: %v\n%s", err, out)
	}
	n := float64(b.N)
	b.ReportMetric(tFtlink.Seconds()/n, "ftlink-s/op")
	b.ReportMetric(tBase.Seconds()/n, "copy-s/op")
	b.ReportMetric(tFtlink.Seconds()/tBase.Seconds(), "ftlink/copy")
	b.ReportMetric(float64(len(orig))/1e6, "MB")
}

// callHeavy is a leaf-call-heavy workload; it prints its own time for the work only.
const callHeavy = `#include <stdio.h>
#include <time.h>
__attribute__((noipa)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noipa)) long mid(long x) { return leaf(x) ^ leaf(x + 1); }
__attribute__((noipa)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void)
{
	struct timespec a, b;
	long s = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < 20000000; i++)
		s += mid(i);
	s += fib(30);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld %ld\n", (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec), s);
	return 0;
}
`

func BenchmarkNopCost(b *testing.B) {
	testenv.Need(b, "gcc")
	dir := b.TempDir()
	src := filepath.Join(dir, "calls.c")
	if err := os.WriteFile(src, []byte(callHeavy), 0o644); err != nil {
		b.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	testenv.Run(b, dir, "gcc", "-O2", "-o", plain, src)
	obj := filepath.Join(dir, "calls.o")
	testenv.Run(b, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", "-o", obj, src)
	testenv.Run(b, dir, testenv.Tool(b, "recordmcount"), obj)
	inst := filepath.Join(dir, "ftlinked")
	testenv.Run(b, dir, "gcc", "-o", inst, obj)
	testenv.Run(b, dir, testenv.Tool(b, "ftlink"), inst)
	if out := testenv.Run(b, dir, testenv.Tool(b, "ftlink"), "--check", inst); !strings.Contains(out, "ok: 4 sites good") {
		b.Fatalf("ftlink --check: %s", out)
	}
	run := func(p string) (time.Duration, string) {
		out := testenv.Run(b, dir, p)
		f := strings.Fields(out)
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || len(f) != 2 {
			b.Fatalf("%s printed %q", p, out)
		}
		return time.Duration(ns), f[1]
	}
	_, want := run(plain)
	var best [2]time.Duration
	for i := 0; i < b.N; i++ {
		for j, p := range []string{plain, inst} {
			d, sum := run(p)
			if sum != want {
				b.Fatalf("%s computes %s, plain %s", p, sum, want)
			}
			if best[j] == 0 || d < best[j] {
				best[j] = d
			}
		}
	}
	b.ReportMetric(best[0].Seconds(), "plain-s")
	b.ReportMetric(best[1].Seconds(), "ftlinked-s")
	b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "ftlinked/plain")
}
