package main

import (
	"errors"
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

// loopSrc works for argv[1] rounds of argv[2] calls each, sleeping 10 ms between rounds,
// and prints the rounds it did.
const loopSrc = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) int work(int x) { __asm__ volatile(""); return x + 1; }
int main(int argc, char **argv) {
	int rounds = atoi(argv[1]), calls = atoi(argv[2]), s = 0, r;
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	for (r = 0; r < rounds; r++) {
		for (int i = 0; i < calls; i++)
			s = work(s);
		nanosleep(&ts, 0);
	}
	printf("rounds %d sum %d\n", r, s);
	return 0;
}
`

// --duration and --size finalise the trace while the program runs on: the trace is
// complete (written because of the limit), holds the first part of the run only, and the
// program ends as it would have. The runtime stops by itself, so the limits hold without
// a control socket too.
func TestRecordLimits(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700) // the runtime and ftrace live use only a private XDG_RUNTIME_DIR
	t.Setenv("XDG_RUNTIME_DIR", dir)
	prog := buildTraced(t, dir, "loop", loopSrc)
	ftrace := testenv.Tool(t, "ftrace")
	cases := []struct {
		flag, want, reason string
		rounds             int
		calls              int
		control            bool
	}{
		{"--duration=300ms", "ftrace: recording stopped after 300ms (--duration); the program runs on untraced", "duration limit", 150, 100, true},
		{"--size=2M", "(--size); the program runs on untraced", "size limit", 150, 20000, true},
		{"--size=2M", "(--size); the program runs on untraced", "size limit", 150, 20000, false},
	}
	for _, c := range cases {
		t.Run(c.flag+"/control="+strconv.FormatBool(c.control), func(t *testing.T) {
			out := filepath.Join(dir, "t.dat")
			cmd := exec.Command(ftrace, "record", "-t", "function", c.flag, "--control="+strconv.FormatBool(c.control),
				"-o", out, "--", prog, strconv.Itoa(c.rounds), strconv.Itoa(c.calls))
			cmd.Dir = dir
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("record: %v\n%s", err, stderr.String())
			}
			if stdout.String() != "rounds "+strconv.Itoa(c.rounds)+" sum "+strconv.Itoa(c.rounds*c.calls)+"\n" {
				t.Errorf("program output %q", stdout.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr does not say %q:\n%s", c.want, stderr.String())
			}
			info := testenv.Run(t, dir, ftrace, "info", out)
			if !strings.Contains(strings.Join(strings.Fields(info), " "), "written because: "+c.reason) {
				t.Errorf("trace not finalised by the stop:\n%s", info)
			}
			// the writer checks after each pass: at most a thread's buffer (4 MiB) more
			if fi, err := os.Stat(out); err != nil || (c.reason == "size limit" && fi.Size() > (2+4+1)<<20) {
				t.Errorf("trace size: %v, %v", fi.Size(), err)
			}
			_, calls := reportCalls(t, dir, out)
			if n := calls["work"]; n == 0 || n >= uint64(c.rounds*c.calls) {
				t.Errorf("%d calls of work recorded, want some but not all %d", n, c.rounds*c.calls)
			}
		})
	}
	// bad values are refused before the program runs
	for _, bad := range []string{"--size=0", "--size=12Q", "--size=-1M", "--duration=-1s"} {
		r := testenv.Exec(t, dir, ftrace, "record", bad, "--", prog, "1", "1")
		if r.Code == 0 || strings.Contains(r.Stdout, "rounds") {
			t.Errorf("%s: exit %d, stdout %q", bad, r.Code, r.Stdout)
		}
	}
}

// --duration bounds the run: a process of it (a fork child, an exec'd image, a program a
// wrapper ran) counts from the run's start, FTRACE_SESSION, not from its own (the nginx
// trial: workers a reload forked recorded a second past the limit).
func TestDurationCountsFromRunStart(t *testing.T) {
	dir := t.TempDir()
	prog := buildTraced(t, dir, "loop", loopSrc)
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct {
		ago    time.Duration // how long the run has lasted when the program starts
		reason string
	}{{0, "exit"}, {10 * time.Second, "duration limit"}} {
		out := filepath.Join(dir, "d.dat")
		cmd := exec.Command(prog, "40", "100")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_CONTROL=0", "FTRACE_OUTPUT="+out,
			"FTRACE_DURATION=5s", "FTRACE_SESSION="+strconv.FormatInt(time.Now().Add(-c.ago).UnixNano(), 10))
		if got, err := cmd.Output(); err != nil || string(got) != "rounds 40 sum 4000\n" {
			t.Fatalf("run begun %v ago: %v, output %q", c.ago, err, got)
		}
		info := strings.Join(strings.Fields(testenv.Run(t, dir, ftrace, "info", out)), " ")
		if !strings.Contains(info, "written because: "+c.reason) {
			t.Errorf("run begun %v ago: want the trace written because of %s:\n%s", c.ago, c.reason, info)
		}
		_, calls := reportCalls(t, dir, out)
		if n := calls["work"]; (c.ago == 0) != (n == 4000) {
			t.Errorf("run begun %v ago: %d calls of work recorded of 4000", c.ago, n)
		}
	}
}

// A directory on a read-only file system: the program runs, untraced where no trace can be
// written (the runtime says so), instead of ftrace refusing because removing a trace that
// is not there says EROFS, not ENOENT (found with GNU patch).
func TestRecordReadOnlyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only file system needs root")
	}
	dir := t.TempDir()
	prog := buildTraced(t, dir, "loop", loopSrc)
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o755)
	if err := syscall.Mount("tmpfs", ro, "tmpfs", syscall.MS_RDONLY, "size=1m"); err != nil {
		t.Skipf("mount: %v", err)
	}
	defer syscall.Unmount(ro, 0)
	r := testenv.Exec(t, ro, testenv.Tool(t, "ftrace"), "record", "--", prog, "1", "5")
	if r.Code != 0 || r.Stdout != "rounds 1 sum 5\n" {
		t.Errorf("record in a read-only directory: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	// why there is no trace, not a hint about linking (the bison trial)
	if !strings.Contains(r.Stderr, "cannot write in") || strings.Contains(r.Stderr, "linked with libftrt") {
		t.Errorf("record in a read-only directory: stderr %q", r.Stderr)
	}
}

// Too few descriptors for ftrace itself: a message and exit 1, not the Go runtime's fatal
// error and goroutine dump (its poller needs two; GNU patch trial at ulimit -n 6 and 7).
func TestTooFewDescriptors(t *testing.T) {
	testenv.Need(t, "sh")
	ftrace := testenv.Tool(t, "ftrace")
	for _, n := range []int{4, 5, 6, 7} {
		out, err := exec.Command("sh", "-c", "ulimit -n "+strconv.Itoa(n)+" && exec \"$0\" info /nonexistent.dat", ftrace).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Contains(string(out), "goroutine") ||
			!strings.Contains(string(out), "ftrace: ") {
			t.Errorf("ulimit -n %d: %v:\n%s", n, err, out)
		}
	}
}

// ftrace record killed (SIGKILL: nothing of it runs after) while its program runs with
// --size: the runtime still stops at the size, finalises the trace and runs on untraced.
func TestRecordKilledLimit(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", dir)
	prog := buildTraced(t, dir, "loop", loopSrc)
	ftrace := testenv.Tool(t, "ftrace")
	out := filepath.Join(dir, "k.dat")
	cmd := exec.Command(ftrace, "record", "-q", "-t", "function", "--size=1M", "-o", out, "--", prog, "200", "20000")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// the program's pid from its .part's name, then ftrace goes
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		parts, _ := filepath.Glob(out + ".*.part")
		if len(parts) == 1 {
			pid, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(parts[0], out+"."), ".part"))
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if pid == 0 {
		t.Fatal("the program's trace did not appear")
	}
	for deadline := time.Now().Add(60 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the program did not end")
		}
	}
	info := testenv.Run(t, dir, ftrace, "info", out)
	if !strings.Contains(strings.Join(strings.Fields(info), " "), "written because: size limit") {
		t.Errorf("trace not finalised at its size:\n%s", info)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() > (1+4+1)<<20 {
		t.Errorf("trace size: %v", err)
	}
}
