package ftrt

/*
#cgo pkg-config: ftrt-cgo
#include <errno.h>
#include <stdlib.h>
#include <ftrace.h>
#include <ftrace_trace.h>

// The callback of counting ops: one atomic increment of a counter in private.
static void ftrt_go_count(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			  struct ftrace_regs *fregs)
{
	(void)ip; (void)parent_ip; (void)fregs;
	__atomic_fetch_add((unsigned long *)op->FTRACE_PRIVATE, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops *ftrt_go_new(ftrace_func_t fn, unsigned long flags)
{
	struct ftrace_ops *ops = calloc(1, sizeof(*ops) + sizeof(unsigned long));

	if (!ops)
		return NULL;
	ops->func = fn ? fn : ftrt_go_count;
	ops->flags = flags;
	ops->FTRACE_PRIVATE = ops + 1;
	return ops;
}

static unsigned long ftrt_go_count_of(struct ftrace_ops *ops)
{
	return __atomic_load_n((unsigned long *)(ops + 1), __ATOMIC_RELAXED);
}

static void *ftrt_go_counter_func(void) { return (void *)ftrt_go_count; }
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Flags of an Ops (FTRACE_OPS_FL_*).
const (
	FlagSaveRegs            = C.FTRACE_OPS_FL_SAVE_REGS
	FlagSaveRegsIfSupported = C.FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED
	FlagRecursion           = C.FTRACE_OPS_FL_RECURSION
	FlagIPModify            = C.FTRACE_OPS_FL_IPMODIFY
)

// Ops is a struct ftrace_ops in C memory. Its callback is C code: either a counter
// (NewCounter) or a C ftrace_func_t given by the cgo program (NewOps).
type Ops struct {
	c *C.struct_ftrace_ops
}

func errno(op string, r C.int) error {
	if r >= 0 {
		return nil
	}
	return fmt.Errorf("ftrt: %s: %w", op, syscall.Errno(-r))
}

// NewCounter returns ops whose callback counts the calls it sees (Count).
func NewCounter(flags uint) (*Ops, error) { return NewOps(nil, flags) }

// NewOps returns ops calling fn, a C function of type ftrace_func_t (nil: a counter).
// The callback's private pointer points at a counter the callback may ignore.
func NewOps(fn unsafe.Pointer, flags uint) (*Ops, error) {
	c := C.ftrt_go_new(C.ftrace_func_t(fn), C.ulong(flags))
	if c == nil {
		return nil, errors.New("ftrt: out of memory")
	}
	return &Ops{c: c}, nil
}

// Register enables the ops' sites (register_ftrace_function).
func (o *Ops) Register() error { return errno("register", C.register_ftrace_function(o.c)) }

// Unregister disables them; it returns once no thread can still run its callback.
func (o *Ops) Unregister() error { return errno("unregister", C.unregister_ftrace_function(o.c)) }

func (o *Ops) set(notrace bool, globs string, reset bool) error {
	r := C.int(0)
	if reset {
		r = 1
	}
	var p unsafe.Pointer
	if globs != "" {
		cs := C.CString(globs)
		defer C.free(unsafe.Pointer(cs))
		p = unsafe.Pointer(cs)
	}
	if notrace {
		return errno("set notrace "+globs, C.ftrace_set_notrace(o.c, p, C.int(len(globs)), r))
	}
	return errno("set filter "+globs, C.ftrace_set_filter(o.c, p, C.int(len(globs)), r))
}

// SetFilter sets (reset) or extends the filter with glob patterns (ftrace_set_filter).
func (o *Ops) SetFilter(globs string, reset bool) error { return o.set(false, globs, reset) }

// SetNotrace sets or extends the notrace list (ftrace_set_notrace).
func (o *Ops) SetNotrace(globs string, reset bool) error { return o.set(true, globs, reset) }

// SetFilterIP adds (or removes) a function by address (ftrace_set_filter_ip).
func (o *Ops) SetFilterIP(ip uintptr, remove, reset bool) error {
	b := func(v bool) C.int {
		if v {
			return 1
		}
		return 0
	}
	return errno("set filter ip", C.ftrace_set_filter_ip(o.c, C.ulong(ip), b(remove), b(reset)))
}

// Count is the number of calls a counter ops has seen.
func (o *Ops) Count() uint64 { return uint64(C.ftrt_go_count_of(o.c)) }

// Free releases an unregistered ops and its filters.
func (o *Ops) Free() error {
	if o.c.flags&C.FTRACE_OPS_FL_ENABLED != 0 {
		return errors.New("ftrt: free of a registered ops")
	}
	C.ftrace_free_filter(o.c)
	C.free(unsafe.Pointer(o.c))
	o.c = nil
	return nil
}

// Function describes one traceable function (available_filter_functions).
type Function struct {
	IP, Func, Target uintptr
	Name, Object     string
	State            string // nop, tramp, caller, regs_caller, refused, multi, direct, callops
	NrOps            int
}

var states = map[C.enum_ftrace_site_state]string{
	C.FTRACE_SITE_NOP: "nop", C.FTRACE_SITE_TRAMP: "tramp", C.FTRACE_SITE_CALLER: "caller",
	C.FTRACE_SITE_REGS_CALLER: "regs_caller", C.FTRACE_SITE_REFUSED: "refused",
	C.FTRACE_SITE_MULTI: "multi", C.FTRACE_SITE_DIRECT: "direct", C.FTRACE_SITE_CALLOPS: "callops",
}

// Lookup describes the function whose site (or entry) is at ip.
func Lookup(ip uintptr) (Function, error) {
	var fi C.struct_ftrace_func_info
	if err := errno("lookup", C.ftrace_lookup_function(C.ulong(ip), &fi)); err != nil {
		return Function{}, err
	}
	return Function{
		IP: uintptr(fi.ip), Func: uintptr(fi._func), Target: uintptr(fi.target),
		Name: C.GoString(fi.name), Object: C.GoString(fi.object),
		State: states[fi.state], NrOps: int(fi.nr_ops),
	}, nil
}

// Rescan picks up objects loaded or unloaded since the last API call; returns the number
// of sites known.
func Rescan() (int, error) {
	r := C.ftrace_rescan()
	return int(r), errno("rescan", r)
}

// TraceFinish finalises the trace of the tracer started through FTRACE_TRACER (or
// ftrace_trace_start), as exit() does in a C program; tracing stops. A Go program that is
// traced must call it before it ends — defer it in main and call it before os.Exit — because
// the Go runtime ends the process with the exit_group system call, not libc's exit(): the
// runtime's exit handler never runs, and the file would stay <output>.<pid>.part without
// each thread's last events. Without a running tracer it does nothing.
func TraceFinish() error {
	r := C.ftrace_trace_finish()
	if r == -C.EALREADY || r == -C.ENODEV {
		return nil
	}
	return errno("trace finish", r)
}

// TraceSnapshot writes a complete copy of the trace so far to path ("" for the default
// <output>.snap.<n>) and returns the path written.
func TraceSnapshot(path string) (string, error) {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	buf := make([]byte, 4096)
	out := (*C.char)(unsafe.Pointer(&buf[0]))
	if err := errno("trace snapshot", C.ftrace_trace_snapshot(cpath, out, C.size_t(len(buf)))); err != nil {
		return "", err
	}
	return C.GoString(out), nil
}
