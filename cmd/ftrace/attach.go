package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
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

// runtimeNote reads the attach signal from the "ftkit" note of an ELF file: 0 when it has
// none (it was linked without the runtime, or is not ELF).
func runtimeNote(path string) int {
	f, err := elf.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if sig := noteSignal(data, f.ByteOrder); sig != 0 {
			return sig
		}
	}
	return 0
}

// noteSignal finds the ftkit attach note in a PT_NOTE segment's bytes.
func noteSignal(b []byte, bo binary.ByteOrder) int {
	align := func(n uint32) int { return int((n + 3) &^ 3) }
	for len(b) >= 12 {
		namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		if align(namesz) > len(b) || align(namesz)+align(descsz) > len(b) {
			return 0
		}
		name, desc := b[:namesz], b[align(namesz):align(namesz)+int(descsz)]
		b = b[align(namesz)+align(descsz):]
		if string(bytes.TrimRight(name, "\x00")) == "ftkit" && typ == attachNoteType && len(desc) == 4 {
			if sig := int(bo.Uint32(desc)); sig > 0 && sig < 65 {
				return sig
			}
		}
	}
	return 0
}

// sigBit: is signal sig in a /proc status mask line ("SigCgt:\t0000000400000000")?
func sigBit(status []byte, field string, sig int) bool {
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && m>>(sig-1)&1 == 1
		}
	}
	return false
}

// idleThreads lists the threads of pid that sleep (state S) outside a futex wait and do not
// block sig: those the handler is likely to find waiting in a system call.
func idleThreads(pid, sig int) []int {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	var tids []int
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		// the state follows the ")" that ends the thread's name
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
			continue
		}
		if w, err := os.ReadFile(filepath.Join(dir, e.Name(), "wchan")); err == nil && bytes.Contains(w, []byte("futex")) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(dir, e.Name(), "status")); err != nil || sigBit(st, "SigBlk", sig) {
			continue
		}
		tids = append(tids, tid)
	}
	return tids
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
// noSock is findSocket's error, returned when the process cannot be attached.
func attach(pid int, noSock error, timeout time.Duration) (string, error) {
	sig := attachSignal(pid)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if sig == 0 || err != nil || !sigBit(status, "SigCgt", sig) {
		return "", noSock
	}
	deadline := time.Now().Add(timeout)
	sent := false
	for time.Now().Before(deadline) {
		tids := idleThreads(pid, sig)
		if len(tids) > 4 {
			tids = tids[:4]
		}
		for _, tid := range tids {
			if err := queueSignal(pid, tid, sig); err == nil {
				sent = true
			} else if errors.Is(err, syscall.EPERM) {
				return "", fmt.Errorf("live: process %d has no control socket and may not be signalled by you to start one: %w", pid, err)
			}
		}
		// the server starts within milliseconds of a thread taking the request
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if sock, err := findSocket(pid); err == nil {
				return sock, nil
			} else if strings.Contains(err.Error(), "no process") {
				return "", err
			}
		}
	}
	if !sent {
		return "", fmt.Errorf("live: process %d has no control socket, and none of its threads waited in a system call within %v to start one safely (all busy, or blocking signal %d); start it with FTRACE_CONTROL=1", pid, timeout, sig)
	}
	return "", fmt.Errorf("live: process %d did not start its control socket within %v (asked with signal %d; its threads never waited in a system call where a server can be started safely, or it took the signal for itself); start it with FTRACE_CONTROL=1", pid, timeout, sig)
}
