// Package bench_test holds ftkit's benchmarks; figures are recorded in RESULTS.md.
//
// patch_*: the live-patching engine (runtime/src/core/poke*.c): switching every site of a
// generated program with 300k functions, one site, and the per-call cost of a site before
// and after a switch.  Run: go test ./bench -run '^$' -bench Patch -benchtime 1x
//
// patch_api_*: the same through the runtime's API (register_ftrace_function etc.) on the
// 300k generated sites of bench/runtime/c/gen_sites.S, against the engine in the same run.
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
		"-I", filepath.Join(root, "runtime/src"), "-I", filepath.Join(root, "runtime/src/arch/x86_64"),
		filepath.Join(root, "bench/patch/patch_bench.c"), filepath.Join(root, "bench/patch/patch_funcs.S")}
	for _, s := range []string{"core/poke.c", "arch/x86_64/poke_x86_64.c", "core/poke_sigmask.c", "core/sync.c"} {
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
		b, nums, words := runWithPoke(t, method, prog, "2000", "1")
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
				_, nums, _ := runWithPoke(b, method, prog, "300000", "5")
				for _, k := range []string{"enable_all_ms", "disable_all_ms", "enable_all_ms_one_thread", "disable_all_ms_one_thread", "one_site_us", "serialise_us",
					"call_ns_nop_before", "call_ns_call", "call_ns_nop_after", "call_ratio_after_before", "call_ratio_call_before",
					"control_ns_before", "control_ns_call", "control_ns_after"} {
					b.ReportMetric(nums[k], k)
				}
			}
		})
	}
}

// buildAPIBench builds bench/patch/api_bench.c against libftrt.a with n generated sites
// (bench/runtime/c/gen_sites.S).
func buildAPIBench(t testing.TB, n int) string {
	t.Helper()
	testenv.Need(t, "gcc")
	lib, inc := testenv.Runtime(t)
	root := testenv.Root()
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen_sites.o")
	testenv.Run(t, dir, "gcc", "-c", "-DNSITES="+strconv.Itoa(n), filepath.Join(root, "bench/runtime/c/gen_sites.S"), "-o", gen)
	out := filepath.Join(dir, "api_bench")
	testenv.Run(t, dir, "gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"+inc,
		filepath.Join(root, "bench/patch/api_bench.c"), gen, "-o", out, "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	return out
}

var apiMetrics = []string{"api_enable_ms", "api_disable_ms", "engine_enable_ms", "engine_disable_ms",
	"api_one_enable_us", "api_one_disable_us", "engine_one_us"}

// TestAPIBenchRuns checks that the API benchmark works (small, no timing asserted).
func TestAPIBenchRuns(t *testing.T) {
	prog := buildAPIBench(t, 2000)
	for _, method := range []string{"procmem", "mprotect"} {
		b, nums, words := runWithPoke(t, method, prog, "1")
		if words["method"] != method || nums["sites"] != 2000 {
			t.Errorf("%s: unexpected output:\n%s", method, b)
		}
		for _, k := range apiMetrics {
			if nums[k] <= 0 {
				t.Errorf("%s: %s missing or not positive:\n%s", method, k, b)
			}
		}
	}
}

// BenchmarkPatchAPI300k: every site of a 300k-function program enabled and disabled
// through register_ftrace_function / unregister_ftrace_function (targets ≤ 100 ms each
// way), one site through ftrace_set_filter_ip + register (target ≤ 50 µs); ratios against
// the engine alone on the same sites in the same run.
//
//	go test ./bench -run '^$' -bench PatchAPI300k -benchtime 1x
func BenchmarkPatchAPI300k(b *testing.B) {
	prog := buildAPIBench(b, 300000)
	for _, method := range []string{"procmem", "mprotect"} {
		b.Run(method, func(b *testing.B) {
			var nums map[string]float64
			for i := 0; i < b.N; i++ {
				_, nums, _ = runWithPoke(b, method, prog, "5")
			}
			for _, k := range apiMetrics {
				b.ReportMetric(nums[k], k)
			}
			b.ReportMetric(nums["api_enable_ms"]/nums["engine_enable_ms"], "api/engine-enable")
			b.ReportMetric(nums["api_disable_ms"]/nums["engine_disable_ms"], "api/engine-disable")
			b.ReportMetric(nums["api_one_enable_us"]/nums["engine_one_us"], "api/engine-one")
		})
	}
}

// runWithPoke runs a benchmark program with FTRT_POKE=method (how the runtime writes code)
// and returns its output and the metrics it printed.
func runWithPoke(t testing.TB, method, prog string, args ...string) (string, map[string]float64, map[string]string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = append(cmd.Environ(), "FTRT_POKE="+method)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s (FTRT_POKE=%s): %v\n%s", filepath.Base(prog), method, err, out)
	}
	nums, words := parseMetrics(t, string(out))
	return string(out), nums, words
}
