package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// The peak RSS of a command run straight from a test is not the command's: Go starts
// children with CLONE_VM, so the child begins in the test process's memory, and the
// kernel keeps that memory's peak in the child's ru_maxrss across exec (a test of 90 MB
// made every command it measured take at least 90 MB). PeakRSS runs the command from a
// fresh copy of the test binary instead, whose own peak is that of a small program.

const peakEnv = "FTKIT_PEAKRSS_OUT" // set: the test binary is PeakRSS's middleman

// PeakRSSMain, called first in a package's TestMain, makes the test binary PeakRSS's
// middleman when PeakRSS runs it: it runs the command of its arguments (with the
// descriptor limit PeakRSS was given, if any), writes the command's peak RSS in KiB to
// the file named by the environment and exits with the command's status.
func PeakRSSMain() {
	out := os.Getenv(peakEnv)
	if out == "" {
		return
	}
	os.Unsetenv(peakEnv)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "testenv peak RSS:", err)
		os.Exit(125)
	}
	if n, err := strconv.ParseUint(os.Getenv("FTKIT_PEAKRSS_NOFILE"), 10, 64); err == nil {
		os.Unsetenv("FTKIT_PEAKRSS_NOFILE")
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			fail(err)
		}
	}
	if len(os.Args) < 2 {
		fail(fmt.Errorf("no command"))
	}
	c := exec.Command(os.Args[1], os.Args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := c.Run()
	if c.ProcessState == nil {
		fail(err)
	}
	kib := c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if err := os.WriteFile(out, []byte(strconv.FormatInt(kib, 10)), 0o600); err != nil {
		fail(err)
	}
	os.Exit(c.ProcessState.ExitCode())
}

// PeakRSS runs c (its Path, Args, Dir, Env and standard files) and returns its peak RSS
// in KiB; nofile > 0 limits its descriptors to that many. The package's TestMain must
// call PeakRSSMain. The error is c's, as c.Run gives it.
func PeakRSS(t testing.TB, c *exec.Cmd, nofile int) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/peak"
	m := exec.Command(self, append([]string{c.Path}, c.Args[1:]...)...)
	m.Dir, m.Stdin, m.Stdout, m.Stderr = c.Dir, c.Stdin, c.Stdout, c.Stderr
	m.Env = append(c.Environ(), peakEnv+"="+out)
	if nofile > 0 {
		m.Env = append(m.Env, "FTKIT_PEAKRSS_NOFILE="+strconv.Itoa(nofile))
	}
	runErr := m.Run()
	b, err := os.ReadFile(out)
	if err != nil {
		if runErr == nil {
			runErr = err
		}
		return 0, fmt.Errorf("no peak RSS: %w", runErr)
	}
	kib, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatalf("peak RSS file: %v", err)
	}
	return kib, runErr
}
