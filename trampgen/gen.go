package main

import (
	"fmt"
	"strings"
)

// Frame layout shared by both templates (offsets from %rsp once the frame is set up).
//
//	0   .. 159  struct ftrace_pt_regs (general registers, ip, sp, full marker, flags)
//	160 .. 287  xmm0..xmm7 (16 bytes each, 16-byte aligned)
//	288         return address into the traced function (site + 5)
//	296         the traced function's own return address (parent ip)
//
// The templates are entered by a call placed as the first instruction of a function. The
// ABI says %rsp % 16 == 8 before that call, so %rsp % 16 == 0 on entry, and the frame size is
// a multiple of 16, which keeps the stack aligned at the callback call. But gcc -O2
// (-fipa-stack-alignment, on by default) calls a same-file function that needs no aligned
// stack with %rsp % 16 == 0, so the templates may also be entered with %rsp % 16 == 8: the
// xmm registers are saved with movups, and callbacks must not rely on an aligned stack
// (the tracers' callbacks realign it: force_align_arg_pointer).
const (
	regsBase  = 0
	regsBytes = 20 * 8
	xmmBase   = regsBytes
	FrameSize = regsBytes + 8*16
)

// RegFields lists the fields of struct ftrace_pt_regs in order (8 bytes each).
var RegFields = []string{
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "ip", "sp", "full", "orig_ax", "flags",
}

// RegOff is the offset of a struct ftrace_pt_regs field from the frame base (%rsp).
func RegOff(name string) int {
	for i, f := range RegFields {
		if f == name {
			return regsBase + 8*i
		}
	}
	panic("trampgen: no register field " + name)
}

// Registers the plain caller saves: the argument registers, %rax (vector-argument count of
// variadic calls) and %r10 (static chain of nested functions).
var callerSaved = []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "r10"}

// The regs caller saves every general register.
var regsSaved = []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "r10",
	"r11", "rbx", "rbp", "r12", "r13", "r14", "r15"}

type asm struct{ b strings.Builder }

func (a *asm) l(format string, args ...any) { fmt.Fprintf(&a.b, "\t"+format+"\n", args...) }
func (a *asm) label(name string)            { fmt.Fprintf(&a.b, "%s:\n", name) }
func (a *asm) raw(s string)                 { a.b.WriteString(s) }

func (a *asm) global(names ...string) {
	for _, n := range names {
		a.l(".globl %s", n)
	}
}

func (a *asm) saveXMM()    { a.saveXMMAt("rsp") }
func (a *asm) restoreXMM() { a.restoreXMMAt("rsp") }

// saveXMMAt stores xmm0..xmm7 in the frame at %base (unaligned: rsp may be 8 mod 16).
func (a *asm) saveXMMAt(base string) {
	for i := 0; i < 8; i++ {
		a.l("movups %%xmm%d, %d(%%%s)", i, xmmBase+16*i, base)
	}
}

func (a *asm) restoreXMMAt(base string) {
	for i := 0; i < 8; i++ {
		a.l("movups %d(%%%s), %%xmm%d", xmmBase+16*i, base, i)
	}
}

// common emits the part after the registers are saved: ip, sp, the full marker, the
// arguments of the callback, the op_ptr load and the patchable call, skipped when the op
// slot has been cleared (the ops is being unregistered, see enterDepth).
func (a *asm) common(prefix, callLabel string, full int) {
	a.l("movq %d(%%rsp), %%rdi", FrameSize) // return address = site + 5
	a.l("movq %%rdi, %d(%%rsp)", RegOff("ip"))
	a.l("leaq %d(%%rsp), %%rsi", FrameSize+8) // stack pointer at function entry
	a.l("movq %%rsi, %d(%%rsp)", RegOff("sp"))
	a.l("movq $%d, %d(%%rsp)", full, RegOff("full"))
	a.l("movq (%%rsi), %%rsi") // parent ip
	a.l("subq $5, %%rdi")      // ip of the site
	a.opCall(prefix, callLabel, true)
}

// opCall emits the op_ptr load and the patchable call, bracketed by the depth counter;
// with fregs, %rcx carries the frame (struct ftrace_regs *) to the callback.
func (a *asm) opCall(prefix, callLabel string, fregs bool) {
	a.enterDepth()
	a.label(prefix + "_op_ptr")
	a.l("movq ftrace_template_op(%%rip), %%rdx") // 48 8b 15 rel32, re-pointed in clones
	if fregs {
		a.l("movq %%rsp, %%rcx") // struct ftrace_regs *
	}
	a.l("testq %%rdx, %%rdx")
	a.l("jz 1f")
	a.label(callLabel)
	a.l("call ftrace_stub") // e8 rel32, patched in clones
	a.raw("1:\n")
	a.leaveDepth()
}

// enterDepth and leaveDepth bracket the op slot load and the callback with the per-thread
// counter ftrt_cb_depth (local-exec TLS: position-independent bytes, so clones work;
// libftrt.a is linked into the executable). The counter is raised before the slot is
// read: the runtime clears the slot, issues membarrier and then waits only for threads
// whose counter is raised (ftrt_sync_callbacks), so a thread either sees the cleared slot
// and skips the call or is waited for. The bracket is kept short (unregister waits for
// threads preempted inside it); the instructions outside it are covered by the later
// release of the trampoline's memory (ftrt_sync_retired), which looks at program counters.
func (a *asm) enterDepth() { a.l("incl %%fs:ftrt_cb_depth@tpoff") }
func (a *asm) leaveDepth() { a.l("decl %%fs:ftrt_cb_depth@tpoff") }

func (a *asm) fn(name string) {
	a.l(".p2align 4")
	a.l(".type %s, @function", name)
	a.label(name)
}

// plainCaller emits a caller that saves the argument registers and xmm0..xmm7, fills the
// frame's ip, sp and full fields and passes the frame: name with the markers name_op_ptr,
// callLabel and name_end.
func (a *asm) plainCaller(name, callLabel string) {
	a.fn(name)
	a.l("subq $%d, %%rsp", FrameSize)
	a.saveXMM()
	for _, r := range callerSaved {
		a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
	}
	a.common(name, callLabel, 0)
	a.restoreXMM()
	for _, r := range callerSaved {
		a.l("movq %d(%%rsp), %%%s", RegOff(r), r)
	}
	a.epilogue(name)
}

// leanCaller emits the caller for a callback the runtime proved to be an integer-only leaf
// (runtime/src/arch/x86_64/insn_x86_64.c): such a callback cannot touch xmm0..xmm7, so the
// caller does not save them, and fills no frame field. It passes the frame, whose integer
// registers (%rcx too) are saved: the callback may read those, and reaches everything else
// through ftrt_lean_call (leanCall), which fills the vector registers and fields first. Its
// full field says so (leanFull).
func (a *asm) leanCaller(name, callLabel string) {
	a.fn(name)
	a.l("subq $%d, %%rsp", FrameSize)
	for _, r := range callerSaved {
		a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
	}
	a.l("movq %d(%%rsp), %%rdi", FrameSize) // return address = site + 5
	a.l("movq $%d, %d(%%rsp)", leanFull, RegOff("full"))
	a.l("movq %d(%%rsp), %%rsi", FrameSize+8) // parent ip
	a.l("subq $5, %%rdi")                     // ip of the site
	a.opCall(name, callLabel, true)
	for _, r := range callerSaved {
		a.l("movq %d(%%rsp), %%%s", RegOff(r), r)
	}
	a.epilogue(name)
}

// leanFull is the frame's full field in a lean caller's frame: vector registers not saved
// (the plain caller writes 0, the regs caller 1, the only value that says every field is
// valid).
const leanFull = 2

// leanCall emits ftrt_lean_call(ip, parent_ip, op, fregs, fn), through which a callback
// calls code that may use the vector registers: it realigns the stack (callers built with
// -fipa-stack-alignment may have left it unaligned) and calls fn(ip, parent_ip, op, fregs).
// In a lean caller's frame (full = leanFull) it first saves xmm0..xmm7 there and fills the
// ip and sp fields as the plain caller does, and restores xmm0..xmm7 after: a lean
// callback has not touched them. In any other frame they were saved by the caller, and the
// callback may have changed them since. Hidden: calls to it are direct, so the decoder of
// lean callbacks can recognise them.
func (a *asm) leanCall() {
	const name = "ftrt_lean_call"
	a.l(".globl %s", name)
	a.l(".hidden %s", name)
	a.fn(name)
	a.l("pushq %%rbp")
	a.l("movq %%rsp, %%rbp")
	a.l("cmpq $%d, %d(%%rcx)", leanFull, RegOff("full"))
	a.l("jne 1f")
	a.saveXMMAt("rcx")
	a.l("movq %d(%%rcx), %%rax", FrameSize) // return address = site + 5
	a.l("movq %%rax, %d(%%rcx)", RegOff("ip"))
	a.l("leaq %d(%%rcx), %%rax", FrameSize+8) // stack pointer at function entry
	a.l("movq %%rax, %d(%%rcx)", RegOff("sp"))
	a.l("pushq %%rcx")
	a.l("andq $-16, %%rsp")
	a.l("call *%%r8")
	a.l("movq -8(%%rbp), %%rcx")
	a.restoreXMMAt("rcx")
	a.l("leave")
	a.l("ret")
	a.raw("1:\n")
	a.l("andq $-16, %%rsp")
	a.l("call *%%r8")
	a.l("leave")
	a.l("ret")
	a.l(".size %s, .-%s", name, name)
}

// callopsCaller emits the shared caller of CALL_OPS sites (sites with an 8-byte slot
// right before their function, docs/runtime.md "Per-call-site ops"): ftrace_caller's frame
// and registers, but the ops comes from the site itself. The slot is 8-byte aligned and
// ends at the function's entry, which is the site or the site - 4 (after endbr64), so it
// lies at (site - 8) & ~7 either way; it holds the address of the site's cell (written once
// by the runtime, before the site first calls here), and the cell the ops, which the runtime
// switches with one aligned store. The callback is ops->func, called indirectly. Nothing
// in it is patched: the runtime copies it whole into each arena.
//
// lean: the registers and frame of ftrace_caller_novec (leanCaller), for cells whose
// callbacks the runtime proved to be integer-only leaves (and sets of them, run by
// ftrace_callops_set_novec).
func (a *asm) callopsCaller(name string, lean bool) {
	a.fn(name)
	a.l("subq $%d, %%rsp", FrameSize)
	if lean {
		for _, r := range callerSaved {
			a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
		}
		a.l("movq %d(%%rsp), %%rdi", FrameSize) // return address = site + 5
		a.l("movq $%d, %d(%%rsp)", leanFull, RegOff("full"))
		a.l("movq %d(%%rsp), %%rsi", FrameSize+8) // parent ip
		a.l("subq $5, %%rdi")                     // ip of the site
	} else {
		a.saveXMM()
		for _, r := range callerSaved {
			a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
		}
		a.l("movq %d(%%rsp), %%rdi", FrameSize) // return address = site + 5
		a.l("movq %%rdi, %d(%%rsp)", RegOff("ip"))
		a.l("leaq %d(%%rsp), %%rsi", FrameSize+8) // stack pointer at function entry
		a.l("movq %%rsi, %d(%%rsp)", RegOff("sp"))
		a.l("movq $0, %d(%%rsp)", RegOff("full"))
		a.l("movq (%%rsi), %%rsi") // parent ip
		a.l("subq $5, %%rdi")      // ip of the site
	}
	// the counter first: a thread that read the old ops from the cell is waited for
	a.enterDepth()
	a.label(name + "_op_ptr")
	a.l("leaq -8(%%rdi), %%rdx")
	a.l("andq $-8, %%rdx")     // the slot
	a.l("movq (%%rdx), %%rdx") // the cell
	a.l("movq (%%rdx), %%rdx") // the ops (the runtime's release store)
	a.l("movq %%rsp, %%rcx")   // struct ftrace_regs *
	a.l("testq %%rdx, %%rdx")
	a.l("jz 1f")
	a.label(name + "_call")
	a.l("call *(%%rdx)") // ops->func (offset 0 of struct ftrace_ops)
	a.raw("1:\n")
	a.leaveDepth()
	if !lean {
		a.restoreXMM()
	}
	for _, r := range callerSaved {
		a.l("movq %d(%%rsp), %%%s", RegOff(r), r)
	}
	a.epilogue(name)
}

// callopsSetNovec emits ftrace_callops_set_novec, the callback of a set of ops in a cell
// served by the lean CALL_OPS caller: called with ip, parent ip, the set (a struct
// ftrace_ops whose private field points at a NULL-terminated array of the set's ops) and
// the frame, it calls each ops' func(ip, parent ip, ops, frame). Only %rbx, %r12, %r13 and
// %r14 (saved) hold its state; like its callbacks, it never touches a vector register.
// Four pushes and 8 bytes keep the stack as aligned as it was at the caller's call.
func (a *asm) callopsSetNovec() {
	const name = "ftrace_callops_set_novec"
	a.fn(name)
	a.l("pushq %%rbx")
	a.l("pushq %%r12")
	a.l("pushq %%r13")
	a.l("pushq %%r14")
	a.l("subq $8, %%rsp")
	a.l("movq %%rdi, %%r12")
	a.l("movq %%rsi, %%r13")
	a.l("movq %%rcx, %%r14")
	a.l("movq 16(%%rdx), %%rbx") // ops.private: the array
	a.l("movq (%%rbx), %%rdx")
	a.raw("1:\n")
	a.l("movq %%r12, %%rdi")
	a.l("movq %%r13, %%rsi")
	a.l("movq %%r14, %%rcx")
	a.l("call *(%%rdx)")
	a.l("addq $8, %%rbx")
	a.l("movq (%%rbx), %%rdx")
	a.l("testq %%rdx, %%rdx")
	a.l("jnz 1b")
	a.l("addq $8, %%rsp")
	a.l("popq %%r14")
	a.l("popq %%r13")
	a.l("popq %%r12")
	a.l("popq %%rbx")
	a.label(name + "_end")
	a.l("ret")
	a.l(".size %s, .-%s", name, name)
}

// saveRegsFrame emits the regs caller's prologue: every general register, the flags and
// the vector argument registers; orig_ax (the direct trampoline to divert to) cleared.
func (a *asm) saveRegsFrame() {
	a.l("leaq -%d(%%rsp), %%rsp", FrameSize) // lea leaves the flags alone
	a.l("pushfq")
	a.l("popq %d(%%rsp)", RegOff("flags"))
	a.saveXMM()
	for _, r := range regsSaved {
		a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
	}
	a.l("movq $0, %d(%%rsp)", RegOff("orig_ax"))
}

// regsEpilogue returns where the callbacks said (the frame's ip), or, when a direct ops'
// callback set orig_ax (ftrace_regs_set_direct), enters that direct trampoline as if the
// site had called it: its address goes into the slot below the return address (xmm7's
// upper half, already restored) and the final ret pops it, leaving the return into the
// traced function on the stack (the kernel's x86 ftrace_regs_caller does the same).
func (a *asm) regsEpilogue(name string) {
	a.l("movq %d(%%rsp), %%rax", RegOff("ip")) // resume where the callback said
	a.l("movq %%rax, %d(%%rsp)", FrameSize)
	a.restoreXMM()
	a.l("cmpq $0, %d(%%rsp)", RegOff("orig_ax"))
	a.l("jnz 2f")
	a.restoreRegs()
	a.l("leaq %d(%%rsp), %%rsp", FrameSize)
	a.l("ret")
	a.raw("2:\n")
	a.l("movq %d(%%rsp), %%rax", RegOff("orig_ax"))
	a.l("movq %%rax, %d(%%rsp)", FrameSize-8)
	a.restoreRegs()
	a.l("leaq %d(%%rsp), %%rsp", FrameSize-8)
	a.label(name + "_end")
	a.l("ret")
}

func (a *asm) restoreRegs() {
	for _, r := range regsSaved {
		a.l("movq %d(%%rsp), %%%s", RegOff(r), r)
	}
	a.l("pushq %d(%%rsp)", RegOff("flags"))
	a.l("popfq")
}

func (a *asm) regsCaller(name, callLabel string) {
	a.fn(name)
	a.saveRegsFrame()
	a.common(name, callLabel, 1)
	a.regsEpilogue(name)
	a.l(".size %s, .-%s", name, name)
}

type multiKind int

const (
	multiPlain multiKind = iota // the plain caller's frame
	multiNovec                  // every callback proven an integer-only leaf (leanCaller)
	multiRegs                   // the regs caller's frame and exits
)

// multiCaller emits a template for a site served by several ops: the caller's prologue,
// the op slot load and test at name_op_ptr (a jz rel32 to name_done when the slot is
// cleared), one segment [name_seg, name_done) and the caller's epilogue.  The runtime
// clones the prologue, then the segment once per ops of the site's set (the movabs at
// name_seg_op gets the ops, the call at name_call its callback), then the epilogue, with
// the jz re-aimed at it.  Each segment reloads the arguments: a callback may clobber them.
// The frame's ip field is not reread: an IPMODIFY callback's new ip must not become the
// next callback's site. Nor is the parent ip: the graph tracer's callback replaces it in the
// stack with its return hook, and every ops of the set must see the caller (as the
// kernel's list function passes them all one parent ip); it is read once into %rbx, which
// the callbacks keep, saved in the frame's rbx field (full frames save it there anyway).
func (a *asm) multiCaller(name string, kind multiKind) {
	a.fn(name)
	switch kind {
	case multiRegs:
		a.saveRegsFrame()
	case multiPlain:
		a.l("subq $%d, %%rsp", FrameSize)
		a.saveXMM()
		for _, r := range callerSaved {
			a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
		}
		a.l("movq %%rbx, %d(%%rsp)", RegOff("rbx"))
	case multiNovec:
		a.l("subq $%d, %%rsp", FrameSize)
		for _, r := range callerSaved {
			a.l("movq %%%s, %d(%%rsp)", r, RegOff(r))
		}
		a.l("movq $%d, %d(%%rsp)", leanFull, RegOff("full"))
		a.l("movq %%rbx, %d(%%rsp)", RegOff("rbx"))
	}
	if kind != multiNovec {
		a.l("movq %d(%%rsp), %%rax", FrameSize)
		a.l("movq %%rax, %d(%%rsp)", RegOff("ip"))
		a.l("leaq %d(%%rsp), %%rax", FrameSize+8)
		a.l("movq %%rax, %d(%%rsp)", RegOff("sp"))
		full := 0
		if kind == multiRegs {
			full = 1
		}
		a.l("movq $%d, %d(%%rsp)", full, RegOff("full"))
	}
	a.enterDepth()
	a.l("movq %d(%%rsp), %%rbx", FrameSize+8) // parent ip, before any callback runs
	a.label(name + "_op_ptr")
	a.l("movq ftrace_template_op(%%rip), %%rdx") // 48 8b 15 rel32, re-pointed in clones
	a.l("testq %%rdx, %%rdx")
	a.l(".byte 0x0f, 0x84") // jz rel32 to name_fallback, re-aimed in clones
	a.l(".long %s_fallback - (. + 4)", name)
	a.label(name + "_seg")
	a.l("movq %d(%%rsp), %%rdi", FrameSize) // return address = site + 5
	a.l("movq %%rbx, %%rsi")                // parent ip
	a.l("subq $5, %%rdi")                   // ip of the site
	a.label(name + "_seg_op")
	a.l("movabsq $0, %%rdx") // 48 ba imm64: this segment's ops
	a.l("movq %%rsp, %%rcx") // struct ftrace_regs *
	a.label(name + "_call")
	a.l("call ftrace_stub") // e8 rel32: this segment's callback
	a.label(name + "_done")
	a.leaveDepth()
	a.multiExit(name, kind, false)

	// name_fallback: the slot was cleared (the set is being retired) before this thread
	// read it: no callback of the set may run from here any more, but the ops of the set
	// still registered must see the call. Restore everything and continue in the arena's
	// shared caller of the same kind (the list function) as if the site had called it;
	// the thread leaves this trampoline's code before any callback runs.
	a.label(name + "_fallback")
	a.leaveDepth()
	a.multiExit(name, kind, true)
}

// multiExit emits the restore and the exit of a multi-ops template: ret (through the
// regs exits for multiRegs), or for the fallback a jmp rel32 (e9, aimed by the runtime).
func (a *asm) multiExit(name string, kind multiKind, fallback bool) {
	if kind == multiRegs && !fallback {
		a.regsEpilogue(name)
		return
	}
	if kind != multiNovec {
		a.restoreXMM()
	}
	switch kind {
	case multiRegs:
		a.restoreRegs()
		a.l("leaq %d(%%rsp), %%rsp", FrameSize)
	default:
		for _, r := range callerSaved {
			a.l("movq %d(%%rsp), %%%s", RegOff(r), r)
		}
		a.l("movq %d(%%rsp), %%rbx", RegOff("rbx"))
		a.l("addq $%d, %%rsp", FrameSize)
	}
	if !fallback {
		a.label(name + "_end")
		a.l("ret")
		return
	}
	a.l(".byte 0xe9") // jmp rel32 to the shared caller
	a.l(".long 0")
	a.label(name + "_fallback_end")
	a.l(".size %s, .-%s", name, name)
}

func (a *asm) epilogue(name string) {
	a.l("addq $%d, %%rsp", FrameSize)
	a.label(name + "_end")
	a.l("ret")
	a.l(".size %s, .-%s", name, name)
}

// Assembly returns the text of ftrace_x86_64.S.
func Assembly() string {
	a := &asm{}
	a.raw("/* Code generated by trampgen; DO NOT EDIT. */\n")
	a.raw("/* Trampoline templates of the ftkit runtime (x86-64). See docs/runtime.md. */\n\n")
	a.l(".text")
	a.global("ftrace_caller", "ftrace_caller_op_ptr", "ftrace_call", "ftrace_caller_end",
		"ftrace_caller_novec", "ftrace_caller_novec_op_ptr", "ftrace_novec_call",
		"ftrace_caller_novec_end", "ftrace_regs_caller", "ftrace_regs_caller_op_ptr", "ftrace_regs_call",
		"ftrace_regs_caller_end", "ftrace_stub", "__fentry__")
	for _, n := range []string{"ftrace_multi_caller", "ftrace_multi_caller_novec", "ftrace_regs_multi_caller"} {
		a.global(n, n+"_op_ptr", n+"_seg", n+"_seg_op", n+"_call", n+"_done", n+"_end",
			n+"_fallback", n+"_fallback_end")
	}
	for _, n := range []string{"ftrace_callops_caller", "ftrace_callops_caller_novec"} {
		a.global(n, n+"_op_ptr", n+"_call", n+"_end")
	}
	a.global("ftrace_callops_set_novec", "ftrace_callops_set_novec_end")
	a.global("ftrace_direct_count", "ftrace_direct_count_end", "ftrace_direct_fexit",
		"ftrace_direct_fexit_data", "ftrace_direct_fexit_end")

	// ftrace_caller: argument registers only.
	a.plainCaller("ftrace_caller", "ftrace_call")
	// ftrace_caller_novec: the lean caller, for a callback the runtime proved to leave
	// the vector registers alone (it reaches other code through ftrt_lean_call).
	a.leanCaller("ftrace_caller_novec", "ftrace_novec_call")

	// ftrace_regs_caller: every register and the flags; the callback may change the
	// saved ip, and the trampoline returns there instead of into the traced function;
	// a direct ops' callback may divert it into a direct trampoline (orig_ax).
	a.regsCaller("ftrace_regs_caller", "ftrace_regs_call")

	// The multi-ops templates: one op slot (cleared to stop them), then one segment per
	// ops of the site's set, each calling that ops' callback with that ops (see multi).
	a.multiCaller("ftrace_multi_caller", multiPlain)
	a.multiCaller("ftrace_multi_caller_novec", multiNovec)
	a.multiCaller("ftrace_regs_multi_caller", multiRegs)

	// ftrace_callops_caller: CALL_OPS sites, the ops read from the site's cell.
	// ftrace_callops_caller_novec: the same for callbacks the lean caller may run.
	a.callopsCaller("ftrace_callops_caller", false)
	a.callopsCaller("ftrace_callops_caller_novec", true)
	a.callopsSetNovec()
	a.leanCall()

	// Ready direct trampolines (register_ftrace_direct): see direct.go.
	a.directTrampolines()

	// ftrace_stub and __fentry__: plain returns (un-ftlinked programs still run).
	a.fn("ftrace_stub")
	a.l("ret")
	a.l(".size ftrace_stub, .-ftrace_stub")
	a.fn("__fentry__")
	a.l("ret")
	a.l(".size __fentry__, .-__fentry__")

	// The op slot of the templates themselves (clones get their own slot).
	a.l(".section .rodata")
	a.l(".p2align 3")
	a.l(".type ftrace_template_op, @object")
	a.label("ftrace_template_op")
	a.l(".quad 0")
	a.l(".size ftrace_template_op, 8")
	a.l(`.section .note.GNU-stack,"",@progbits`)
	return a.b.String()
}

// Header returns the text of ftrace_frame.h.
func Header() string {
	var b strings.Builder
	b.WriteString("/* Code generated by trampgen; DO NOT EDIT. */\n")
	b.WriteString("/* Frame layout of the trampoline templates (offsets from the frame base). */\n")
	b.WriteString("#ifndef FTRT_FRAME_H\n#define FTRT_FRAME_H\n\n")
	fmt.Fprintf(&b, "#define FTRT_FRAME_SIZE %d\n", FrameSize)
	fmt.Fprintf(&b, "#define FTRT_FRAME_XMM0 %d\n", xmmBase)
	fmt.Fprintf(&b, "#define FTRT_FRAME_REGS %d\n", regsBase)
	fmt.Fprintf(&b, "#define FTRT_FRAME_FULL_LEAN %d /* full: a lean caller's frame */\n", leanFull)
	for _, f := range RegFields {
		fmt.Fprintf(&b, "#define FTRT_FRAME_%s %d\n", strings.ToUpper(f), RegOff(f))
	}
	b.WriteString("\n/* Ready direct trampolines (trampgen/direct.go). */\n")
	b.WriteString(directHeader())
	b.WriteString("\n#endif\n")
	return b.String()
}

// Files maps each generated file name to its contents.
func Files() map[string]string {
	return map[string]string{
		"ftrace_x86_64.S": Assembly(),
		"ftrace_frame.h":  Header(),
	}
}
