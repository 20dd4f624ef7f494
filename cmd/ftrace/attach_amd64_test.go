package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The waits glibc makes with x86-64's own system calls count as idle, as in the runtime.
func TestIdleCallsAmd64(t *testing.T) {
	for _, nr := range []int{unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_PAUSE, unix.SYS_EPOLL_WAIT, unix.SYS_PPOLL, unix.SYS_READ} {
		if !idleCalls[nr] {
			t.Errorf("system call %d is not an idle call", nr)
		}
	}
}
