/*
 * patch_funcs.S - NFUNC + 1 tiny functions for the patching benchmark, 16 bytes apart; each
 * starts with a 5-byte nop site (as ftlink leaves it) and returns.  pb_stub is the empty
 * target the sites are switched to.
 */
#ifndef NFUNC
#define NFUNC 300000
#endif
	.text
	.globl pb_base, pb_stub
	.p2align 12
pb_base:
	.rept NFUNC + 1
	.p2align 4, 0xcc
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	ret
	.endr
	.p2align 4, 0xcc
pb_stub:
	ret
	.section .note.GNU-stack, "", @progbits
