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
		b, err := os.ReadFile("/proc/self/fdinfo/" + n)
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
