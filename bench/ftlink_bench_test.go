package bench

// ftlink benchmarks (docs/ftlink.md, bench/RESULTS.md):
//
//	go test ./bench -run '^$' -bench 'Ftlink|NopCost' -benchtime 5x
//
// BenchmarkFtlink300k: ftlink on a generated program with 300,000 instrumented functions
// (target ≤ 1 s), next to a baseline measured in the same run: reading the file and
// writing it back atomically, which every ftlink run has to do anyway.
// BenchmarkNopCost: run time of call-heavy programs built plain and built
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

// nopWorkloads are call-heavy programs; each prints the best of 5 timed rounds of its
// work (ns) and a checksum. "leaf" is the worst case: a loop calling tiny leaf functions
// (≈ 1 ns of work per call), so the entry nop is a large part of each call. "tree" is a
// call-heavy program doing some work per call: a binary search tree built, searched and
// walked recursively through small functions.
var nopWorkloads = map[string]string{
	"leaf": `#include <stdio.h>
#include <time.h>
__attribute__((noipa)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noipa)) long mid(long x) { return leaf(x) ^ leaf(x + 1); }
__attribute__((noipa)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(void)
{
	long best = -1, s = 0;
	for (int r = 0; r < 5; r++) {
		long t0 = now();
		for (long i = 0; i < 5000000; i++)
			s += mid(i);
		s += fib(25);
		long d = now() - t0;
		if (best < 0 || d < best)
			best = d;
	}
	printf("%ld %ld\n", best, s);
	return 0;
}
`,
	"tree": `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
struct node { long key; struct node *l, *r; };
static struct node pool[1 << 20];
static int used;
__attribute__((noipa)) struct node *mk(long k) { struct node *n = &pool[used++]; n->key = k; n->l = n->r = 0; return n; }
__attribute__((noipa)) int cmp(long a, long b) { return (a > b) - (a < b); }
__attribute__((noipa)) struct node *insert(struct node *t, long k)
{
	if (!t)
		return mk(k);
	int c = cmp(k, t->key);
	if (c < 0)
		t->l = insert(t->l, k);
	else if (c > 0)
		t->r = insert(t->r, k);
	return t;
}
__attribute__((noipa)) int find(struct node *t, long k)
{
	while (t) {
		int c = cmp(k, t->key);
		if (!c)
			return 1;
		t = c < 0 ? t->l : t->r;
	}
	return 0;
}
__attribute__((noipa)) long sum(struct node *t) { return t ? t->key + sum(t->l) + sum(t->r) : 0; }
__attribute__((noipa)) long next(long x) { return (x * 6364136223846793005L + 1442695040888963407L) & 0x7fffffffffffL; }
static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
int main(void)
{
	long best = -1, s = 0;
	for (int r = 0; r < 5; r++) {
		long t0 = now(), x = 1;
		struct node *t = 0;
		used = 0;
		for (int i = 0; i < 200000; i++)
			t = insert(t, x = next(x));
		for (int i = 0; i < 200000; i++)
			s += find(t, x = next(x));
		s += sum(t);
		long d = now() - t0;
		if (best < 0 || d < best)
			best = d;
	}
	printf("%ld %ld\n", best, s);
	return 0;
}
`,
}

func BenchmarkNopCost(b *testing.B) {
	testenv.Need(b, "gcc")
	for _, name := range []string{"leaf", "tree"} {
		b.Run(name, func(b *testing.B) { nopCost(b, nopWorkloads[name]) })
	}
}

func nopCost(b *testing.B, prog string) {
	dir := b.TempDir()
	src := filepath.Join(dir, "calls.c")
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
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
	if out := testenv.Run(b, dir, testenv.Tool(b, "ftlink"), "--check", inst); !strings.Contains(out, "ok:") || !strings.Contains(out, "(processed)") {
		b.Fatalf("ftlink --check: %s", out)
	}
	run := func(p string) (time.Duration, string) {
		out := testenv.Run(b, dir, p)
		f := strings.Fields(out)
		if len(f) != 2 {
			b.Fatalf("%s printed %q", p, out)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
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
	b.ReportMetric(best[0].Seconds()*1e3, "plain-ms")
	b.ReportMetric(best[1].Seconds()*1e3, "ftlinked-ms")
	b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "ftlinked/plain")
}
