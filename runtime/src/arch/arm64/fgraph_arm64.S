/* SPDX-License-Identifier: Apache-2.0 */
/*
 * return_to_handler (arm64): where a hooked function returns to (fgraph.c).
 *
 * The trampoline kept the function's return address in its frame at the entry sp - 8 (the
 * return slot) and the graph tracer put this address there, which the trampoline gave the
 * function in x30.  The function's ret lands here with sp back at its entry value, so the
 * slot is sp - 8: fgraph_return(sp, regs) finds the frame as on x86-64.
 * Kept around the C part: x0-x7 (integer and pointer results, small structs), q0-q7
 * (floating-point and vector results, HFAs), and x8-x15 (caller-saved; a caller built
 * with -fipa-ra may keep values there across a call to a function it knows leaves them).
 * fgraph_return() (or the fused graph user's return: fgraph_return_hook, fgraph_fast.h) gets
 * them as struct ftrace_ret_regs and gives back the real return address, which goes into
 * x30 for the ret.
 */
#include "gnu_property.h"

	.text
	.globl return_to_handler
	.hidden return_to_handler
	.type return_to_handler, %function
	.p2align 4
return_to_handler:
	sub sp, sp, #272
	stp x29, x30, [sp, #0]
	mov x29, sp
	stp x0, x1, [sp, #16]
	stp x2, x3, [sp, #32]
	stp x4, x5, [sp, #48]
	stp x6, x7, [sp, #64]
	stp x8, x9, [sp, #80]
	stp x10, x11, [sp, #96]
	stp x12, x13, [sp, #112]
	stp x14, x15, [sp, #128]
	stp q0, q1, [sp, #144]
	stp q2, q3, [sp, #176]
	stp q4, q5, [sp, #208]
	stp q6, q7, [sp, #240]
	add x0, sp, #272
	add x1, sp, #16		/* x0-x15, q0-q7: struct ftrace_ret_regs */
	adrp x16, fgraph_return_hook
	ldr x16, [x16, #:lo12:fgraph_return_hook]
	blr x16
	mov x30, x0
	ldp x0, x1, [sp, #16]
	ldp x2, x3, [sp, #32]
	ldp x4, x5, [sp, #48]
	ldp x6, x7, [sp, #64]
	ldp x8, x9, [sp, #80]
	ldp x10, x11, [sp, #96]
	ldp x12, x13, [sp, #112]
	ldp x14, x15, [sp, #128]
	ldp q0, q1, [sp, #144]
	ldp q2, q3, [sp, #176]
	ldp q4, q5, [sp, #208]
	ldp q6, q7, [sp, #240]
	ldr x29, [sp, #0]
	add sp, sp, #272
	ret
	.size return_to_handler, .-return_to_handler

FTRT_GNU_PROPERTY_BTI_PAC
	.section .note.GNU-stack, "", %progbits
