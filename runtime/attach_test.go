package ftrt_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// ftraceIn runs ftrace with args, with run as its XDG_RUNTIME_DIR (where it looks for
// control sockets).
func ftraceIn(ftrace, run string, args ...string) testenv.Result {
	cmd := exec.Command(ftrace, args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := testenv.Result{Stdout: so.String(), Stderr: se.String()}
	if err != nil {
		r.Code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.Code = ee.ExitCode()
		}
	}
	return r
}

// liveTicks switches p (trace_live.c) to tracer through live, has it call tick n times,
// and snapshots its trace to out.
func liveTicks(t *testing.T, p *liveProc, live func(args ...string) testenv.Result, tracer string, n int, out string) {
	t.Helper()
	if r := live("tracer", tracer); r.Code != 0 {
		t.Fatalf("live tracer: %q", r.Stderr)
	}
	fmt.Fprintf(p.stdin, "call %d\n", n)
	p.expect("done")
	if r := live("snapshot", out); r.Code != 0 {
		t.Fatalf("live snapshot: %q", r.Stderr)
	}
}

// Attach on demand: a program started with no ftkit variable has no extra thread and no
// socket; `ftrace live PID` starts its control server (through the attach signal, taken
// by a thread waiting in a system call), and tracing then works as with FTRACE_CONTROL=1.
// A program whose only thread computes is not interrupted where it could hold libc's
// locks: attach is refused with the reason, and works once the thread waits again. With
// FTRACE_ATTACH=0 the program offers nothing.
func TestTracerAttach(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	ftrace := testenv.Tool(t, "ftrace")
	run := t.TempDir()
	os.Chmod(run, 0o700)
	// live runs ftrace live [flags] PID args (flags: the leading "--" arguments and values)
	live := func(pid int, args ...string) testenv.Result {
		argv := []string{"live"}
		for len(args) > 1 && strings.HasPrefix(args[0], "--") {
			argv, args = append(argv, args[0], args[1]), args[2:]
		}
		return ftraceIn(ftrace, run, append(append(argv, fmt.Sprint(pid)), args...)...)
	}
	threads := threadsOf

	p := trStartLive(t, dir, prog, run)
	pid := p.cmd.Process.Pid
	sock := filepath.Join(run, fmt.Sprintf("ftkit-%d.sock", pid))
	if n := threads(pid); n != 1 {
		t.Errorf("untraced program has %d threads before attach, want 1", n)
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Fatalf("%s exists before attach", sock)
	}
	// the trace goes to the socket's private directory, not the program's
	if r := live(pid, "status"); r.Code != 0 || !strings.Contains(r.Stdout, "tracer=nop") ||
		!strings.Contains(r.Stdout, fmt.Sprintf("output=%s/ftrace-%d.dat ", run, pid)) {
		t.Fatalf("live status: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	out := filepath.Join(dir, "attached.dat")
	liveTicks(t, p, func(args ...string) testenv.Result { return live(pid, args...) }, "function_graph", 7, out)
	g := testenv.Run(t, dir, ftrace, "graph", out)
	if n := strings.Count(g, "tick();"); n != 7 {
		t.Errorf("graph of the attached process shows %d calls of tick, want 7:\n%s", n, g)
	}
	// finished: the trace is written, the server ends, nothing more to attach to (said at
	// once, the program not signalled again)
	if r := live(pid, "finish"); r.Code != 0 {
		t.Fatalf("live finish: %q", r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(run, fmt.Sprintf("ftrace-%d.dat", pid))); err != nil {
		t.Errorf("finished trace: %v", err)
	} else if tr := trRead(t, filepath.Join(run, fmt.Sprintf("ftrace-%d.dat", pid))); tr.Tracer != 2 {
		// started as nop, switched live: the header names the tracer that recorded
		t.Errorf("finished trace's header names tracer %d, want 2 (function_graph)", tr.Tracer)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "ftrace*")); len(m) != 0 {
		t.Errorf("files in the program's directory: %v", m)
	}
	for i := 0; i < 100 && threads(pid) != 1; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := threads(pid); n != 1 {
		t.Errorf("%d threads after finish, want 1 (the writer and the control server end)", n)
	}
	t0 := time.Now()
	if r := live(pid, "status"); r.Code == 0 || !strings.Contains(r.Stderr, "its trace was finished") || time.Since(t0) > time.Second {
		t.Errorf("attach after finish: %d %q (%v)", r.Code, r.Stderr, time.Since(t0))
	}
	fmt.Fprintln(p.stdin, "call 1")
	p.expect("done")

	// busy: its one thread never waits in a system call while we ask
	p = trStartLive(t, dir, prog, run)
	pid = p.cmd.Process.Pid
	fmt.Fprintln(p.stdin, "call 2000000000") // seconds
	time.Sleep(50 * time.Millisecond)
	r := live(pid, "--attach-timeout", "500ms", "status")
	if r.Code == 0 || !strings.Contains(r.Stderr, "waited in a system call") {
		t.Errorf("attach to a busy process: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	p.expect("done")
	if r := live(pid, "status"); r.Code != 0 {
		t.Errorf("attach once the program waits again: %q", r.Stderr)
	}

	// attached, asked for its status only, then ended: nothing was recorded, and no trace
	// is left in the socket's directory (the haproxy trial found one per attach)
	p = trStartLive(t, dir, prog, run)
	pid = p.cmd.Process.Pid
	if r := live(pid, "status"); r.Code != 0 {
		t.Fatalf("live status: %q", r.Stderr)
	}
	fmt.Fprintln(p.stdin, "quit")
	p.cmd.Wait()
	if m, _ := filepath.Glob(filepath.Join(run, fmt.Sprintf("ftrace-%d.dat*", pid))); len(m) != 0 {
		t.Errorf("an attach that recorded nothing left %v", m)
	}

	// FTRACE_ATTACH=0: nothing to attach to
	p = trStartLive(t, dir, prog, run, "FTRACE_ATTACH=0")
	if r := live(p.cmd.Process.Pid, "status"); r.Code == 0 || !strings.Contains(r.Stderr, "does not offer to start one") {
		t.Errorf("attach with FTRACE_ATTACH=0: %d %q", r.Code, r.Stderr)
	}
}

// A thread waiting in poll (which a signal handler ends with EINTR whatever SA_RESTART
// says) sees nothing of ftkit: attach asks the main thread, which waits in read (restarted),
// not every waiting thread (the nginx trial: workers logged epoll_wait's EINTR), and the
// tracer switches and filter changes that follow signal neither. (The rounds that release
// trampolines and park threads: TestSleepers.)
func TestTracerAttachSparesPolls(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	ftrace := testenv.Tool(t, "ftrace")
	run := t.TempDir()
	os.Chmod(run, 0o700)
	p := trStartLive(t, dir, prog, run)
	pid := fmt.Sprint(p.cmd.Process.Pid)
	fmt.Fprintln(p.stdin, "poller")
	p.expect("polling")
	live := func(args ...string) {
		t.Helper()
		if r := ftraceIn(ftrace, run, append([]string{"live", pid}, args...)...); r.Code != 0 {
			t.Fatalf("live %v: %d %q", args, r.Code, r.Stderr)
		}
	}
	live("status")
	for i := 0; i < 4; i++ {
		for _, tr := range []string{"function_graph", "function", "nop"} {
			live("tracer", tr)
			live("filter", "tick")
			fmt.Fprintln(p.stdin, "call 100")
			p.expect("done")
			live("filter", "*")
		}
	}
	live("finish")
	fmt.Fprintln(p.stdin, "eintr")
	p.expect("eintr 0")
}

// A daemon's child (trace_forkdaemon.c: fork, the parent exits) of a program traced with a
// control socket has none of its own (the parent's server stayed in the parent), but
// offers attaching: `ftrace live CHILD` starts its server, and controls the child's trace
// (the redis trial: a daemonized server could not be controlled live at all).
func TestTracerAttachDaemonChild(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_forkdaemon.c")
	run := t.TempDir()
	os.Chmod(run, 0o700)
	out := filepath.Join(dir, "d.dat")
	cmd := exec.Command(prog)
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+out, "XDG_RUNTIME_DIR="+run)
	b, err := cmd.Output()
	var child int
	if _, serr := fmt.Sscanf(string(b), "%d", &child); err != nil || serr != nil || child <= 0 {
		t.Fatalf("program: %q %v", b, err)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	ftrace := testenv.Tool(t, "ftrace")
	if r := ftraceIn(ftrace, run, "live", fmt.Sprint(child), "status"); r.Code != 0 ||
		!strings.Contains(r.Stdout, fmt.Sprintf("output=%s.%d ", out, child)) {
		t.Fatalf("live status of the daemon: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	snap := filepath.Join(dir, "snap.dat")
	time.Sleep(100 * time.Millisecond)
	if r := ftraceIn(ftrace, run, "live", fmt.Sprint(child), "snapshot", snap); r.Code != 0 {
		t.Fatalf("live snapshot: %q", r.Stderr)
	}
	if rep := testenv.Run(t, dir, ftrace, "report", snap); !regexp.MustCompile(`(?m)^\s+\d+\s+leaf\b`).MatchString(rep) {
		t.Errorf("snapshot of the daemon:\n%s", rep)
	}
	// FTRACE_ATTACH=0: the child offers nothing either
	cmd = exec.Command(prog)
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+out, "XDG_RUNTIME_DIR="+run, "FTRACE_ATTACH=0")
	if b, err = cmd.Output(); err != nil {
		t.Fatal(err)
	}
	fmt.Sscanf(string(b), "%d", &child)
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if r := ftraceIn(ftrace, run, "live", "--attach-timeout", "1s", fmt.Sprint(child), "status"); r.Code == 0 ||
		!strings.Contains(r.Stderr, "does not offer") {
		t.Errorf("live status of the daemon with FTRACE_ATTACH=0: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
}

// As root, `ftrace live` on another user's process says whose it is and leaves it alone:
// its socket is in that user's directory, and the attach signal would make it start a
// server and a trace file for nothing (the nginx trial: root was told it "did not start
// one within 3s", after signalling a worker that ran as nobody).
func TestTracerLiveOtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (to run the program as nobody)")
	}
	testenv.Need(t, "setpriv")
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	prog := trBuild(t, dir, "trace_live.c")
	run := t.TempDir()
	os.Chmod(run, 0o700)
	p := trStartLiveCmd(t, dir, exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", prog), run)
	pid := p.cmd.Process.Pid
	r := ftraceIn(testenv.Tool(t, "ftrace"), run, "live", fmt.Sprint(pid), "status")
	if r.Code == 0 || !strings.Contains(r.Stderr, "runs as uid 65534") || !strings.Contains(r.Stderr, "not signalled") {
		t.Errorf("live on nobody's process: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	fmt.Fprintln(p.stdin, "call 2")
	p.expect("done")
	if n := threadsOf(pid); n != 1 {
		t.Errorf("the process has %d threads: it was attached", n)
	}
}

func threadsOf(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(ents)
}
