package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// closedStdio: the standard descriptors that were closed when ftrace started. The Go
// runtime opens /dev/null read-write on each before main (runtime.checkfds), so a program
// run as `ftrace record -- prog >&-` would find its stdout open where FTRACE_* variables
// leave it closed; a shell's redirection to /dev/null opens it for reading or for writing
// only. So a standard descriptor on /dev/null opened read-write is taken as closed (a
// `<>/dev/null` on one is passed on closed).
var closedStdio = detectClosedStdio()

func detectClosedStdio() (closed [3]bool) {
	for fd := range closed {
		n := strconv.Itoa(fd)
		if l, err := os.Readlink("/proc/self/fd/" + n); err != nil || l != "/dev/null" {
			continue
		}
		b, err := readRaw("/proc/self/fdinfo/" + n)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
				closed[fd] = err == nil && flags&syscall.O_ACCMODE == syscall.O_RDWR
			}
		}
	}
	return closed
}

// readRaw reads a small file with system calls alone: this runs before main, and the os
// package's first Open sets up the runtime's poller (two descriptors), a fatal error under
// a tight descriptor limit that main then could not report (enoughDescriptors).
func readRaw(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var out []byte
	buf := make([]byte, 512)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// enoughDescriptors tells whether ftrace can open what it needs (the runtime's poller, a
// trace file, a pipe to the program): without them, the Go runtime's first file would
// end ftrace with a fatal error and a goroutine dump instead of a message.
func enoughDescriptors() bool {
	var fds []int
	ok := true
	for i := 0; i < 4; i++ { // the poller's two, a trace file, one to spare
		fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			ok = err != syscall.EMFILE && err != syscall.ENFILE
			break
		}
		fds = append(fds, fd)
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	return ok
}

// started is a program ftrace started: its process, and how to wait for it.
type started struct {
	proc *os.Process
	wait func() (*os.ProcessState, error)
}

// startProgram starts path with args and env on stdin, stdout and stderr: ftrace's own
// standard descriptors are passed as they are, closed where they were closed when ftrace
// started (closedStdio); other readers and writers (tests) through pipes.
func startProgram(path string, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (*started, error) {
	std := []any{stdin, stdout, stderr}
	own := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	files := make([]*os.File, 3)
	for i, s := range std {
		f, ok := s.(*os.File)
		if !ok || f != own[i] {
			return startCmd(path, args, env, stdin, stdout, stderr)
		}
		if !closedStdio[i] {
			files[i] = f
		}
	}
	p, err := os.StartProcess(path, args, &os.ProcAttr{Env: env, Files: files})
	if err != nil {
		return nil, err
	}
	return &started{proc: p, wait: p.Wait}, nil
}

func startCmd(path string, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (*started, error) {
	cmd := &exec.Cmd{Path: path, Args: args, Env: env, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &started{proc: cmd.Process, wait: func() (*os.ProcessState, error) {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil // a status, not a failure to wait
		}
		return cmd.ProcessState, err
	}}, nil
}
