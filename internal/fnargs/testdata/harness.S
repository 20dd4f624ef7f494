/* SPDX-License-Identifier: Apache-2.0 */
/* A test __fentry__ for fnargs: programs built with -pg -mfentry call it first thing in
 * every function; it hands the argument registers and the entry stack to
 * harness_entry (harness.c), which redirects the function's return to harness_return,
 * which hands the return registers to harness_exit. No ptrace, no debugger. */
	.text
	.globl	__fentry__
	.type	__fentry__, @function
__fentry__:
	push	%rbp
	mov	%rsp, %rbp
	sub	$160, %rsp
	and	$-16, %rsp
	mov	%rdi, 0(%rsp)
	mov	%rsi, 8(%rsp)
	mov	%rdx, 16(%rsp)
	mov	%rcx, 24(%rsp)
	mov	%r8, 32(%rsp)
	mov	%r9, 40(%rsp)
	mov	%rax, 48(%rsp)
	movdqu	%xmm0, 64(%rsp)
	movdqu	%xmm1, 80(%rsp)
	movq	%xmm2, 96(%rsp)
	movq	%xmm3, 104(%rsp)
	movq	%xmm4, 112(%rsp)
	movq	%xmm5, 120(%rsp)
	movq	%xmm6, 128(%rsp)
	movq	%xmm7, 136(%rsp)
	mov	%rsp, %rdi		/* the saved registers */
	lea	16(%rbp), %rsi		/* the function's entry %rsp */
	mov	8(%rbp), %rdx		/* our return address: the function's start + 5 */
	call	harness_entry
	mov	0(%rsp), %rdi
	mov	8(%rsp), %rsi
	mov	16(%rsp), %rdx
	mov	24(%rsp), %rcx
	mov	32(%rsp), %r8
	mov	40(%rsp), %r9
	mov	48(%rsp), %rax
	movdqu	64(%rsp), %xmm0
	movdqu	80(%rsp), %xmm1
	movq	96(%rsp), %xmm2
	movq	104(%rsp), %xmm3
	movq	112(%rsp), %xmm4
	movq	120(%rsp), %xmm5
	movq	128(%rsp), %xmm6
	movq	136(%rsp), %xmm7
	leave
	ret
	.size	__fentry__, .-__fentry__

	.globl	harness_return
	.type	harness_return, @function
harness_return:
	sub	$8, %rsp		/* the real return address goes here */
	push	%rax
	push	%rdx
	sub	$40, %rsp
	movdqu	%xmm0, 0(%rsp)
	movdqu	%xmm1, 16(%rsp)
	mov	%rax, %rdi
	mov	%rdx, %rsi
	movq	%xmm0, %rdx
	movq	%xmm1, %rcx
	call	harness_exit
	mov	%rax, 56(%rsp)
	movdqu	0(%rsp), %xmm0
	movdqu	16(%rsp), %xmm1
	add	$40, %rsp
	pop	%rdx
	pop	%rax
	ret
	.size	harness_return, .-harness_return
	.section .note.GNU-stack,"",@progbits
