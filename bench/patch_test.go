// Package bench_test holds ftkit's benchmarks; figures are recorded in RESULTS.md.
//
// patch_*: the live-patching engine (runtime/src/poke*.c): switching every site of a
// generated program with 300k functions, one site, and the per-call cost of a site before
// and after a switch.  Run: go test ./bench -run '^$' -bench Patch -benchtime 1x
package bench_test

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

func buildPatchBench(t testing.TB) string {
	t.Helper()
	testenv.Need(t, "gcc")
	root := testenv.Root()
	out := filepath.Join(t.TempDir(), "patch_bench")
	args := []string{"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", out,
		filepath.Join(root, "bench/patch/patch_bench.c"), filepath.Join(root, "bench/patch/patch_funcs.S")}
	for _, s := range []string{"poke.c", "poke_x86_64.c", "poke_sigmask.c", "sync.c"} {
		args = append(args, filepath.Join(root, "runtime/src", s))
	}
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// parseMetrics reads the "name value..." lines of patch_bench (first value only).
func parseMetrics(t testing.TB, out string) (map[string]float64, map[string]string) {
	nums, words := map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			t.Fatalf("bad line %q", sc.Text())
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			nums[f[0]] = v
		} else {
			words[f[0]] = f[1]
		}
	}
	return nums, words
}

// TestPatchBenchRuns checks that the benchmark program works (small, no timing asserted).
func TestPatchBenchRuns(t *testing.T) {
	prog := buildPatchBench(t)
	for _, method := range []string{"procmem", "mprotect"} {
		cmd := exec.Command(prog, "2000", "1")
		cmd.Env = append(cmd.Environ(), "FTRT_POKE="+method)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", method, err, b)
		}
		nums, words := parseMetrics(t, string(b))
		if words["method"] != method || nums["sites"] != 2000 {
			t.Errorf("%s: unexpected output:\n%s", method, b)
		}
		for _, k := range []string{"enable_all_ms", "disable_all_ms", "one_site_us", "call_ns_call"} {
			if nums[k] <= 0 {
				t.Errorf("%s: %s missing or not positive:\n%s", method, k, b)
			}
		}
	}
}

// BenchmarkPatch300k reports the figures of one run of patch_bench over 300k sites
// (the program repeats and takes medians itself).
func BenchmarkPatch300k(b *testing.B) {
	prog := buildPatchBench(b)
	for _, method := range []string{"procmem", "mprotect"} {
		b.Run(method, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(prog, "300000", "5")
				cmd.Env = append(cmd.Environ(), "FTRT_POKE="+method)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				nums, _ := parseMetrics(b, string(out))
				for _, k := range []string{"enable_all_ms", "disable_all_ms", "one_site_us", "serialise_us",
					"call_ns_nop_before", "call_ns_call", "call_ns_nop_after", "call_ratio_after_before", "call_ratio_call_before",
					"control_ns_before", "control_ns_call", "control_ns_after"} {
					b.ReportMetric(nums[k], k)
				}
			}
		})
	}
}
