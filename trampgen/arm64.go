package main

import (
	"fmt"
	"strings"
)

// The aarch64 templates (runtime/src/arch/arm64/ftrace_arm64.S, ftrace_frame.h), after the
// kernel's arm64 ftrace_caller. A site is built with -fpatchable-function-entry=2 and
// prepared by the runtime as
//
//	mov x9, x30     // the traced function's return address (its LR)
//	bl  <tramp>     // or nop while disabled
//
// so a template is entered with x9 = the function's return address (parent ip) and
// x30 = site + 4 (where the function continues), sp = the function's entry sp (16-byte
// aligned). It builds two frame records (so frame-pointer unwinders see the caller and the
// traced function), saves struct ftrace_regs below them and calls the callback with
// (ip = site, parent_ip = x9, op, fregs). It returns with x30 = the saved parent ip (which
// the graph tracer may have replaced by return_to_handler) and branches to the saved ip.
//
// Frame, from sp after `sub sp, sp, #ArmFrameTotal` (S = the entry sp):
//
//	0   .. 111  struct ftrace_pt_regs: x0..x8, fp (x29), ip, sp, full, direct
//	112 .. 239  q0..q7
//	240         frame record of the call site {x29 -> the record at 256, x30 = site + 4}
//	256         frame record of the caller {x29 at entry, x9}; x9's slot (S - 8) is the
//	            return slot (ftrace_regs_get_return_slot)
const (
	ArmRegsBytes  = 14 * 8
	ArmQBase      = ArmRegsBytes
	ArmFrameSize  = ArmRegsBytes + 8*16 // struct ftrace_regs
	ArmRecSite    = ArmFrameSize
	ArmRecCaller  = ArmFrameSize + 16
	ArmFrameTotal = ArmFrameSize + 32
)

// ArmRegFields lists the fields of the arm64 struct ftrace_pt_regs in order (8 bytes each).
var ArmRegFields = []string{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8",
	"fp", "ip", "sp", "full", "direct"}

// ArmRegOff is the offset of an arm64 struct ftrace_pt_regs field from the frame base (sp).
func ArmRegOff(name string) int {
	for i, f := range ArmRegFields {
		if f == name {
			return 8 * i
		}
	}
	panic("trampgen: no arm64 register field " + name)
}

// armDepth adds d to the thread's ftrt_cb_depth (local-exec TLS: constants fixed at link
// time, so the bytes stay valid in clones; libftrt.a is linked into the executable). It
// uses x10 and x11, which hold nothing at a function's entry.
func (a *asm) armDepth(d int) {
	a.l("mrs x10, tpidr_el0")
	a.l("add x10, x10, :tprel_hi12:ftrt_cb_depth, lsl #12")
	a.l("add x10, x10, :tprel_lo12_nc:ftrt_cb_depth")
	a.l("ldr w11, [x10]")
	if d > 0 {
		a.l("add w11, w11, #%d", d)
	} else {
		a.l("sub w11, w11, #%d", -d)
	}
	a.l("str w11, [x10]")
}

func (a *asm) armFn(name string) {
	a.l(".p2align 4")
	a.l(".type %s, %%function", name)
	a.label(name)
}

// armCaller emits a caller: name with the markers name_op_ptr (adrp + ldr of the op slot,
// re-pointed in clones), callLabel (the bl, aimed in clones) and name_end (the runtime
// appends `ret x9` there). full: the value of the frame's full field.
func (a *asm) armCaller(name, callLabel string, full int) {
	a.armFrameCaller(name, callLabel, full, false)
}

// armCallopsCaller emits a CALL_OPS caller (-fpatchable-function-entry=4,2): the frame and
// arguments of ftrace_caller, but the ops comes from the site's cell, whose address the
// 8-byte slot before the site's function holds. x30 is the bl's address + 4, that is the
// function's entry + 8 (+ 12 behind bti c): (x30 & ~7) - 16 is the slot in both cases
// (ftrt_arch_callops_slot). The markers: name_op_ptr (bic, the slot's load, the cell's),
// callLabel (blr to ops->func) and name_end (ret x9 appended). Position-independent
// (nothing pc-relative leaves it): the runtime copies it whole.
func (a *asm) armCallopsCaller(name, callLabel string) {
	a.armFrameCaller(name, callLabel, 0, true)
}

func (a *asm) armFrameCaller(name, callLabel string, full int, callops bool) {
	a.armFn(name)
	a.armSaveFrame(0, full)
	a.l("sub x0, x30, #4") // ip: the site's bl
	a.l("mov x1, x9")      // parent ip
	a.armDepth(1)
	a.label(name + "_op_ptr")
	if callops {
		a.l("bic x2, x30, #7")
		a.l("ldur x2, [x2, #-16]") // the slot: the site's cell
		a.l("ldr x2, [x2]")        // the cell: the ops (one load: old or new, never torn)
		a.l("mov x3, sp")          // struct ftrace_regs *
		a.l("cbz x2, 1f")
		a.l("ldr x10, [x2]") // ops->func
		a.label(callLabel)
		a.l("blr x10")
	} else {
		a.l("adrp x2, ftrace_template_op") // re-pointed at the clone's slot
		a.l("ldr x2, [x2, :lo12:ftrace_template_op]")
		a.l("mov x3, sp") // struct ftrace_regs *
		a.l("cbz x2, 1f")
		a.label(callLabel)
		a.l("bl ftrace_stub") // aimed at the callback in clones
	}
	a.raw("1:\n")
	a.armDepth(-1)
	a.armRestoreFrame(0, full)
	a.label(name + "_end")
	a.l("ret x9")
	a.l(".size %s, .-%s", name, name)
}

// armSaveFrame allocates the callers' frame (struct ftrace_regs and the two frame records)
// at sp + base, base bytes below it for the caller's own use, and fills it. full: the
// value of the frame's full field.
func (a *asm) armSaveFrame(base, full int) {
	a.l("sub sp, sp, #%d", base+ArmFrameTotal)
	a.l("stp x29, x9, [sp, #%d]", base+ArmRecCaller)
	a.l("str x29, [sp, #%d]", base+ArmRegOff("fp"))
	a.l("add x29, sp, #%d", base+ArmRecCaller)
	a.l("stp x29, x30, [sp, #%d]", base+ArmRecSite)
	a.l("add x29, sp, #%d", base+ArmRecSite)
	for i := 0; i < 8; i += 2 {
		a.l("stp x%d, x%d, [sp, #%d]", i, i+1, base+ArmRegOff(fmt.Sprintf("x%d", i)))
	}
	a.l("str x8, [sp, #%d]", base+ArmRegOff("x8"))
	for i := 0; i < 8; i += 2 {
		a.l("stp q%d, q%d, [sp, #%d]", i, i+1, base+ArmQBase+16*i)
	}
	a.l("str x30, [sp, #%d]", base+ArmRegOff("ip"))
	a.l("add x10, sp, #%d", base+ArmFrameTotal)
	a.l("str x10, [sp, #%d]", base+ArmRegOff("sp"))
	a.l("mov x10, #%d", full)
	a.l("stp x10, xzr, [sp, #%d]", base+ArmRegOff("full")) // full, direct
}

// armRestoreFrame restores the registers from the frame armSaveFrame(base, full) made and
// frees it, leaving x9 = where to go on (the saved ip, which a callback may have changed)
// and x30 = the return slot (the caller, or return_to_handler). With base, x19 and x20 come
// back from sp + 0 (the multi-ops callers keep the call's ip and parent there). full: a
// direct ops' callback set the frame's direct (ftrace_regs_set_direct): enter that direct
// trampoline as the site would have called it, x9 = the function's return address and
// x30 = where the function resumes. x16 (IP0) is free at a function's entry, and a br
// through it lands on bti c.
func (a *asm) armRestoreFrame(base, full int) {
	for i := 0; i < 8; i += 2 {
		a.l("ldp q%d, q%d, [sp, #%d]", i, i+1, base+ArmQBase+16*i)
	}
	for i := 0; i < 8; i += 2 {
		a.l("ldp x%d, x%d, [sp, #%d]", i, i+1, base+ArmRegOff(fmt.Sprintf("x%d", i)))
	}
	a.l("ldr x8, [sp, #%d]", base+ArmRegOff("x8"))
	if full == 1 {
		a.l("ldr x16, [sp, #%d]", base+ArmRegOff("direct"))
		a.l("cbz x16, 2f")
		a.l("ldr x9, [sp, #%d]", base+ArmRecCaller+8)
		a.l("ldr x30, [sp, #%d]", base+ArmRegOff("ip"))
		a.l("ldr x29, [sp, #%d]", base+ArmRegOff("fp"))
		a.armFreeFrame(base)
		a.l("br x16")
		a.raw("2:\n")
	}
	a.l("ldr x30, [sp, #%d]", base+ArmRecCaller+8) // the return slot: the caller, or return_to_handler
	a.l("ldr x9, [sp, #%d]", base+ArmRegOff("ip"))
	a.l("ldr x29, [sp, #%d]", base+ArmRegOff("fp"))
	a.armFreeFrame(base)
}

func (a *asm) armFreeFrame(base int) {
	if base > 0 {
		a.l("ldp x19, x20, [sp]")
	}
	a.l("add sp, sp, #%d", base+ArmFrameTotal)
}

// ArmMultiBase is the room below a multi-ops caller's frame: x19 and x20 of the traced
// function, whose registers the caller uses to keep the call's parent ip and ip across the
// callbacks (a graph callback replaces the return slot, and the next ops must still be
// given the real parent).
const ArmMultiBase = 16

// armMultiCaller emits a multi-ops caller, the arm64 counterpart of the x86-64 one: the
// frame of ftrace_caller at sp + ArmMultiBase; the prologue ends at name_seg with the op
// slot's adrp + ldr at name_op_ptr and cbz x2 to the fallback (re-aimed in clones); one
// segment (name_seg .. name_done: x0 = ip, x1 = parent, x2 = the ops as movz/movk at
// name_seg_op, x3 = fregs, bl at name_call) is repeated per ops; the epilogue ends at
// name_end (the runtime appends ret x9); the fallback (name_fallback ..
// name_fallback_end) undoes the prologue and ends with b to the shared caller of the same
// frame (re-aimed), entered as from the site. full: as armCaller's.
func (a *asm) armMultiCaller(name string, full int) {
	const b = ArmMultiBase
	a.armFn(name)
	a.armSaveFrame(b, full)
	a.l("stp x19, x20, [sp]")
	a.l("sub x20, x30, #4") // ip: the site's bl
	a.l("mov x19, x9")      // parent ip
	a.armDepth(1)
	a.label(name + "_op_ptr")
	a.l("adrp x2, ftrace_template_op") // re-pointed at the clone's slot
	a.l("ldr x2, [x2, :lo12:ftrace_template_op]")
	a.l("cbz x2, %s_fallback", name) // the set was killed: the list function runs what is left
	a.label(name + "_seg")
	a.l("mov x0, x20")
	a.l("mov x1, x19")
	a.label(name + "_seg_op")
	a.l("movz x2, #0")
	a.l("movk x2, #0, lsl #16")
	a.l("movk x2, #0, lsl #32")
	a.l("movk x2, #0, lsl #48")
	a.l("add x3, sp, #%d", b) // struct ftrace_regs *
	a.label(name + "_call")
	a.l("bl ftrace_stub") // aimed at the ops' callback in clones
	a.label(name + "_done")
	a.armDepth(-1)
	a.armRestoreFrame(b, full)
	a.label(name + "_end")
	a.l("ret x9")
	// nothing but x2, x10, x11, x19, x20, x29 and sp changed yet: the site's state back
	a.label(name + "_fallback")
	a.armDepth(-1)
	a.l("ldr x2, [sp, #%d]", b+ArmRegOff("x2"))
	a.l("ldr x30, [sp, #%d]", b+ArmRegOff("ip"))
	a.l("ldr x29, [sp, #%d]", b+ArmRegOff("fp"))
	a.armFreeFrame(b)
	a.l("b ftrace_caller") // re-aimed at the arena's shared caller in clones
	a.label(name + "_fallback_end")
	a.l(".size %s, .-%s", name, name)
}

// armDirectCount emits ftrace_direct_count, the per-site call counter of direct.go for
// arm64: entered from a site as any direct trampoline (x9 = the function's return
// address, x30 = the site's bl + 4), it finds or claims the site's slot with exclusive
// loads and stores (no LSE atomics assumed), adds one, and returns into the function with
// x30 restored. It uses x10-x17, which hold nothing at a function's entry.
func (a *asm) armDirectCount() {
	a.armFn("ftrace_direct_count")
	a.l("bti c")            // reached by br through a veneer when the site is far
	a.l("sub x11, x30, #4") // the site
	a.l("mov x12, #%#x", CountMult&0xffff)
	a.l("movk x12, #%#x, lsl #16", CountMult>>16)
	a.l("mul x13, x11, x12")
	a.l("lsr x13, x13, #%d", CountShift)
	a.l("and x13, x13, #%#x", CountSlots-1)
	a.l("lsl x13, x13, #4") // 16-byte slots
	a.l("adrp x14, ftrt_direct_counts")
	a.l("add x14, x14, :lo12:ftrt_direct_counts")
	a.l("mov w15, #%d", CountProbes)
	a.raw("1:\n")
	a.l("add x16, x14, x13")
	a.l("ldar x10, [x16]")
	a.l("cmp x10, x11")
	a.l("b.eq 3f")
	a.l("cbnz x10, 2f")
	a.raw("5:\n") // claim the empty slot
	a.l("ldaxr x10, [x16]")
	a.l("cbnz x10, 6f")
	a.l("stlxr w17, x11, [x16]")
	a.l("cbnz w17, 5b")
	a.l("b 3f")
	a.raw("6:\n")
	a.l("clrex")
	a.l("cmp x10, x11") // claimed meanwhile: by this site?
	a.l("b.eq 3f")
	a.raw("2:\n")
	a.l("add x13, x13, #16")
	a.l("and x13, x13, #%#x", (CountSlots-1)<<4)
	a.l("subs w15, w15, #1")
	a.l("b.ne 1b")
	a.l("adrp x16, ftrt_direct_count_lost")
	a.l("add x16, x16, :lo12:ftrt_direct_count_lost")
	a.l("b 7f")
	a.raw("3:\n")
	a.l("add x16, x16, #8") // the count
	a.raw("7:\n")
	a.l("ldxr x10, [x16]")
	a.l("add x10, x10, #1")
	a.l("stxr w17, x10, [x16]")
	a.l("cbnz w17, 7b")
	a.l("mov x10, x30")
	a.l("mov x30, x9")
	a.l("ret x10")
	a.l(".size ftrace_direct_count, .-ftrace_direct_count")
}

// The arm64 entry/exit trampoline's frame, from its sp: the argument registers x0-x7 (the
// args passed to the callbacks), x8, where the function resumes (the site + 4), q0-q7,
// the block, the function's results (x0, x1 and q0-q3: an HFA of four).
const (
	afxArgs   = 0
	afxX8     = 64
	afxResume = 72
	afxQ      = 80
	afxBlock  = 208
	afxRetX   = 224
	afxRetQ   = 240
	afxSize   = 304
)

// armAtomicAdd emits an exclusive load/add/store loop adding d to the word at [reg]
// (x11, w12 as scratch; label is a local numeric label).
func (a *asm) armAtomicAdd(reg string, d int, label int) {
	a.raw(fmt.Sprintf("%d:\n", label))
	a.l("ldxr x11, [%s]", reg)
	if d > 0 {
		a.l("add x11, x11, #%d", d)
	} else {
		a.l("sub x11, x11, #%d", -d)
	}
	a.l("stxr w12, x11, [%s]", reg)
	a.l("cbnz w12, %db", label)
}

// armDirectFexit emits the template ftrace_direct_fexit of direct.go for arm64. Entered as
// any direct trampoline (x9 = the function's return address, x30 = the site's bl + 4), it
// keeps a frame record {x29, x9} (unwinders see the caller), calls entry(ip, parent_ip,
// args, data) with args = x0..x7 as saved, then the function itself past its site with
// the arguments as entry left them and a copy of StackArgWords stack words, then
// exit(ip, parent_ip, args, x0, data), and returns the function's results (x0, x1, q0-q3;
// memory through x8) to the caller. The function is entered by ret, not blr: its body is
// no BTI landing pad, and ret is not checked; its return comes back by the x30 given.
// The block's address is four movz/movk of x16 at ftrace_direct_fexit_data, set in clones
// (ftrt_arch_fexit_fill); the clone is copied whole: nothing pc-relative leaves it.
func (a *asm) armDirectFexit() {
	a.armFn("ftrace_direct_fexit")
	a.l("bti c") // entered by br when the regs caller diverts into it
	a.l("stp x29, x9, [sp, #-16]!")
	a.l("mov x29, sp") // [x29, #8]: the parent; x29 + 16: the stack arguments
	a.l("sub sp, sp, #%d", afxSize)
	for i := 0; i < 8; i += 2 {
		a.l("stp x%d, x%d, [sp, #%d]", i, i+1, afxArgs+8*i)
	}
	a.l("stp x8, x30, [sp, #%d]", afxX8) // x8, the resume address
	for i := 0; i < 8; i += 2 {
		a.l("stp q%d, q%d, [sp, #%d]", i, i+1, afxQ+16*i)
	}
	a.label("ftrace_direct_fexit_data")
	a.l("movz x16, #0")
	a.l("movk x16, #0, lsl #16")
	a.l("movk x16, #0, lsl #32")
	a.l("movk x16, #0, lsl #48")
	a.l("str x16, [sp, #%d]", afxBlock)
	a.l("add x10, x16, #%d", blockInflight)
	a.armAtomicAdd("x10", 1, 1)
	a.l("ldr x0, [sp, #%d]", afxResume)
	a.l("sub x0, x0, #4") // ip: the site
	a.l("ldr x1, [x29, #8]")
	a.l("mov x2, sp")
	a.l("ldr x3, [x16, #%d]", blockData)
	a.l("ldr x10, [x16, #%d]", blockEntry)
	a.l("blr x10")
	a.l("sub sp, sp, #%d", 8*StackArgWords)
	a.l("add x10, x29, #16")
	for i := 0; i < StackArgWords; i += 2 {
		a.l("ldp x11, x12, [x10, #%d]", 8*i)
		a.l("stp x11, x12, [sp, #%d]", 8*i)
	}
	off := 8 * StackArgWords
	for i := 0; i < 8; i += 2 {
		a.l("ldp x%d, x%d, [sp, #%d]", i, i+1, off+afxArgs+8*i)
	}
	a.l("ldr x8, [sp, #%d]", off+afxX8)
	for i := 0; i < 8; i += 2 {
		a.l("ldp q%d, q%d, [sp, #%d]", i, i+1, off+afxQ+16*i)
	}
	a.l("ldr x16, [sp, #%d]", off+afxResume)
	a.l("adr x30, 2f")
	a.l("ret x16") // the function, past its site; it returns to 2f
	a.raw("2:\n")
	a.l("add sp, sp, #%d", 8*StackArgWords)
	a.l("stp x0, x1, [sp, #%d]", afxRetX)
	a.l("stp q0, q1, [sp, #%d]", afxRetQ)
	a.l("stp q2, q3, [sp, #%d]", afxRetQ+32)
	a.l("ldr x16, [sp, #%d]", afxBlock)
	a.l("ldr x3, [sp, #%d]", afxRetX)
	a.l("ldr x0, [sp, #%d]", afxResume)
	a.l("sub x0, x0, #4")
	a.l("ldr x1, [x29, #8]")
	a.l("mov x2, sp")
	a.l("ldr x4, [x16, #%d]", blockData)
	a.l("ldr x10, [x16, #%d]", blockExit)
	a.l("blr x10")
	a.l("ldr x16, [sp, #%d]", afxBlock)
	a.l("add x10, x16, #%d", blockInflight)
	a.armAtomicAdd("x10", -1, 3)
	a.l("ldp x0, x1, [sp, #%d]", afxRetX)
	a.l("ldp q0, q1, [sp, #%d]", afxRetQ)
	a.l("ldp q2, q3, [sp, #%d]", afxRetQ+32)
	a.l("mov sp, x29")
	a.l("ldp x29, x9, [sp], #16") // x9: the caller, where the appended ret x9 goes
	a.label("ftrace_direct_fexit_end")
	a.l("ret x9")
	a.l(".size ftrace_direct_fexit, .-ftrace_direct_fexit")
}

// ArmAssembly returns the text of ftrace_arm64.S.
func ArmAssembly() string {
	a := &asm{}
	a.raw("/* Code generated by trampgen; DO NOT EDIT. */\n")
	a.raw("/* Trampoline templates of the ftkit runtime (arm64). See docs/runtime.md. */\n\n")
	a.raw("#include \"gnu_property.h\"\n\n")
	a.l(".text")
	a.global("ftrace_caller", "ftrace_caller_op_ptr", "ftrace_call", "ftrace_caller_end",
		"ftrace_caller_novec", "ftrace_caller_novec_op_ptr", "ftrace_novec_call",
		"ftrace_caller_novec_end", "ftrace_regs_caller", "ftrace_regs_caller_op_ptr", "ftrace_regs_call",
		"ftrace_regs_caller_end", "ftrace_stub", "__fentry__")
	for _, n := range []string{"ftrace_multi_caller", "ftrace_multi_caller_novec", "ftrace_regs_multi_caller"} {
		a.global(n, n+"_op_ptr", n+"_seg", n+"_seg_op", n+"_call", n+"_done", n+"_end",
			n+"_fallback", n+"_fallback_end")
	}
	a.global("ftrace_direct_fexit", "ftrace_direct_fexit_data", "ftrace_direct_fexit_end")
	for _, n := range []string{"ftrace_callops_caller", "ftrace_callops_caller_novec"} {
		a.global(n, n+"_op_ptr", n+"_call", n+"_end")
	}
	a.global("ftrace_callops_set_novec", "ftrace_direct_count")

	// ftrace_caller: the argument registers, x8, q0..q7, fp, ip and sp.
	a.armCaller("ftrace_caller", "ftrace_call", 0)
	// ftrace_caller_novec: the same (the runtime never proves a callback lean on arm64).
	a.armCaller("ftrace_caller_novec", "ftrace_novec_call", 0)
	// ftrace_regs_caller: the same frame marked full; the callback may change ip (the
	// trampoline branches there) or set direct (it enters that direct trampoline).
	a.armCaller("ftrace_regs_caller", "ftrace_regs_call", 1)

	// ftrace_callops_caller: the CALL_OPS caller, and its lean twin (arm64 proves no
	// callback lean, so the runtime does not pick it; it is the same code).
	a.armCallopsCaller("ftrace_callops_caller", "ftrace_callops_caller_call")
	a.armCallopsCaller("ftrace_callops_caller_novec", "ftrace_callops_caller_novec_call")

	// the multi-ops callers: a site served by several ops runs a clone of exactly its set
	// (the novec one is the same code, as above)
	a.armMultiCaller("ftrace_multi_caller", 0)
	a.armMultiCaller("ftrace_multi_caller_novec", 0)
	a.armMultiCaller("ftrace_regs_multi_caller", 1)

	// ftrace_callops_set_novec: a lean set's function. The callers always build the full
	// frame here, so it is ftrt_callops_func (ftrace_core.c), under the name the core
	// tells lean sets by.
	a.armFn("ftrace_callops_set_novec")
	a.l("bti c") // an ops function: called by blr
	a.l("b ftrt_callops_func")
	a.l(".size ftrace_callops_set_novec, .-ftrace_callops_set_novec")
	a.armDirectCount()
	a.armDirectFexit()

	// The ready direct trampolines' counter table (read by ftrace_direct_count_read).
	a.l(".bss")
	a.l(".p2align 6")
	a.l(".globl ftrt_direct_counts")
	a.l(".type ftrt_direct_counts, %%object")
	a.label("ftrt_direct_counts")
	a.l(".zero %d", CountSlots*16)
	a.l(".size ftrt_direct_counts, %d", CountSlots*16)
	a.l(".globl ftrt_direct_count_lost")
	a.l(".type ftrt_direct_count_lost, %%object")
	a.label("ftrt_direct_count_lost")
	a.l(".zero 8")
	a.l(".size ftrt_direct_count_lost, 8")
	a.l(".text")

	// ftrace_stub and __fentry__: plain returns (ftrace_stub is also an ops function,
	// called by blr: a BTI landing pad first).
	a.armFn("ftrace_stub")
	a.l("bti c")
	a.l("ret")
	a.l(".size ftrace_stub, .-ftrace_stub")
	a.armFn("__fentry__")
	a.l("bti c")
	a.l("ret")
	a.l(".size __fentry__, .-__fentry__")

	// The op slot of the templates themselves (clones get their own slot).
	a.l(".section .rodata")
	a.l(".p2align 3")
	a.l(".type ftrace_template_op, %%object")
	a.label("ftrace_template_op")
	a.l(".quad 0")
	a.l(".size ftrace_template_op, 8")
	a.raw("FTRT_GNU_PROPERTY_BTI_PAC\n")
	a.l(`.section .note.GNU-stack,"",%%progbits`)
	return a.b.String()
}

// ArmHeader returns the text of the arm64 ftrace_frame.h.
func ArmHeader() string {
	var b strings.Builder
	b.WriteString("/* Code generated by trampgen; DO NOT EDIT. */\n")
	b.WriteString("/* Frame layout of the arm64 trampoline templates (offsets from sp). */\n")
	b.WriteString("#ifndef FTRT_FRAME_H\n#define FTRT_FRAME_H\n\n")
	fmt.Fprintf(&b, "#define FTRT_FRAME_SIZE %d\n", ArmFrameSize)
	fmt.Fprintf(&b, "#define FTRT_FRAME_TOTAL %d\n", ArmFrameTotal)
	fmt.Fprintf(&b, "#define FTRT_FRAME_Q0 %d\n", ArmQBase)
	fmt.Fprintf(&b, "#define FTRT_FRAME_REC_SITE %d\n", ArmRecSite)
	fmt.Fprintf(&b, "#define FTRT_FRAME_REC_CALLER %d\n", ArmRecCaller)
	for _, f := range ArmRegFields {
		fmt.Fprintf(&b, "#define FTRT_FRAME_%s %d\n", strings.ToUpper(f), ArmRegOff(f))
	}
	b.WriteString("\n/* Ready direct trampolines (trampgen/direct.go, arm64.go). */\n")
	b.WriteString(directHeader())
	b.WriteString("\n#endif\n")
	return b.String()
}

// ArmFiles maps each generated arm64 file name to its contents.
func ArmFiles() map[string]string {
	return map[string]string{
		"ftrace_arm64.S": ArmAssembly(),
		"ftrace_frame.h": ArmHeader(),
	}
}
