package ftrt_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// buildStress builds runtime/tests/stress_test.c through the real flow: the traced
// functions (stress_funcs.S, real __fentry__ calls, 5- and 6-byte, some straddling a cache
// line) are tabled by recordmcount, linked with libftrt.a, and processed by ftlink.
func buildStress(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	testenv.Need(t, "gcc")
	lib, inc := testenv.Runtime(t)
	src := filepath.Join(testenv.Root(), "runtime", "tests")
	obj := filepath.Join(dir, name+"_funcs.o")
	var asFlags []string
	if slices.Contains(flags, "-DCALLOPS") {
		asFlags = []string{"-DCALLOPS"} // an 8-byte area before each function
	}
	testenv.Run(t, dir, "gcc", append(asFlags, "-c", "-o", obj, filepath.Join(src, "stress_funcs.S"))...)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	out := filepath.Join(dir, name)
	args := append([]string{"-std=c11", "-g", "-Wall", "-Wextra", "-Werror", "-pthread", "-I" + inc, "-o", out}, flags...)
	args = append(args, filepath.Join(src, "stress_test.c"), obj, "-L"+lib, "-lftrt", "-ldl")
	testenv.Run(t, dir, "gcc", args...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), out)
	return out
}

var stressLine = regexp.MustCompile(`ok stress: threads=(\d+) switches=(\d+) in [0-9.]+ s, calls=(\d+)`)

// TestStress: threads call 1000 traced functions while the main thread registers,
// unregisters and re-filters 4 ops (own trampoline <-> list caller <-> regs caller) up to
// 10,000 times within a time budget; every call's callbacks are checked by the program.
// Variants: calls from signal handlers, fork() during switching.  The park case checks
// that unregister waits for a thread inside the callback and that ftrace_synchronize
// releases the trampoline afterwards; the nested cases that a signal handler which
// interrupted a trampoline (on another thread, or calling the API itself) keeps it alive.
func TestStress(t *testing.T) {
	dir := t.TempDir()
	prog := buildStress(t, dir, "stress", "-O2")
	for _, c := range []struct {
		name    string
		args    []string
		minSwit int
	}{
		// the acceptance target: 10,000 switches with 8 busy threads (each unregister
		// waits only for the threads whose callback counter is raised); ≈ 16–20 s here,
		// the budget leaves room for a machine loaded by other tests
		{"8-threads", []string{"stress", "8", "10000", "100"}, 10000},
		{"2-threads", []string{"stress", "2", "10000", "3"}, 100},
		// checked calls from signal handlers too (some interrupt callbacks)
		{"signals", []string{"signals", "4", "10000", "3"}, 50},
		// every 10th switch forks; the child checks its calls and re-registers
		{"fork", []string{"fork", "4", "10000", "3"}, 10},
		// one switching thread per ops, all at once: the API serialises them fairly
		{"api", []string{"api", "4", "10000", "3"}, 8},
		{"park", []string{"park"}, 0},
		// a signal handler that interrupted a trampoline keeps its memory alive
		{"nested-park", []string{"nested", "park"}, 0},
		{"nested-self", []string{"nested", "self"}, 0},
		{"nested-altstack", []string{"nested", "altstack"}, 0},
		// a failed wait for callbacks never frees (FTRT_TEST_SYNC_FAIL injects the failure)
		{"syncfail", []string{"syncfail"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var env []string
			if c.args[0] == "syncfail" {
				env = []string{"FTRT_TEST_SYNC_FAIL=1"}
			}
			out := runC(t, 3*time.Minute, env, prog, c.args...)
			t.Log(out)
			switch c.args[0] {
			case "park":
				wantLines(t, out, "ok park: unregister waited")
				return
			case "nested":
				wantLines(t, out, "ok nested "+c.args[1])
				return
			case "syncfail":
				wantLines(t, out, "ok syncfail")
				return
			}
			m := stressLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no result line:\n%s", out)
			}
			if c.args[0] == "signals" && !regexp.MustCompile(`ok stress: [1-9]\d* calls from signal handlers`).MatchString(out) {
				t.Errorf("no checked call from a signal handler:\n%s", out)
			}
			if c.args[0] == "fork" && !regexp.MustCompile(`ok stress: \d+ calls from signal handlers, [1-9]\d* forks`).MatchString(out) {
				t.Errorf("no fork:\n%s", out)
			}
			sw, _ := strconv.Atoi(m[2])
			calls, _ := strconv.ParseInt(m[3], 10, 64)
			if sw < c.minSwit || calls == 0 {
				t.Errorf("only %d switches (want >= %d), %d calls", sw, c.minSwit, calls)
			}
		})
	}
}

// TestStressSanitizers runs the stress program (its own code under ASan+UBSan; the
// library as built) briefly.  Not under TSan: TSan defers asynchronous signals to its
// interceptors, so a thread looping in traced code never runs the quiescence handler.
func TestStressSanitizers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	prog := buildStress(t, dir, "stress_asan", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
	env := []string{"ASAN_OPTIONS=detect_leaks=0", "UBSAN_OPTIONS=halt_on_error=1"}
	out := runC(t, 2*time.Minute, env, prog, "stress", "4", "10000", "5")
	if !stressLine.MatchString(out) {
		t.Errorf("no result line:\n%s", out)
	}
	out = runC(t, 2*time.Minute, env, prog, "park")
	wantLines(t, out, "ok park")
	out = runC(t, 2*time.Minute, env, prog, "nested", "park")
	wantLines(t, out, "ok nested park")
}

// TestStressCallops: the stress program with an 8-byte area before every traced function
// (stress_funcs.S -DCALLOPS): half the sites (8-byte aligned areas) are CALL_OPS sites, the
// others (unaligned) are served as usual, in the same process. The same checks of every
// call's callbacks while 4 ops (one SAVE_REGS, one RECURSION) switch; the program also
// requires that sites were seen calling the CALL_OPS callers.
func TestStressCallops(t *testing.T) {
	dir := t.TempDir()
	prog := buildStress(t, dir, "stress_callops", "-O2", "-DCALLOPS")
	callops := regexp.MustCompile(`ok stress: up to [1-9]\d* CALL_OPS sites`)
	for _, c := range []struct {
		name    string
		args    []string
		minSwit int
	}{
		{"8-threads", []string{"stress", "8", "10000", "100"}, 10000},
		{"signals", []string{"signals", "4", "10000", "3"}, 50},
		{"fork", []string{"fork", "4", "10000", "3"}, 10},
		{"api", []string{"api", "4", "10000", "3"}, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runC(t, 3*time.Minute, nil, prog, c.args...)
			t.Log(out)
			m := stressLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no result line:\n%s", out)
			}
			sw, _ := strconv.Atoi(m[2])
			calls, _ := strconv.ParseInt(m[3], 10, 64)
			if sw < c.minSwit || calls == 0 {
				t.Errorf("only %d switches (want >= %d), %d calls", sw, c.minSwit, calls)
			}
			if c.args[0] != "api" && !callops.MatchString(out) {
				t.Errorf("no CALL_OPS site seen:\n%s", out)
			}
		})
	}
}
