package runtimebench

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// buildCallops builds callops_bench.c for CALL_OPS (-fpatchable-function-entry=8,8) with
// callops_plain.c built the usual way, through the full flow (PIE, ftlink'ed).
func buildCallops(t testing.TB, dir string) string {
	t.Helper()
	testenv.Need(t, "gcc")
	lib, inc := testenv.Runtime(t)
	var objs []string
	for _, s := range []struct {
		src   string
		extra []string
	}{
		{"callops_bench.c", []string{"-fpatchable-function-entry=8,8", "-falign-functions=16"}},
		{"callops_plain.c", nil},
	} {
		obj := filepath.Join(dir, s.src+".o")
		args := append([]string{"-O2", "-pg", "-mfentry", "-Wall", "-Werror", "-I" + inc}, s.extra...)
		testenv.Run(t, dir, "gcc", append(args, "-c", filepath.Join(benchDir(), s.src), "-o", obj)...)
		testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
		objs = append(objs, obj)
	}
	exe := filepath.Join(dir, "callops_bench")
	testenv.Run(t, dir, "gcc", append(objs, "-o", exe, "-L"+lib, "-lftrt", "-lpthread", "-ldl")...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), exe)
	return exe
}

// BenchmarkRuntimeCallops: the CALL_OPS figures of bench/RESULTS.md (ratios measured in
// one process, see callops_bench.c), median over callcostRuns processes.
func BenchmarkRuntimeCallops(b *testing.B) {
	dir := b.TempDir()
	exe := buildCallops(b, dir)
	for i := 0; i < b.N; i++ {
		all := map[string][]float64{}
		for r := 0; r < callcostRuns; r++ {
			out := testenv.Exec(b, dir, exe)
			if out.Code != 0 {
				b.Fatalf("callops_bench: exit %d\n%s%s", out.Code, out.Stdout, out.Stderr)
			}
			for n, v := range parse(b, out.Stdout) {
				all[n] = append(all[n], v[1])
			}
		}
		for _, n := range []string{"callops_k0", "callops_k64", "callops_k64_k0", "callops_own", "callops2_k64_own"} {
			v := all[n]
			if len(v) == 0 {
				b.Fatalf("callops_bench printed no %s", n)
			}
			sort.Float64s(v)
			b.ReportMetric(v[len(v)/2], n+"_ratio")
		}
	}
}

// The CALL_OPS bench program builds and runs (short), so it does not rot.
func TestCallopsBenchRuns(t *testing.T) {
	dir := t.TempDir()
	out := testenv.Exec(t, dir, buildCallops(t, dir), "200000")
	if out.Code != 0 {
		t.Fatalf("callops_bench: exit %d\n%s%s", out.Code, out.Stdout, out.Stderr)
	}
	m := parse(t, out.Stdout)
	for _, n := range []string{"callops_k0", "callops_k64", "callops_k64_k0", "callops_own", "callops2_k64_own"} {
		if len(m[n]) != 2 || m[n][1] <= 0 {
			t.Errorf("%s: want ns and a positive ratio: %v", n, m[n])
		}
	}
}
