package ftrt_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// fib(24) makes 75,025 calls: well past the 300 KiB RLIMIT_FSIZE of trace_limits' "fsize".
const limitsOut = "fib 46368\n"

func trCount(tr *trTrace) (n int) {
	for _, th := range tr.Threads {
		n += len(th.Recs)
	}
	return n
}

// A file-size limit below what the trace needs: the runtime's writes fail with EFBIG and
// the events are counted as lost; the program is not killed by SIGXFSZ (it was, exit 153).
func TestTracerFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	for _, tracer := range []string{"function", "function_graph"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + tracer + ".dat"}, "fsize")
		if out != limitsOut || ws.Signaled() || ws.ExitStatus() != 0 {
			t.Errorf("%s: output %q, status %v (signal %v)", tracer, out, ws.ExitStatus(), ws.Signal())
		}
	}
}

// Size variables out of range are refused with one message and the default applies
// (-1 was taken for ULONG_MAX KiB and killed the program with SIGBUS; 99999999999 KiB
// recorded nothing, silently).
func TestTracerBadBufferVariable(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	for _, v := range []string{"-1", "-5", "18014398509481983", "99999999999", "12k", " 64", "0"} {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_NO_LOSS=1", "FTRACE_BUFFER_KB="+v)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != limitsOut {
			t.Errorf("FTRACE_BUFFER_KB=%q: %v, output %q\n%s", v, err, out, stderr.String())
			continue
		}
		if n := strings.Count(stderr.String(), "ignoring FTRACE_BUFFER_KB="+v+" (not a whole number from 4 to 4194304)"); n != 1 {
			t.Errorf("FTRACE_BUFFER_KB=%q: said %d times:\n%s", v, n, stderr.String())
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		trCheckComplete(t, tr, 1)
		if n := trCount(tr); n != 75025+1 {
			t.Errorf("FTRACE_BUFFER_KB=%q: %d records, want every call (the default buffer)", v, n)
		}
	}
	// a reserve that is no size was dropped without a word
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_NO_LOSS=1", "FTRACE_DISK_RESERVE=abc")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || string(out) != limitsOut {
		t.Fatalf("FTRACE_DISK_RESERVE=abc: %v, output %q\n%s", err, out, stderr.String())
	}
	if n := strings.Count(stderr.String(), "ignoring FTRACE_DISK_RESERVE: not a size"); n != 1 {
		t.Errorf("FTRACE_DISK_RESERVE=abc: said %d times:\n%s", n, stderr.String())
	}
	trCheckComplete(t, trRead(t, filepath.Join(dir, "ftrace.dat")), 1)
}

// A relative FTRACE_OUTPUT is where the program started, even after chdir (a daemon's
// trace stayed .part: "cannot finalise").
func TestTracerOutputAfterChdir(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	elsewhere := t.TempDir()
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=rel.dat"}, "chdir", elsewhere)
	if out != limitsOut || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "rel.dat"))
	trCheckComplete(t, tr, 1)
	if m, _ := filepath.Glob(filepath.Join(elsewhere, "*")); len(m) != 0 {
		t.Errorf("files in the new directory: %v", m)
	}
	st, err := os.Stat(filepath.Join(dir, "rel.dat"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("trace mode %v (%v), want 0600: it holds the command line and address layout", st.Mode(), err)
	}
}

// The .part name is predictable (<output>.<pid>.part): a symlink planted there must not
// make the runtime write through it (it truncated the target).
func TestTracerPartSymlink(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	victim := filepath.Join(t.TempDir(), "victim")
	const text = "precious\n"
	if err := os.WriteFile(victim, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		t.Skipf("cannot predict pids: %v", err)
	}
	last, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for pid := last + 1; pid < last+3000; pid++ {
		if err := os.Symlink(victim, filepath.Join(dir, "s.dat."+strconv.Itoa(pid)+".part")); err != nil {
			t.Fatal(err)
		}
	}
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=s.dat"})
	if out != limitsOut || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	if got, _ := os.ReadFile(victim); string(got) != text {
		t.Fatalf("the symlink's target was written: %d bytes, starting %q", len(got), got[:min(len(got), 8)])
	}
	tr := trRead(t, filepath.Join(dir, "s.dat"))
	trCheckComplete(t, tr, 1)
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, "s.dat"), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Errorf("trace is not a regular file: %v %o", err, st.Mode)
	}
}

// secureUser returns the uid and gid of an unprivileged user for the setuid tests,
// creating it when missing; it skips when the tests do not run as root.
func secureUser(t *testing.T) (uint32, uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the setuid/setgid tests need root (to make a setuid-root program and a second user)")
	}
	testenv.Need(t, "setpriv", "useradd")
	const name = "ftkit-unpriv"
	if exec.Command("id", "-u", name).Run() != nil {
		if out, err := exec.Command("useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			t.Skipf("useradd: %v\n%s", err, out)
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uint32(uid), uint32(gid)
}

// A setuid-root (and a setgid) program linked with the runtime, run by an ordinary user
// with FTRACE_* set: nothing is traced, no file written or replaced in root's name, no
// directory or control socket created (the invoker replaced a root file by a trace).
func TestTracerSecureExecution(t *testing.T) {
	uid, gid := secureUser(t)
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	for p := dir; p != "/tmp" && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the user must reach the program
	}
	secret := filepath.Join(t.TempDir(), "root-only") // 0700, root's
	victim := filepath.Join(secret, "victim")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("root data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	userRun := t.TempDir() // an XDG_RUNTIME_DIR the user owns
	os.Chown(userRun, int(uid), int(gid))
	os.Chmod(userRun, 0o700)
	for _, mode := range []os.FileMode{os.ModeSetuid | 0o755, os.ModeSetgid | 0o755} {
		if err := os.Chmod(prog, mode); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(int(uid)), "--regid="+strconv.Itoa(int(gid)), "--clear-groups", prog)
		cmd.Dir = "/"
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+victim, "FTRACE_CONTROL=1",
			"XDG_RUNTIME_DIR="+userRun)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != limitsOut {
			t.Fatalf("%v: %v, output %q\n%s", mode, err, out, stderr.String())
		}
		if got, _ := os.ReadFile(victim); string(got) != "root data\n" {
			t.Errorf("%v: the root-owned file was replaced (%d bytes)", mode, len(got))
		}
		if m, _ := filepath.Glob(filepath.Join(secret, "*")); len(m) != 1 {
			t.Errorf("%v: files created in root's directory: %v", mode, m)
		}
		if m, _ := filepath.Glob(filepath.Join(userRun, "*")); len(m) != 0 {
			t.Errorf("%v: control socket created for the invoker: %v", mode, m)
		}
		if !strings.Contains(stderr.String(), "secure-execution mode") {
			t.Errorf("%v: no word that the variables were ignored:\n%s", mode, stderr.String())
		}
	}
}

// A handler that chains to the one it replaced: traced, that is the runtime's finalising
// handler, which re-raised the signal with the default action (exit 138 for SIGUSR1).
func TestTracerSignalChain(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_chain.c")
	const want = "handled 2, work 42\n"
	for _, tracer := range []string{"", "function", "function_graph"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer})
		if out != want || ws.Signaled() || ws.ExitStatus() != 0 {
			t.Errorf("tracer %q: output %q, exit %d, signal %v", tracer, out, ws.ExitStatus(), ws.Signal())
		}
		if tracer != "" {
			tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
			trCheckComplete(t, tr, 1) // finalised at exit, not by the chained signal
		}
	}
}

// A program that closes every descriptor and puts its own file on the runtime's numbers:
// the runtime reopens its trace file by name and never writes into the program's (its
// file at fd 768 was overwritten with 16 MB of trace data).
func TestTracerDescriptorReplaced(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	for _, tracer := range []string{"function", "function_graph"} {
		counts := map[string]int{}
		for _, mode := range []string{"keepall", "closeall"} {
			out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + mode + ".dat"}, mode, filepath.Join(dir, "mine"))
			if out != "fib 53133, file intact\n" || ws.ExitStatus() != 0 {
				t.Fatalf("%s %s: output %q status %v", tracer, mode, out, ws.ExitStatus())
			}
			tr := trRead(t, filepath.Join(dir, mode+".dat"))
			trCheckComplete(t, tr, 1)
			counts[mode] = trCount(tr)
			// and at exit, after the program's own check (the command line written
			// again for its new title went through the program's descriptor once)
			if b, err := os.ReadFile(filepath.Join(dir, "mine")); err != nil || string(b) != "the program's own data\n" {
				t.Errorf("%s %s: the program's file after exit: %d bytes %q (%v)", tracer, mode, len(b), b[:min(len(b), 40)], err)
			}
		}
		// every call recorded, as when the program keeps its descriptors
		if counts["closeall"] != counts["keepall"] || counts["keepall"] == 0 {
			t.Errorf("%s: %d records after the descriptors were replaced, %d without", tracer, counts["closeall"], counts["keepall"])
		}
	}
}

// The patcher's /proc/self/mem descriptor is open during a batch only; a program that
// closes every descriptor and moves its own file onto the runtime's first number, then
// makes the runtime patch (register, filter, unregister): the patcher opens /proc/self/mem
// again and patches; it neither reads nor writes code through the program's file (when it
// kept the descriptor, it once refused every site as "not mapped", reading the file).
func TestTracerMemDescriptorReplaced(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_memfd.c")
	const want = "sum 175 hits 10 0 5 8 (8), file intact\n"
	for _, tracer := range []string{"", "function", "function_graph"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer}, filepath.Join(dir, "mine"))
		if out != want || ws.ExitStatus() != 0 {
			t.Errorf("tracer %q: output %q status %v, want %q", tracer, out, ws, want)
		}
		if tracer != "" {
			trCheckComplete(t, trRead(t, filepath.Join(dir, "ftrace.dat")), 1)
		}
	}
}

// When /proc/self/mem cannot be opened (the program closed every descriptor, then lowered
// RLIMIT_NOFILE so that none can be opened), the runtime says so once and patches through
// mprotect; the program computes the same and its file is never touched.  What
// needs a descriptor besides (listing the threads to wait for their callbacks) fails
// with -EMFILE and changes nothing: registrations stay as they were.
func TestTracerMemFallback(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_memfd.c")
	cmd := exec.Command(prog, filepath.Join(dir, "mine"), "limit")
	cmd.Dir = dir
	cmd.Env = trCleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	last := string(out)
	if i := strings.LastIndex(last[:max(len(last)-1, 0)], "\n"); i >= 0 {
		last = last[i+1:]
	}
	if err != nil || !strings.HasPrefix(last, "sum 175 hits 10 ") || !strings.HasSuffix(last, ", file intact\n") {
		t.Fatalf("output %q (%v), stderr %q", out, err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), last), "\n") {
		if line != "" && !strings.HasSuffix(line, fmt.Sprintf(": %d", -int(syscall.EMFILE))) && !strings.HasSuffix(line, fmt.Sprintf(": %d", -int(syscall.EINVAL))) {
			t.Errorf("an API call failed otherwise than for want of a descriptor: %q", line)
		}
	}
	if n := strings.Count(stderr.String(), "code is written through mprotect while it cannot be"); n != 1 {
		t.Errorf("the fallback said %d times (want once):\n%s", n, stderr.String())
	}
}

// trEntries counts the records of type typ (graph: 2 entry) of function fn.
func trEntries(t *testing.T, tr *trTrace, prog, fn string, typ uint16) (n int) {
	s := trSymbols(t, tr, prog)
	for _, th := range tr.Threads {
		for _, r := range th.Recs {
			if r.Type == typ && s.name(r.IP) == fn {
				n++
			}
		}
	}
	return n
}

// trWaitFile waits up to 10 s for path to exist (a daemon's files, written after the
// process the test started has ended).
func trWaitFile(t *testing.T, path string) []byte {
	t.Helper()
	for i := 0; i < 200; i++ {
		if d, err := os.ReadFile(path); err == nil {
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
	return nil
}

// daemon() leaves the parent through libc's internal _exit: its trace stayed .part with
// none of its records.  The parent's trace is now complete (reason exit) with its calls,
// the child's is <output>.<childpid>; daemon() does what glibc's does (session, directory,
// /dev/null), traced or not.
func TestTracerDaemon(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_daemon.c")
	for _, n := range []string{"0", "1"} {
		want := map[string]string{"0": " sid 1 cwd / stdout /dev/null sum 62\n", "1": " sid 1 cwd " + dir + " stdout "}[n]
		for _, tracer := range []string{"", "function_graph"} {
			sub := t.TempDir()
			res := filepath.Join(sub, "res")
			out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + filepath.Join(sub, "t.dat")}, n, res)
			var ppid, cpid int
			if _, err := fmt.Sscanf(out, "parent %d\n", &ppid); err != nil || ws.ExitStatus() != 0 {
				t.Fatalf("daemon(%s) %q: output %q status %v", n, tracer, out, ws)
			}
			got := string(trWaitFile(t, res))
			if _, err := fmt.Sscanf(got, "%d ", &cpid); err != nil || !strings.Contains(got, want) || !strings.HasSuffix(got, " sum 62\n") {
				t.Fatalf("daemon(%s) %q: child wrote %q, want %q", n, tracer, got, want)
			}
			if tracer == "" {
				continue
			}
			trWaitFile(t, filepath.Join(sub, "t.dat."+strconv.Itoa(cpid)))
			time.Sleep(100 * time.Millisecond) // renamed when complete; let the child end
			m, _ := filepath.Glob(filepath.Join(sub, "t.dat*"))
			if len(m) != 2 {
				t.Errorf("daemon(%s): files %v, want t.dat and t.dat.%d", n, m, cpid)
			}
			parent := trRead(t, filepath.Join(sub, "t.dat"))
			trCheckComplete(t, parent, 1)
			child := trRead(t, filepath.Join(sub, "t.dat."+strconv.Itoa(cpid)))
			trCheckComplete(t, child, 1)
			if int(parent.PID) != ppid || int(child.PID) != cpid {
				t.Errorf("daemon(%s): pids %d %d, want %d %d", n, parent.PID, child.PID, ppid, cpid)
			}
			if pw, cw := trEntries(t, parent, prog, "work", 2), trEntries(t, child, prog, "work", 2); pw != 5 || cw != 7 {
				t.Errorf("daemon(%s): work entered %d times in the parent's trace (want 5), %d in the child's (want 7)", n, pw, cw)
			}
		}
	}
}

// The runtime's pthread_create wrapper called malloc: with a program's own instrumented
// malloc, that call was recorded as one the program made (from main or the wrapper).
func TestTracerOwnMalloc(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_mymalloc.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function"})
	if out != "threads allocated at least 4\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	s := trSymbols(t, tr, prog)
	fromWorkers, fromRuntime := 0, 0
	for _, th := range tr.Threads {
		for _, r := range th.Recs {
			if s.name(r.IP) != "malloc" || r.Aux == 0 {
				continue
			}
			switch caller := s.name(r.Aux - 1); caller {
			case "worker":
				fromWorkers++
			case "main", "pthread_create":
				fromRuntime++
			}
		}
	}
	if fromWorkers != 4 || fromRuntime != 0 {
		t.Errorf("malloc called %d times by the workers (want 4) and %d times from main/pthread_create (want 0)", fromWorkers, fromRuntime)
	}
}

// Children started with an explicit environment (posix_spawn, execve, execvp after
// environ is replaced, as libuv's uv_spawn does) are traced when the parent is, as with
// its own environment; FTRACE_INHERIT=0 opts out.
func TestTracerChildEnvironment(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_spawn.c")
	for _, inherit := range []string{"", "0"} {
		sub := t.TempDir()
		env := []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=" + filepath.Join(sub, "t.%p.dat")}
		if inherit != "" {
			env = append(env, "FTRACE_INHERIT="+inherit)
		}
		out, ws := trRun(t, dir, prog, env)
		if out != "children 0 0 0\n" || ws.ExitStatus() != 0 {
			t.Fatalf("FTRACE_INHERIT=%q: output %q status %v", inherit, out, ws)
		}
		files, _ := filepath.Glob(filepath.Join(sub, "t.*.dat"))
		children := 0
		for _, f := range files {
			tr := trRead(t, f)
			trCheckComplete(t, tr, 1)
			switch n := trCalls(tr, trSymbols(t, tr, prog), "work"); n {
			case 7:
				children++
			case 1: // the parent
			default:
				t.Errorf("%s: %d calls of work", f, n)
			}
		}
		if want := map[string]int{"": 3, "0": 0}[inherit]; children != want || len(files) != want+1 {
			t.Errorf("FTRACE_INHERIT=%q: %d traces, %d of children; want %d children traced", inherit, len(files), children, want)
		}
	}
}

// The writer thread's descriptor table of its own holds only the trace file and takes
// nothing from the program: a POSIX lock taken before the trace started is still held
// after the writer closed its copies (the lock belongs to the program's table), and a
// pipe end the program closes is not kept open by the writer.
func TestTracerWriterTable(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fdtable.c")
	out, ws := trRun(t, dir, prog, nil, filepath.Join(dir, "lockfile"), filepath.Join(dir, "t.dat"))
	if want := "writer fds 1, lock held, pipe read 0, fib 6765\n"; out != want || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v, want %q", out, ws, want)
	}
	trCheckComplete(t, trRead(t, filepath.Join(dir, "t.dat")), 1)
}

// Descriptor limits from 4 to 8: the program prints what it prints untraced, and a control
// socket directory that cannot be opened (EMFILE) is never said to be "not private" (the m4
// trial; since the patcher holds /proc/self/mem during batches only, such limits no
// longer leave the directory unopenable at start: the message is checked where it can be).
func TestTracerControlDirEMFILE(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	plain, _ := trRun(t, dir, prog, nil, "5")
	for n := 4; n <= 8; n++ {
		cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n %d && exec %s 5", n, prog))
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "XDG_RUNTIME_DIR=")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != plain {
			t.Errorf("ulimit -n %d: output %q (%v), untraced %q", n, out, err, plain)
		}
		if strings.Contains(stderr.String(), "not a private directory") {
			t.Errorf("ulimit -n %d: %s", n, stderr.String())
		}
	}
}

// A write failure of the writer thread (here RLIMIT_FSIZE) is said while the program
// runs, by one of its threads, not at exit only: a program that closes stderr before it
// exits (gnulib's close_stdout: the m4 trial) still shows it.
func TestTracerWriteErrorSaidEarly(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_closeerr.c")
	for _, tracer := range []string{"function", "function_graph"} {
		cmd := exec.Command("sh", "-c", "ulimit -f 128 && exec "+prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER="+tracer)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != "59898\n" {
			t.Errorf("%s: output %q (%v)", tracer, out, err)
		}
		if n := strings.Count(stderr.String(), "cannot write the trace file, events are lost"); n != 1 {
			t.Errorf("%s: the write failure said %d times (want once, before stderr was closed):\n%s", tracer, n, stderr.String())
		}
		// finalised all the same: its tables written where its events stopped (the file cut
		// back to make room if need be: TestTracerFileSizeLimit); a .part, which it was
		// when its last chunks did not fit, must not say complete (the gawk trial)
		parts, _ := filepath.Glob(filepath.Join(dir, "ftrace.dat.*.part"))
		if _, err := os.Stat(filepath.Join(dir, "ftrace.dat")); err != nil || len(parts) != 0 {
			t.Errorf("%s: .part files %v, final file: %v; want the final file only", tracer, parts, err)
		}
		for _, p := range parts {
			h, err := os.ReadFile(p)
			if err != nil || len(h) < 20 || binary.LittleEndian.Uint32(h[16:])&1 != 0 {
				t.Errorf("%s: %s: header flags say complete (%v)", tracer, p, err)
			}
			os.Remove(p)
		}
		os.Remove(filepath.Join(dir, "ftrace.dat"))
	}
}

// A descriptor limit at which the tracer cannot be registered (waiting for callbacks needs
// /proc/self/task): the runtime gives the trace file's descriptor back, and the program,
// which needs one of its own, runs untraced as it does without tracing (zstd trial: it
// failed with EMFILE while the runtime held a file it could not use).
func TestTracerUnregisterableGivesBack(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_openself.c")
	cmd := exec.Command("sh", "-c", "ulimit -n 4 && exec "+prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "XDG_RUNTIME_DIR=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != "fib 55\n" {
		t.Errorf("output %q (%v), stderr:\n%s", out, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "cannot register the function_graph tracer") {
		t.Skipf("the tracer was registered at this limit here (nothing to give back):\n%s", stderr.String())
	}
}

// A file-size limit reached in the middle of a chunk: the file is cut back to its last
// whole chunk, so a smaller write that fits later does not leave the torn rest after it
// (flex under ulimit -f: a trace flagged complete that every reader refused at the torn
// chunk), and finalising fits the tables in, cutting back whole chunks if need be: the
// trace is complete, every reader reads it, and its recorded and lost events add up to
// the run's, the lost ones said as lost, not as blocks missing.
func TestTracerFileSizeLimitTorn(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	ftrace := testenv.Tool(t, "ftrace")
	for _, tracer := range []string{"function", "function_graph"} {
		full := filepath.Join(dir, tracer+"-full.dat")
		plain, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + full}, "25")
		want := 0
		for _, th := range trRead(t, full).Threads {
			want += len(th.Recs)
		}
		for run := 0; run < 4; run++ {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d.dat", tracer, run))
			cmd := exec.Command("sh", "-c", "ulimit -f 512 && exec \"$0\" 25", prog)
			cmd.Dir = dir
			cmd.Env = append(trCleanEnv(), "FTRACE_TRACER="+tracer, "FTRACE_OUTPUT="+out)
			got, err := cmd.Output()
			if err != nil || string(got) != plain {
				t.Fatalf("%s: output %q (%v), untraced %q", tracer, got, err, plain)
			}
			tr := trRead(t, out)
			if tr.Flags&1 == 0 || tr.Flags&0x10 == 0 {
				t.Errorf("%s run %d: flags %#x, want complete and write-error", tracer, run, tr.Flags)
			}
			recorded, lost := 0, uint64(0)
			for _, th := range tr.Threads {
				recorded += len(th.Recs)
				lost += th.Lost
			}
			if lost == 0 || float64(recorded)+float64(lost) < 0.999*float64(want) ||
				float64(recorded)+float64(lost) > 1.001*float64(want) {
				t.Errorf("%s run %d: %d recorded + %d lost, the run had %d", tracer, run, recorded, lost, want)
			}
			for _, c := range [][]string{{"info", out}, {"report", out}, {"graph", "-n", "5", out}} {
				r := testenv.Exec(t, dir, ftrace, c...)
				// the loss is said, and not blamed on a writer that could not keep up
				said, want := r.Stderr, "could not be written in full"
				if c[0] == "info" {
					said, want = r.Stdout, "write-error" // in its flags line
				}
				// blocks the writer could not write are lost events, counted, not blocks
				// missing from the file (warned in 3 of 5 runs before DROPPED)
				if r.Code != 0 || strings.Contains(r.Stderr, "bad size") || strings.Contains(said, "record with --no-loss") ||
					!strings.Contains(said, want) || strings.Contains(r.Stderr, "blocks missing") {
					t.Errorf("%s run %d: ftrace %s: exit %d\n%s", tracer, run, c[0], r.Code, r.Stderr)
				}
			}
		}
	}
}

// A program's own handler that passes the signal on with its default action (GNU patch
// under kill -TERM): the process still dies of the signal, and its trace is finalised
// (complete, ended by that signal, every call recorded) where it stayed a .part.
func TestTracerProgramReraises(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_reraise.c")
	for _, how := range []string{"raise", "kill", "killpg", "sigqueue", "pthread_kill", "sigwait"} {
		for _, tracer := range []string{"function", "function_graph"} {
			out := filepath.Join(dir, how+"-"+tracer+".dat")
			cmd := exec.Command(prog, how)
			// its own process group, so that kill(0, sig) ends no one else
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			got, ws := trRunCmd(t, dir, prog, cmd, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + out})
			wantOut, wantCalls, wantReason := "s=1000\ncleaning up\n", 1000, uint32(2)
			if how == "sigwait" {
				wantOut, wantReason = "s=1000 got=1\n", 1
				if ws.Signaled() || ws.ExitStatus() != 0 {
					t.Fatalf("%s %s: status %v, want exit 0", how, tracer, ws)
				}
			} else if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("%s %s: status %v, want killed by SIGTERM", how, tracer, ws)
			}
			if got != wantOut {
				t.Fatalf("%s %s: output %q, want %q", how, tracer, got, wantOut)
			}
			tr := trRead(t, out)
			if tr.Flags&1 == 0 || tr.Reason != wantReason || (wantReason == 2 && tr.Signal != uint32(syscall.SIGTERM)) {
				t.Errorf("%s %s: flags %#x reason %d signal %d, want complete, reason %d", how, tracer, tr.Flags, tr.Reason, tr.Signal, wantReason)
			}
			s := trSymbols(t, tr, prog)
			calls := 0
			for _, th := range tr.Threads {
				for _, r := range th.Recs {
					if (r.Type == 1 || r.Type == 2) && s.name(r.IP) == "work" {
						calls++
					}
				}
			}
			if calls != wantCalls {
				t.Errorf("%s %s: %d calls of work recorded, want %d", how, tracer, calls, wantCalls)
			}
		}
	}
}

// Two terminating signals in a row (timeout(1) signals the child and then its group; the
// pigz trial): the second, taken by another thread, waited for nothing and ended the
// process while the first one's handler wrote the trace, which stayed a .part (1 to 2 runs
// in 10 here, half of them on the trial's machine). Now every run's trace is final.
func TestTracerDoubleSignal(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_dblterm.c")
	for _, tracer := range []string{"function", "function_graph"} {
		for run := 0; run < 20; run++ {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d.dat", tracer, run))
			cmd := exec.Command(prog)
			cmd.Dir = dir
			cmd.Env = append(trCleanEnv(), "FTRACE_TRACER="+tracer, "FTRACE_OUTPUT="+out)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 6)
			if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "ready\n" {
				t.Fatalf("%s: %q %v", tracer, buf, err)
			}
			time.Sleep(20 * time.Millisecond) // events to write at the end
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("%s run %d: status %v, want killed by SIGTERM", tracer, run, ws)
			}
			if _, err := os.Stat(out); err != nil {
				t.Fatalf("%s run %d: no final trace (%v): the second signal cut the first one's write", tracer, run, err)
			}
			if tr := trRead(t, out); tr.Flags&1 == 0 {
				t.Errorf("%s run %d: flags %#x, want complete", tracer, run, tr.Flags)
			}
		}
	}
}

// A trace stops short of filling its file system: a program that spins under the graph
// tracer on a 64 MiB tmpfs leaves the reserve (5 %) free, its trace complete and readable,
// flagged WRITE_ERROR, the events it could not write counted lost (the pigz trial filled a
// shared disk with 47 GB). FTRACE_DISK_RESERVE=0 fills it, as before.
func TestTracerDiskReserve(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_dblterm.c")
	fs := filepath.Join(dir, "fs")
	os.Mkdir(fs, 0o755)
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("mount: %v", err)
	}
	defer syscall.Unmount(fs, 0)
	for _, c := range []struct {
		env     string
		minFree uint64
	}{{"", 1 << 20}, {"FTRACE_DISK_RESERVE=0", 0}} {
		out := filepath.Join(fs, "t.dat")
		cmd := exec.Command(prog)
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+out, "FTRACE_BUFFER_KB=256", c.env)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// gigabytes a minute: the file system is full to its reserve (5 %, 3.2 MiB) in
		// well under a second on a quiet machine, but not on a loaded one (CI)
		var sf syscall.Statfs_t
		freeNow := func() uint64 {
			if err := syscall.Statfs(fs, &sf); err != nil {
				t.Fatal(err)
			}
			return sf.Bavail * uint64(sf.Bsize)
		}
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && freeNow() > 8<<20; {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // the writer's next passes meet the reserve
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		free := freeNow()
		if c.minFree > 0 {
			if free < c.minFree {
				t.Errorf("%q: %d bytes left free, want at least %d", c.env, free, c.minFree)
			}
			if !strings.Contains(stderr.String(), "nearly full") {
				t.Errorf("%q: stderr %q, want the reserve said", c.env, stderr.String())
			}
			tr := trRead(t, out)
			var lost uint64
			for _, th := range tr.Threads {
				lost += th.Lost
			}
			if tr.Flags&1 == 0 || tr.Flags&0x10 == 0 || lost == 0 {
				t.Errorf("%q: flags %#x, %d lost; want complete, write-error, events lost", c.env, tr.Flags, lost)
			}
		} else if free > 1<<20 {
			t.Errorf("%q: %d bytes left free: did the reserve apply?", c.env, free)
		}
		os.Remove(out)
		matches, _ := filepath.Glob(out + "*")
		for _, m := range matches {
			os.Remove(m)
		}
	}
}

// Under a small open-file limit the runtime leaves the program every descriptor but the
// trace file's, which takes the highest number, so open() returns what it does untraced
// (ulimit -n 5 gave the program 4 where it had 3): the control socket, on by default with a tracer, is not started (pigz
// under ulimit -n 6 failed traced only); asked for (FTRACE_CONTROL=1) it is, and takes one.
func TestTracerFewDescriptors(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limits.c")
	var plainFirst int
	opened := func(env ...string) int {
		t.Helper()
		out, ws := trRunCmd(t, dir, prog, exec.Command("sh", "-c", "ulimit -n 16 && exec \"$0\" nofile", prog), env)
		var f, k, first int
		if _, err := fmt.Sscanf(out, "fib %d, opened %d, first %d\n", &f, &k, &first); err != nil || ws.ExitStatus() != 0 || f != 46368 {
			t.Fatalf("%v: output %q, status %v", env, out, ws)
		}
		// the runtime's descriptors take the top numbers: open() returns what it does untraced
		if env == nil {
			plainFirst = first
		} else if first != plainFirst {
			t.Errorf("%v: the program's first open() returned %d, %d untraced", env, first, plainFirst)
		}
		return k
	}
	plain := opened()
	for _, c := range []struct {
		env  []string
		want int
	}{
		{[]string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=f.dat"}, plain - 1},
		{[]string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=g.dat"}, plain - 1},
		{[]string{"FTRACE_TRACER=function", "FTRACE_CONTROL=1", "FTRACE_OUTPUT=c.dat"}, plain - 2},
		// over the trace of the first run: at exit no descriptor is left to read it with,
		// but it is the file checked at the start, unchanged, so it is replaced
		{[]string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=f.dat"}, plain - 1},
	} {
		if got := opened(c.env...); got != c.want {
			t.Errorf("%v: the program opened %d descriptors, %d untraced (want %d)", c.env, got, plain, c.want)
		}
	}
	trCheckComplete(t, trRead(t, filepath.Join(dir, "g.dat")), 1)
	if parts, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(parts) != 0 {
		t.Errorf("traces left unfinished: %v", parts)
	}
	// two numbers above 0..2: the trace takes 4, the program's open() still returns 3
	five := func(env ...string) string {
		out, ws := trRunCmd(t, dir, prog, exec.Command("sh", "-c", "ulimit -n 5 && exec \"$0\" nofile", prog), env)
		if ws.ExitStatus() != 0 {
			t.Errorf("%v: status %v", env, ws)
		}
		return out
	}
	if p5, t5 := five(), five("FTRACE_TRACER=function", "FTRACE_OUTPUT=five.dat"); p5 != "fib 46368, opened 2, first 3\n" ||
		t5 != "fib 46368, opened 1, first 3\n" {
		t.Errorf("ulimit -n 5: untraced %q, traced %q", p5, t5)
	}
	trCheckComplete(t, trRead(t, filepath.Join(dir, "five.dat")), 1)
}

// A traced program run under valgrind's leak check, as test suites run theirs (jq's
// `make check` with --leak-check=full --error-exitcode=1): the runtime leaves nothing
// "definitely" or "possibly lost". The replaced memory-map images were dropped by the
// compiler from the array that kept them, and the control server thread still ran at
// exit (its thread memory "possibly lost"): the zstd/jq trial's suite failed traced.
func TestTracerValgrindClean(t *testing.T) {
	testenv.Need(t, "valgrind")
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_threads.c")
	want, _ := trRun(t, dir, prog, nil)
	for _, env := range [][]string{
		{"FTRACE_TRACER=function"},
		{"FTRACE_TRACER=function_graph"},
		{"FTRACE_TRACER=function_graph", "FTRACE_CONTROL=0"},
		{"FTRACE_TRACER=function", "FTRACE_RING=1M"},
	} {
		cmd := exec.Command("valgrind", "-q", "--leak-check=full", "--error-exitcode=99", prog)
		var errb strings.Builder
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), append(env, "FTRACE_OUTPUT=v.dat")...)
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Errorf("%v: %v, output %q (want %q)\n%s", env, err, out, want, errb.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "v.dat")); err != nil {
			t.Errorf("%v: no trace: %v", env, err)
		}
		os.Remove(filepath.Join(dir, "v.dat"))
	}
}

// A trace that cannot take its final name at exit (trace_clobber.c makes a file of its own
// there; nginx's workers, which drop root after their file is made, cannot rename in
// root's directory) is complete all the same: it stays at its .part, flagged complete,
// and the runtime says where (the nginx trial's workers left .part files the readers
// called "not finalised").
func TestTracerCompleteAtPart(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_clobber.c")
	out := filepath.Join(dir, "t.dat")
	cmd := exec.Command(prog, out)
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+out)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stdout.String() != "55\n" {
		t.Fatalf("%v: %q %q", err, stdout.String(), stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "data\n" {
		t.Errorf("the program's file was replaced: %q %v", b, err)
	}
	part := fmt.Sprintf("%s.%d.part", out, cmd.Process.Pid)
	if !strings.Contains(stderr.String(), "the trace is complete but stays at "+part) {
		t.Errorf("stderr %q", stderr.String())
	}
	tr := trRead(t, part)
	trCheckComplete(t, tr, 1)
}

// A fork child that retitles itself (trace_retitle.c, as nginx's workers) ends its trace
// with its own command line, not its parent's, which was all the trace had (the nginx
// trial: every worker's trace said "nginx: master process").
func TestTracerRetitledChild(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_retitle.c")
	out := filepath.Join(dir, "t.dat")
	if got, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=" + out}, "room-for-the-new-title"); got != "" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q, status %v", got, ws)
	}
	kids, _ := filepath.Glob(out + ".*")
	if len(kids) != 1 {
		t.Fatalf("child traces %v", kids)
	}
	ftrace := testenv.Tool(t, "ftrace")
	if info := testenv.Run(t, dir, ftrace, "info", kids[0]); !regexp.MustCompile(`(?m)^command: +'retitled: worker'$`).MatchString(info) {
		t.Errorf("child's trace:\n%s", info)
	}
	if info := testenv.Run(t, dir, ftrace, "info", out); !strings.Contains(info, "room-for-the-new-title") {
		t.Errorf("parent's trace:\n%s", info)
	}
}

// Signals that land anywhere in a traced call, so also inside the runtime's writing of an
// event, with the handler's calls in a library (their addresses differ in the high half):
// every call of the program is recorded under its own name, and each of the handler's
// calls is either recorded or counted (lost by the function tracer, not graphed by the
// graph tracer). Before, a handler's event could take the words of the event it
// interrupted (overwritten, uncounted), move the block or the high half under it (work's
// calls read as other addresses, exits in a function trace, blocks cut short). Signals
// back to back (the handler runs again before the interrupted code goes on) may lose
// some; signals 20 µs apart lose none under the function tracer (--no-loss): a handler's
// calls made while the runtime writes are kept and written after.
func TestTracerSignalStorm(t *testing.T) {
	dir := t.TempDir()
	prog := trBuildWithLib(t, dir, "trace_sigstorm.c", "sig", true)
	const n = 1000000
	for _, tracer := range []string{"function", "function_graph"} {
		for run := 0; run < 5; run++ {
			args := []string{fmt.Sprint(n)}
			if run >= 3 {
				args = append(args, "20") // µs between signals
			}
			if run == 4 {
				args = append(args, "marker") // the handler writes one too
			}
			out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_BUFFER_KB=65536", "FTRACE_NO_LOSS=1", "FTRACE_OUTPUT=s.dat"}, args...)
			var work, handled int
			if _, err := fmt.Sscanf(out, "work %d handled %d\n", &work, &handled); err != nil || work != n || ws.ExitStatus() != 0 {
				t.Fatalf("%s: output %q, status %v", tracer, out, ws)
			}
			tr := trRead(t, filepath.Join(dir, "s.dat"))
			trCheckComplete(t, tr, 1)
			s := trSymbols(t, tr, prog)
			var lib trMap
			for _, m := range tr.Maps {
				if strings.HasSuffix(m.Path, "/libsig.so") {
					lib = m
				}
			}
			calls := map[string]int{}
			var lost, notGraphed uint64
			markers := 0
			for _, th := range tr.Threads {
				lost += th.Lost
				notGraphed += th.LostDepth
				for _, r := range th.Recs {
					if r.Type == 5 {
						markers++
						continue
					}
					name := s.name(r.IP)
					if r.IP >= lib.Start && r.IP < lib.End {
						name = "lib"
					}
					calls[fmt.Sprintf("%s type %d", name, r.Type)]++
				}
			}
			// a function trace holds calls (type 1), a graph entries (2) and exits (3)
			want := map[string]int{}
			h := calls["on_usr1 type 1"] + calls["on_usr1 type 2"]
			for _, typ := range map[string][]int{"function": {1}, "function_graph": {2, 3}}[tracer] {
				for name, c := range map[string]int{"work": n, "main": 1, "on_usr1": h, "lib": h} {
					if c > 0 {
						want[fmt.Sprintf("%s type %d", name, typ)] = c
					}
				}
			}
			if !reflect.DeepEqual(calls, want) {
				t.Errorf("%s run %d: records %v, want %v", tracer, run, calls, want)
			}
			if got := uint64(2*h) + lost + notGraphed; got != uint64(2*handled) {
				t.Errorf("%s run %d: %d handler runs; their calls: %d recorded, %d lost, %d not graphed (sum %d, want %d)",
					tracer, run, handled, 2*h, lost, notGraphed, got, 2*handled)
			}
			if handled == 0 {
				t.Errorf("%s run %d: no signal handled", tracer, run)
			}
			// a marker made while the writer is held is kept, not refused
			var refused int
			if _, err := fmt.Sscanf(out[strings.Index(out, "\n")+1:], "markers refused %d\n", &refused); run == 4 && (err != nil || refused != 0 || markers != handled) {
				t.Errorf("%s: %d handler runs: %d markers in the trace, output %q", tracer, handled, markers, out)
			}
			if run >= 3 && tracer == "function" && lost != 0 {
				t.Errorf("signals 20 µs apart: %d of the handlers' %d calls lost", lost, 2*handled)
			}
			t.Logf("%s: %d handler runs: %d calls recorded, %d lost, %d not graphed", tracer, handled, 2*h, lost, notGraphed)
		}
	}
}

// A signal handler forks while its thread may be inside the runtime (holding its writer,
// between an event and its frame): the child returns into that code, which must find
// what it points at still mapped, and then traces into its own file.  Before, 25 to 67
// of 100 children died of SIGSEGV.
func TestTracerSignalFork(t *testing.T) {
	prog := trBuild(t, t.TempDir(), "trace_sigfork.c")
	const forks, after = 100, 20000
	for _, tracer := range []string{"function", "function_graph"} {
		for _, noLoss := range []string{"0", "1"} {
			dir := t.TempDir()
			out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_NO_LOSS=" + noLoss, "FTRACE_OUTPUT=s.dat"},
				"1000000", "200", fmt.Sprint(forks))
			var f, reaped, bad int
			if _, err := fmt.Sscanf(out, "forks %d reaped %d bad %d\n", &f, &reaped, &bad); err != nil ||
				f != forks || reaped != forks || bad != 0 || ws.ExitStatus() != 0 {
				t.Fatalf("%s no-loss %s: output %q, status %v", tracer, noLoss, out, ws)
			}
			children, _ := filepath.Glob(filepath.Join(dir, "s.dat.*"))
			if len(children) != forks {
				t.Fatalf("%s: %d child traces, want %d", tracer, len(children), forks)
			}
			for _, c := range children {
				tr := trRead(t, c)
				trCheckComplete(t, tr, 1)
				for _, th := range tr.Threads {
					if th.Lost != 0 || th.LostDepth != 0 {
						t.Errorf("%s: %s: thread %d lost %d, not graphed %d", tracer, c, th.TID, th.Lost, th.LostDepth)
					}
				}
				work := trCalls(tr, trSymbols(t, tr, prog), "work")
				// the call the fork interrupted may be the parent's alone
				if work != after && work != after-1 {
					t.Errorf("%s: %s: %d calls of work, want %d", tracer, c, work, after)
				}
			}
		}
	}
}

// Calls made in pthread key destructors when a thread ends are recorded: the runtime's
// own key gives the thread's buffer back in the last round of destructors.  Before, they
// were lost ("no buffer") in every thread: libxml2's xmlFreeGlobalState, 7000 of them
// in its test suite.
func TestTracerKeyDestructors(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_tsd.c")
	for _, tracer := range []string{"function", "function_graph"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + tracer + ".dat"})
		if out != "ok\n" || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q, status %v", tracer, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, tracer+".dat"))
		trCheckComplete(t, tr, 1)
		s := trSymbols(t, tr, prog)
		// 3 threads: dtor once, rearm in three rounds, in_destructor under each
		if d, r, in := trCalls(tr, s, "dtor"), trCalls(tr, s, "rearm"), trCalls(tr, s, "in_destructor"); d != 3 || r != 9 || in != 12 || tr.LostNoBuf != 0 {
			t.Errorf("%s: dtor %d, rearm %d, in_destructor %d calls (want 3, 9, 12), %d lost for want of a buffer",
				tracer, d, r, in, tr.LostNoBuf)
		}
	}
}

// A program traced from the environment (no ftrace record) that runs traced programs
// through a wrapper that is not traced (sh -c; ninja's children) keeps every trace: it
// starts the run (FTRACE_SESSION), and a trace of the run found at the output name is
// moved aside.  Before, each child replaced the last's (the ninja trial: four child
// ninjas, two traces).  With FTRACE_INHERIT=0 the environment is left alone, as before.
func TestTracerEnvSession(t *testing.T) {
	prog := trBuild(t, t.TempDir(), "trace_session.c")
	for _, tc := range []struct {
		inherit string
		traces  int
		out     string
	}{{"", 3, "0 session\n"}, {"0", 2, "0 none\n"}} {
		dir := t.TempDir()
		env := []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=s.dat"}
		if tc.inherit != "" {
			env = append(env, "FTRACE_INHERIT="+tc.inherit)
		}
		out, ws := trRun(t, dir, prog, env)
		if out != tc.out || ws.ExitStatus() != 0 {
			t.Fatalf("FTRACE_INHERIT=%q: output %q, status %v", tc.inherit, out, ws)
		}
		names, _ := filepath.Glob(filepath.Join(dir, "s.dat*"))
		pids := map[uint32]bool{}
		for _, n := range names {
			tr := trRead(t, n)
			trCheckComplete(t, tr, 1)
			if pids[tr.PID] || trCalls(tr, trSymbols(t, tr, prog), "work") != 100 {
				t.Errorf("FTRACE_INHERIT=%q: %s: pid %d again, or not 100 calls of work", tc.inherit, n, tr.PID)
			}
			pids[tr.PID] = true
		}
		if len(names) != tc.traces {
			t.Errorf("FTRACE_INHERIT=%q: traces %v, want %d", tc.inherit, names, tc.traces)
		}
	}
}

// Processes of one run that finish at the same moment, with one output name (ftrace record
// -o NAME: no %p), each keep their trace: the name is taken only while free, else
// exchanged with what holds it, which is moved aside. Before, two could both find the name
// free and the second rename replaced the first's trace (the gawk trial lost 2 to 5 of a
// pipeline's 400 traces).
func TestTracerSiblingsFinishTogether(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	const rounds, width = 40, 6
	script := fmt.Sprintf("for i in $(seq %d); do %s wait; done", rounds, strings.Repeat(prog+" 12 >/dev/null & ", width))
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT=r.dat",
		fmt.Sprintf("FTRACE_SESSION=%d", time.Now().UnixNano()))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "r.dat*"))
	pids := map[uint32]bool{}
	for _, n := range names {
		if strings.HasSuffix(n, ".part") {
			t.Errorf("%s left", filepath.Base(n))
			continue
		}
		tr := trRead(t, n)
		trCheckComplete(t, tr, 1)
		if pids[tr.PID] {
			t.Errorf("%s: pid %d again", filepath.Base(n), tr.PID)
		}
		pids[tr.PID] = true
	}
	if len(pids) != rounds*width {
		t.Errorf("%d traces of %d processes", len(pids), rounds*width)
	}
}

// TestTracerDeepForkNames: each fork child's trace is named after its parent's and its
// pid, so a chain of children (a shell function recursing through $(...)) made names past
// NAME_MAX about 40 deep: the deeper ones had no trace and the program's stderr said so.
// Past a bound the name is the run's own and the pid; every process leaves its trace.
func TestTracerDeepForkNames(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_forkdeep.c")
	const depth = 70
	for _, output := range []string{"r.dat", "p.%p.dat"} {
		out := t.TempDir()
		cmd := exec.Command(prog, strconv.Itoa(depth))
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+filepath.Join(out, output))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.String() != "done\n" || stderr.Len() > 0 {
			t.Fatalf("%s: %v, output %q, stderr:\n%s", output, err, stdout.String(), stderr.String())
		}
		names, _ := filepath.Glob(filepath.Join(out, "*"))
		pids := map[uint32]bool{}
		for _, n := range names {
			if len(filepath.Base(n)) > 255-40 {
				t.Errorf("%s: name of %d bytes", filepath.Base(n), len(filepath.Base(n)))
			}
			if strings.HasSuffix(n, ".part") {
				t.Errorf("%s left", filepath.Base(n))
				continue
			}
			tr := trRead(t, n)
			trCheckComplete(t, tr, 1)
			pids[tr.PID] = true
		}
		if len(pids) != depth+1 {
			t.Errorf("%s: %d traces of %d processes", output, len(pids), depth+1)
		}
	}
}

// trCalls counts the calls of the function name in tr: its calls (function tracer) or
// entries (graph), all threads.
func trCalls(tr *trTrace, s *trSyms, name string) int {
	n := 0
	for _, th := range tr.Threads {
		for _, r := range th.Recs {
			if (r.Type == 1 || r.Type == 2) && s.name(r.IP) == name {
				n++
			}
		}
	}
	return n
}

// Signal 63, the runtime's attach signal, sent by anyone but ftrace live does what it does
// to an untraced program: it kills it (an instrumented bash survived `kill -63 $$`).
func TestTracerForeignAttachSignal(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_misc.c")
	for _, env := range [][]string{nil, {"FTRACE_TRACER=function"}} {
		_, ws := trRun(t, dir, prog, env, "sig63", "10")
		if !ws.Signaled() || ws.Signal() != 63 {
			t.Errorf("%v: status %v, want killed by signal 63", env, ws)
		}
	}
}

// TestTracerNoWriterThread: where the process may not make a thread (RLIMIT_NPROC, a
// container's pids limit), the trace writer cannot start: the trace is kept in each
// thread's buffer and written at exit, what does not fit counted as lost, and --no-loss
// does not wait for a writer that will never come. (The session was given up: no trace.)
func TestTracerNoWriterThread(t *testing.T) {
	uid, gid := secureUser(t)
	testenv.Need(t, "prlimit")
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	for p := dir; p != "/tmp" && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the user must reach the program
	}
	out := t.TempDir()
	os.Chown(out, int(uid), int(gid))
	for p := out; p != "/tmp" && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	const n = 30 // 2.7M calls: more than a thread's 4 MiB of blocks
	plain, _ := trRun(t, dir, prog, nil, strconv.Itoa(n))
	a, b := 0, 1 // fib(n) calls fib 2*fib(n+1) - 1 times
	for i := 0; i < n+1; i++ {
		a, b = b, a+b
	}
	calls := uint64(2*a - 1)
	for _, noLoss := range []string{"0", "1"} {
		trace := filepath.Join(out, "nl"+noLoss+".dat")
		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(int(uid)), "--regid="+strconv.Itoa(int(gid)),
			"--clear-groups", "prlimit", "--nproc=1", prog, strconv.Itoa(n))
		got, ws := trRunCmd(t, dir, prog, cmd, []string{"FTRACE_TRACER=function_graph",
			"FTRACE_OUTPUT=" + trace, "FTRACE_NO_LOSS=" + noLoss, "FTRACE_CONTROL=0"})
		if got != plain || ws.ExitStatus() != 0 {
			t.Fatalf("no-loss %s: output %q status %v, untraced %q", noLoss, got, ws, plain)
		}
		tr := trRead(t, trace)
		if len(tr.Threads) != 1 || tr.Flags&1 == 0 {
			t.Fatalf("no-loss %s: %d threads, flags %#x: want one, complete", noLoss, len(tr.Threads), tr.Flags)
		}
		th := tr.Threads[0]
		var kept uint64
		for _, r := range th.Recs {
			if r.Type >= 1 && r.Type <= 3 && r.Flags&2 == 0 { // not made up from a block's header
				kept++
			}
		}
		// main's entry and exit, and fib's
		if th.Lost == 0 || kept == 0 || kept+th.Lost != 2*calls+2 {
			t.Errorf("no-loss %s: %d events kept, %d lost: want some of each, %d in all", noLoss, kept, th.Lost, 2*calls+2)
		}
	}
}
