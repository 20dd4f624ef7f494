/*
 * Functions and a hand-made call-site table in ftlink's format (0xF7CB) with bad entries,
 * for badtable.c: a good nop5 site, an entry of length 7, an entry pointing into read-only
 * data, and an entry pointing at a prologue where the runtime expects its nop (ftlink'ed
 * tables are trusted at load, so that one is refused at the first patch).
 */
	.text
	.p2align 4
	.globl bt_good
	.type bt_good, @function
bt_good:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	mov $1, %eax
	ret
	.size bt_good, . - bt_good
	.p2align 4
	.globl bt_len7
	.type bt_len7, @function
bt_len7:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00
	mov $2, %eax
	ret
	.size bt_len7, . - bt_len7
	.p2align 4
	.globl bt_wrong
	.type bt_wrong, @function
bt_wrong:
	push %rbp
	mov %rsp, %rbp
	pop %rbp
	mov $3, %eax
	ret
	.size bt_wrong, . - bt_wrong

	.section .rodata
	.globl bt_ro
bt_ro:
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x00, 0x00, 0x00

	.section __mcount_loc, "a"
	.p2align 3
1:	.long bt_good - 1b
	.byte 5, 1
	.short 0xF7CB
2:	.long bt_len7 - 2b
	.byte 7, 1
	.short 0xF7CB
3:	.long bt_ro - 3b
	.byte 5, 1
	.short 0xF7CB
4:	.long bt_wrong - 4b
	.byte 5, 1
	.short 0xF7CB
	.section .note.GNU-stack, "", @progbits
