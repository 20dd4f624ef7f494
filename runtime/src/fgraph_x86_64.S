/* SPDX-License-Identifier: Apache-2.0 */
/*
 * return_to_handler: where a hooked function returns to (fgraph.c).
 *
 * On arrival the function's `ret` has popped the slot, so %rsp - 8 is the slot.
 * Everything a function may return in is preserved around the C part: rax, rdx
 * (integers, pointers, small structs) and xmm0, xmm1 (float/double/vector and
 * mixed small structs). x87 st(0)/st(1) (long double) are not touched by the
 * C part. fgraph_return() gives back the real return address; we jump there.
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
	subq $48, %rsp
	movq %rax, 0(%rsp)
	movq %rdx, 8(%rsp)
	movdqa %xmm0, 16(%rsp)
	movdqa %xmm1, 32(%rsp)
	leaq 8(%rbp), %rdi
	call fgraph_return@PLT
	movq %rax, %r11
	movq 0(%rsp), %rax
	movq 8(%rsp), %rdx
	movdqa 16(%rsp), %xmm0
	movdqa 32(%rsp), %xmm1
	movq %rbp, %rsp
	popq %rbp
	jmp *%r11
	.size return_to_handler, .-return_to_handler

	.section .note.GNU-stack, "", @progbits
