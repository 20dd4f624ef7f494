package main

import "golang.org/x/sys/unix"

// The idle system calls x86-64 has and arm64 does not (glibc's poll, select, pause and
// epoll_wait use them there), as the runtime's idle_call takes them: a thread waiting in
// poll was not asked to attach (xz trial).
func init() {
	for _, nr := range []int{unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_PAUSE, unix.SYS_EPOLL_WAIT} {
		idleCalls[nr] = true
	}
}
