/* SPDX-License-Identifier: Apache-2.0 */
/*
 * return_to_handler: where a hooked function returns to (fgraph.c).
 *
 * On arrival the function's `ret` has popped the slot, so %rsp - 8 is the slot.
 * Everything a function may return in is preserved around the C part: rax, rdx
 * (integers, pointers, small structs) and xmm0, xmm1 (float/double/vector and
 * mixed small structs). x87 st(0)/st(1) (long double) are not touched by the
 * C part. So are the other caller-saved general registers: a caller built with
 * interprocedural register allocation (gcc turns -fipa-ra back on for functions
 * with an optimize attribute, even under -pg) keeps values in the registers it
 * knows its callee leaves alone, and this path runs C code between the two.
 * fgraph_return(sp, regs), or the fused graph user's return (fgraph_return_hook,
 * fgraph_fast.h), gives back the real return address; we jump there through
 * memory (below the stack pointer, in the red zone), so r11 is preserved too.
 */
	.text
	.globl return_to_handler
	.hidden return_to_handler
	.type return_to_handler, @function
	.p2align 4
return_to_handler:
	pushq %rbp
	movq %rsp, %rbp
	andq $-16, %rsp
	subq $112, %rsp
	movq %rax, 0(%rsp)
	movq %rdx, 8(%rsp)
	movdqa %xmm0, 16(%rsp)
	movdqa %xmm1, 32(%rsp)
	movq %rcx, 48(%rsp)
	movq %rsi, 56(%rsp)
	movq %rdi, 64(%rsp)
	movq %r8, 72(%rsp)
	movq %r9, 80(%rsp)
	movq %r10, 88(%rsp)
	movq %r11, 96(%rsp)
	leaq 8(%rbp), %rdi
	movq %rsp, %rsi		/* rax, rdx, xmm0, xmm1: struct ftrace_ret_regs */
	call *fgraph_return_hook(%rip)
	/* -8(%rbp) is past the saved registers (offset 104 at the lowest) */
	movq %rax, -8(%rbp)
	movq 0(%rsp), %rax
	movq 8(%rsp), %rdx
	movdqa 16(%rsp), %xmm0
	movdqa 32(%rsp), %xmm1
	movq 48(%rsp), %rcx
	movq 56(%rsp), %rsi
	movq 64(%rsp), %rdi
	movq 72(%rsp), %r8
	movq 80(%rsp), %r9
	movq 88(%rsp), %r10
	movq 96(%rsp), %r11
	movq %rbp, %rsp
	popq %rbp
	/* the return address stored at -8(old %rbp) is now at -16(%rsp) */
	jmp *-16(%rsp)
	.size return_to_handler, .-return_to_handler

	.section .note.GNU-stack, "", @progbits
