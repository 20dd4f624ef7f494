/*
 * poke_funcs.S - functions with patchable entry sites for the live-patching tests.
 *
 * pk_base holds NFUNC slots of 128 bytes.  Function i starts in slot i at an offset that
 * depends on i % 4, so that sites are aligned or straddle a 64-byte cache line:
 *   0: offset  0, 5-byte site  0f 1f 44 00 00
 *   1: offset 61, 5-byte site  (bytes 61..65: straddles the line at 64)
 *   2: offset 59, 6-byte site  66 0f 1f 44 00 00 (bytes 59..64)
 *   3: offset 62, 6-byte site  66 0f 1f 44 00 00 (bytes 62..67)
 * The padding is int3, so a stray jump into it fails loudly.  After the site each function
 * counts its real calls in pk_calls[i]; the site, when patched, calls pk_stub, which counts
 * in pk_hits[i] (slot found from its return address).
 */
#ifndef NFUNC
#define NFUNC 256
#endif

	.text
	.globl pk_base, pk_end, pk_stub, pk_stub_ptr, pk_calls, pk_hits
	.globl pk_park_fn, pk_tramp, pk_tramp_end, pk_tramp_hold, pk_tramp_in

	.p2align 12
pk_base:
	.set i, 0
	.rept NFUNC
	.p2align 7, 0xcc
	.if (i % 4) == 0
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	.elseif (i % 4) == 1
	.skip 61, 0xcc
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	.elseif (i % 4) == 2
	.skip 59, 0xcc
	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00
	.else
	.skip 62, 0xcc
	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00
	.endif
	lock incq pk_calls + 8 * i(%rip)
	ret
	.set i, i + 1
	.endr
	.p2align 7, 0xcc
pk_end:

/* Called from a site: count pk_hits[(return address - pk_base) / 128].  Keeps registers. */
	.p2align 4
pk_stub:
	push %rax
	push %rdx
	mov 16(%rsp), %rax
	lea pk_base(%rip), %rdx
	sub %rdx, %rax
	shr $7, %rax
	lea pk_hits(%rip), %rdx
	lock incq (%rdx, %rax, 8)
	pop %rdx
	pop %rax
	ret

/* A function whose site may call pk_tramp, a stand-in for a cloned trampoline. */
	.p2align 4
pk_park_fn:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	ret

	.p2align 4
pk_tramp:
	/* rsp is 16-byte aligned here (caller's call + the site's call) */
	cmpl $0, pk_tramp_hold(%rip)
	je 2f
	movl $1, pk_tramp_in(%rip)
1:	pause
	cmpl $0, pk_tramp_hold(%rip)
	jne 1b
2:	call pk_wrapper
	ret
pk_tramp_end:

	.data
	.p2align 3
pk_stub_ptr:
	.quad pk_stub
pk_tramp_hold:
	.long 0
pk_tramp_in:
	.long 0

	.bss
	.p2align 6
pk_calls:
	.skip 8 * NFUNC
pk_hits:
	.skip 8 * NFUNC

	.section .note.GNU-stack, "", @progbits
