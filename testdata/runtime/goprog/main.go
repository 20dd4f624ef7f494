// Command goprog is a cgo program traced through the Go bindings (package ftrt): its C
// functions are compiled with -pg -mfentry -mrecord-mcount (gcc's own tables; cgo does not
// run recordmcount), so build it with
// CGO_CFLAGS_ALLOW='-pg|-mfentry|-mrecord-mcount'. It prints "ok" when every check passed.
package main

/*
#cgo CFLAGS: -O2 -pg -mfentry -mrecord-mcount
__attribute__((noinline)) int ftrt_cgo_one(int x) { __asm__ volatile(""); return x + 1; }
__attribute__((noinline)) int ftrt_cgo_two(int x) { __asm__ volatile(""); return x + 2; }
static void *addr_one(void) { return (void *)ftrt_cgo_one; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	ftrt "github.com/ftkit/ftkit/runtime"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func one(x int) int { return int(C.ftrt_cgo_one(C.int(x))) }
func two(x int) int { return int(C.ftrt_cgo_two(C.int(x))) }

func main() {
	addr := uintptr(unsafe.Pointer(C.addr_one()))
	f, err := ftrt.Lookup(addr)
	if err != nil {
		fail("lookup of a traced cgo function: %v", err)
	}
	if f.Name != "ftrt_cgo_one" || f.State != "nop" {
		fail("lookup = %+v", f)
	}
	o, err := ftrt.NewCounter(0)
	if err != nil {
		fail("%v", err)
	}
	if err := o.SetFilter("no_such_function_xyz", true); !errors.Is(err, syscall.ENODEV) {
		fail("filter on a missing function: %v, want ENODEV", err)
	}
	if err := o.SetFilter("ftrt_cgo_one", true); err != nil {
		fail("%v", err)
	}
	if err := o.Register(); err != nil {
		fail("%v", err)
	}
	for i := 0; i < 10; i++ {
		if one(i) != i+1 || two(i) != i+2 {
			fail("wrong results while traced")
		}
	}
	if f, _ := ftrt.Lookup(addr); f.State != "tramp" || f.NrOps != 1 {
		fail("while registered: %+v", f)
	}
	if err := o.Register(); !errors.Is(err, syscall.EBUSY) {
		fail("second register: %v, want EBUSY", err)
	}
	if err := o.Unregister(); err != nil {
		fail("%v", err)
	}
	one(0)
	if got := o.Count(); got != 10 {
		fail("count = %d, want 10", got)
	}
	if f, _ := ftrt.Lookup(addr); f.State != "nop" {
		fail("after unregister: %+v", f)
	}
	if err := o.Free(); err != nil {
		fail("%v", err)
	}
	// With FTRACE_TRACER set the tracer records one() and two(); the Go runtime exits with
	// exit_group, so the trace is finalised here (a no-op without a tracer).
	for i := 0; i < 5; i++ {
		one(i)
	}
	if len(os.Args) > 1 {
		p, err := ftrt.TraceSnapshot(os.Args[1])
		if err != nil || p != os.Args[1] {
			fail("snapshot: %q, %v", p, err)
		}
	}
	if err := ftrt.TraceFinish(); err != nil {
		fail("trace finish: %v", err)
	}
	fmt.Println("ok")
}
