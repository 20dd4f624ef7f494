/*
 * A shared library whose site calls __fentry__ through its PLT ("call __fentry__@PLT", as
 * non-PIC-style code does) and one that calls it through the GOT (ff 15, as gcc -fPIC does),
 * with recordmcount-format entries and no ftlink: the runtime must accept both as calls to
 * __fentry__ and nop them (pltmain.c).
 */
	.text
	.globl plt_f
	.type plt_f, @function
plt_f:
.Lplt_site:
	call __fentry__@PLT
	lea (%rdi,%rdi,2), %eax
	ret
	.size plt_f, . - plt_f

	.globl got_f
	.type got_f, @function
got_f:
.Lgot_site:
	call *__fentry__@GOTPCREL(%rip)
	lea 1(%rdi), %eax
	ret
	.size got_f, . - got_f

	.section __mcount_loc, "a"
	.p2align 3
1:	.long .Lplt_site - 1b
	.byte 5, 1
	.short 0xF7CA
2:	.long .Lgot_site - 2b
	.byte 6, 2
	.short 0xF7CA
	.section .note.GNU-stack, "", @progbits
