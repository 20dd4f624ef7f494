/*
 * NSITES generated functions ("nop5; ret", 16 bytes apart) and their call-site table in
 * ftlink's format (sorted, magic 0xF7CB), for the start-up benchmark.  NSITES is set on
 * the command line (-DNSITES=300000).
 */
#if !defined(NSITES)
#define NSITES 300000
#endif
	.text
	.p2align 4
	.globl gen_first
gen_first:
	.rept NSITES
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	ret
	.p2align 4
	.endr

	.section __mcount_loc, "a"
	.p2align 3
	.set i, 0
	.rept NSITES
	.long gen_first + i * 16 - .
	.byte 5, 1
	.short 0xF7CB
	.set i, i + 1
	.endr
	.section .note.GNU-stack, "", @progbits
