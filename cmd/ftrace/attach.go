package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
)

// Attach on demand (runtime/src/tracers/control.c): a process linked with ftkit's runtime
// and started without FTRACE_* variables has no control socket, only a handler for the
// signal its "ftkit" ELF note names. ftrace live queues that signal, with a magic value, to
// a thread of the process that sleeps in a system call; the handler starts the server.
const (
	attachNoteType = 1
	attachMagic    = 0x66746b61 // "ftka", as FT_ATTACH_MAGIC
)

// attachSignal reads the attach signal from the "ftkit" note of the process's program
// (0: the program has no ftkit runtime).
func attachSignal(pid int) int {
	return runtimeNote(fmt.Sprintf("/proc/%d/exe", pid))
}

// procGuest is the guest program of a qemu-user process (its path as the process sees
// it, through /proc/PID/root and /proc/PID/cwd), "" for any other process.
func procGuest(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "qemu-") {
		return ""
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	guest := qemuGuest(strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"))
	switch {
	case guest == "":
		return ""
	case filepath.IsAbs(guest):
		return fmt.Sprintf("/proc/%d/root%s", pid, guest)
	}
	return fmt.Sprintf("/proc/%d/cwd/%s", pid, guest)
}

// runtimeNote reads the attach signal from the "ftkit" note of an ELF file: 0 when it has
// none (it was linked without the runtime, or is not ELF).
func runtimeNote(path string) int {
	f, err := elf.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	return fileRuntimeNote(f)
}

// fileRuntimeNote is runtimeNote of an open ELF file.
func fileRuntimeNote(f *elf.File) int {
	desc, err := symbolize.Note(f, "ftkit", attachNoteType)
	if err != nil || len(desc) != 4 {
		return 0
	}
	if sig := int(f.ByteOrder.Uint32(desc)); sig > 0 && sig < 65 {
		return sig
	}
	return 0
}

// statusField is the words of a /proc status line ("Uid:\t0\t1000\t…"); nil without it.
func statusField(status []byte, field string) []string {
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.Fields(v)
		}
	}
	return nil
}

// sigBit: is signal sig in a /proc status mask line ("SigCgt:\t0000000400000000")?
func sigBit(status []byte, field string, sig int) bool {
	f := statusField(status, field)
	if len(f) == 0 {
		return false
	}
	m, err := strconv.ParseUint(f[0], 16, 64)
	return err == nil && m>>(sig-1)&1 == 1
}

// idleCalls are the system calls a thread may wait in when it is asked: the runtime's
// handler starts a server only from those (control.c, idle_call), and a signal interrupts
// nothing the program did not expect there (a short write or sendfile would be).
var idleCalls = map[int]bool{
	unix.SYS_READ: true, unix.SYS_READV: true, unix.SYS_RECVFROM: true, unix.SYS_RECVMSG: true,
	unix.SYS_ACCEPT: true, unix.SYS_ACCEPT4: true, unix.SYS_WAIT4: true, unix.SYS_WAITID: true,
	unix.SYS_PPOLL: true, unix.SYS_PSELECT6: true, unix.SYS_EPOLL_PWAIT: true, unix.SYS_NANOSLEEP: true,
	unix.SYS_CLOCK_NANOSLEEP: true, unix.SYS_RT_SIGSUSPEND: true, unix.SYS_RT_SIGTIMEDWAIT: true,
	unix.SYS_RESTART_SYSCALL: true, unix.SYS_EPOLL_PWAIT2: true,
}

// restartedCalls are the idle calls the kernel restarts after a handler installed with
// SA_RESTART, as the runtime's is: a thread asked there sees nothing. The others (poll,
// epoll_wait, select, nanosleep, sigtimedwait...: signal(7)) return EINTR, so a thread
// waiting in one is asked only when no thread waits in one of these.
var restartedCalls = map[int]bool{
	unix.SYS_READ: true, unix.SYS_READV: true, unix.SYS_RECVFROM: true, unix.SYS_RECVMSG: true,
	unix.SYS_ACCEPT: true, unix.SYS_ACCEPT4: true, unix.SYS_WAIT4: true, unix.SYS_WAITID: true,
}

// idleWchan: where a thread sleeps in the kernel while it waits in one of idleCalls (for
// when /proc/PID/task/TID/syscall may not be read: Yama's ptrace scope), and whether that
// call is one of restartedCalls.
var idleWchan = []struct {
	part      string
	restarted bool
}{
	{"poll", false}, {"select", false}, {"epoll", false}, {"nanosleep", false},
	{"sigsuspend", false}, {"sigtimedwait", false}, {"pipe_read", true}, {"wait_woken", true},
	{"unix_stream_read", true}, {"sk_wait_data", true}, {"inet_csk_accept", true},
	{"do_wait", true}, {"n_tty_read", true},
}

// idleThreads lists the threads of pid that wait in one of idleCalls and do not block sig,
// those in restartedCalls first.
func idleThreads(pid, sig int) []int {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	var tids, eintr []int
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		task := filepath.Join(dir, e.Name())
		if st, err := os.ReadFile(filepath.Join(task, "status")); err != nil || sigBit(st, "SigBlk", sig) {
			continue
		}
		if sc, err := os.ReadFile(filepath.Join(task, "syscall")); err == nil {
			// "nr arg1 ... sp pc" while blocked in a call; "running"; "-1 sp pc" otherwise
			f := strings.Fields(string(sc))
			if len(f) == 0 {
				continue
			}
			nr, err := strconv.Atoi(f[0])
			if err != nil || !idleCalls[nr] {
				continue
			}
			if !restartedCalls[nr] {
				eintr = append(eintr, tid)
				continue
			}
		} else if w, err := os.ReadFile(filepath.Join(task, "wchan")); err != nil {
			continue
		} else if idle, restarted := wchanIdle(string(w)); !idle {
			continue
		} else if !restarted {
			eintr = append(eintr, tid)
			continue
		}
		tids = append(tids, tid)
	}
	return append(tids, eintr...)
}

// wchanIdle: is w (a wchan) the wait of one of idleCalls, and is that call restarted?
func wchanIdle(w string) (idle, restarted bool) {
	for _, k := range idleWchan {
		if strings.Contains(w, k.part) {
			return true, k.restarted
		}
	}
	return false, false
}

// procState is the state letter of /proc/PID/stat ('?' if unknown).
func procState(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// the state follows the ")" that ends the command name
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i >= 0 && i+2 < len(stat) {
		return stat[i+2]
	}
	return '?'
}

// siginfo is the kernel's siginfo_t for SI_QUEUE, as rt_tgsigqueueinfo takes it (64-bit
// layout). The kernel lets a sender fill in pid and uid (si_code < 0): who may send is its
// signal permission check (same user or root), and the socket checks every peer again.
type siginfo struct {
	signo, errno, code int32
	_                  int32
	pid, uid           uint32
	value              uint64
	_                  [128 - 32]byte
}

func queueSignal(pid, tid, sig int) error {
	si := siginfo{signo: int32(sig), code: -1 /* SI_QUEUE */, pid: uint32(os.Getpid()), uid: uint32(os.Getuid()), value: attachMagic}
	_, _, e := syscall.Syscall6(syscall.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(&si)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// attach asks pid's runtime to start its control socket and returns the socket's path.
// noSock is findSocket's error, to which the reason it cannot be attached is added.
func attach(pid int, noSock error, timeout time.Duration) (string, error) {
	sig := attachSignal(pid)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if guest := procGuest(pid); guest != "" && runtimeNote(guest) != 0 {
		// qemu-user gives the guest's real-time signals other host numbers (which,
		// depends on its version): the signal the note names would reach the guest as
		// another one, whose default action ends the program
		return "", fmt.Errorf("%w, and it runs under qemu-user, which renumbers the signal that would ask it "+
			"to start one: start the program with FTRACE_CONTROL=1 to control it live", noSock)
	}
	switch {
	case sig == 0:
		return "", fmt.Errorf("%w, and its program has no ftkit runtime (not linked with libftrt.a, or it ran exec since)", noSock)
	case err != nil || !sigBit(status, "SigCgt", sig):
		return "", fmt.Errorf("%w, and it does not offer to start one: started with FTRACE_CONTROL=0 or FTRACE_ATTACH=0, "+
			"setuid, its trace was finished (finish), or it took signal %d for itself", noSock, sig)
	case timeout <= 0:
		return "", fmt.Errorf("%w (--attach-timeout 0: not asked to start one)", noSock)
	}
	deadline := time.Now().Add(timeout)
	sent, asks := false, 0
	asked := map[int]bool{}
	for time.Now().Before(deadline) {
		// one thread a try, the best not asked yet: each one asked in a call that is
		// not restarted sees EINTR
		var tid int
		for _, t := range idleThreads(pid, sig) {
			if !asked[t] {
				tid = t
				break
			}
		}
		if tid == 0 && len(asked) > 0 {
			clear(asked)
			continue
		}
		if tid != 0 {
			asked[tid] = true
			if err := queueSignal(pid, tid, sig); err == nil {
				sent = true
				asks++
			} else if errors.Is(err, syscall.EPERM) {
				return "", fmt.Errorf("%w, and you may not signal it to start one: %w", noSock, err)
			}
		}
		// the server starts within milliseconds of a thread taking the request; a thread
		// that ran again before the signal came ignores it, and is asked again soon (a
		// busy single-threaded server took 2.3 s of 3 at 100 ms a try: the lighttpd trial)
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			if sock, err := findSocket(pid); err == nil {
				return sock, nil
			} else if strings.Contains(err.Error(), "no process") {
				return "", err
			}
		}
	}
	switch st := procState(pid); {
	case st == 'T' || st == 't':
		return "", fmt.Errorf("%w: it is stopped (SIGSTOP or a debugger); continue it and ask again", noSock)
	case !sent:
		return "", fmt.Errorf("%w, and none of its threads waited in a system call within %v to start one safely "+
			"(all busy, in other calls, or blocking signal %d); ask again when it waits, or start it with FTRACE_CONTROL=1", noSock, timeout, sig)
	}
	// a thread that runs again before the signal comes ignores it (the haproxy trial: its
	// one thread that takes signals was seldom left waiting under load), and a server that
	// could not start says why on its standard error
	return "", fmt.Errorf("%w, and it did not start one within %v of being asked %d times (signal %d): each time "+
		"its waiting thread may have run on before the signal came (a busy process: ask again, or with a longer "+
		"--attach-timeout), or it could not start one (see its standard error: a trace file it could not create?); "+
		"FTRACE_CONTROL=1 at start avoids asking", noSock, timeout, asks, sig)
}
