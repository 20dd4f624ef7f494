/*
 * stress_funcs.S - 1000 traced functions for the stress test, with real __fentry__ calls
 * (recordmcount tables them, ftlink nops them).  Function i returns i.  Kinds by i % 4:
 *   0: call __fentry__ (5 bytes, e8), 16-byte aligned entry
 *   1: the same, entry at offset 61 of a 64-byte line: the site straddles the line
 *   2: call *__fentry__@GOTPCREL(%rip) (6 bytes, ff 15; the linker relaxes it to 67 e8)
 *   3: the same at offset 60 of a line: straddles
 * stress_fns[] lists them.
 * With -DCALLOPS each function has 8 nops right before it, listed in
 * __patchable_function_entries as gcc's -fpatchable-function-entry=8,8 lists them: kinds 0
 * and 2 get an 8-byte aligned area (CALL_OPS sites), kinds 1 and 3 an unaligned one (sites
 * served as usual: both kinds in one program).
 */
#define NFUNC 1000
	.altmacro
	.macro stress_fn idx, kind
#ifdef CALLOPS
	.section __patchable_function_entries, "awo", @progbits, stress_fn_\idx
	.p2align 3
	.quad stress_pre_\idx
	.text
#define PRE 8
#else
#define PRE 0
#endif
	.if \kind == 0 || \kind == 2
	.p2align 4, 0xcc
	.else
	.p2align 6, 0xcc
	.if \kind == 1
	.skip 61 - PRE, 0xcc
	.else
	.skip 60 - PRE, 0xcc
	.endif
	.endif
#ifdef CALLOPS
stress_pre_\idx:
	.skip 8, 0x90
#endif
	.globl stress_fn_\idx
	.type stress_fn_\idx, @function
stress_fn_\idx:
	.if \kind < 2
	call __fentry__
	.else
	call *__fentry__@GOTPCREL(%rip)
	.endif
	mov $\idx, %eax
	ret
	.size stress_fn_\idx, . - stress_fn_\idx
	.endm

	.macro stress_ptr idx
	.quad stress_fn_\idx
	.endm

	.text
	.set i, 0
	.rept NFUNC
	stress_fn %i, %(i % 4)
	.set i, i + 1
	.endr

	.section .data.rel.ro, "aw"
	.p2align 3
	.globl stress_fns
stress_fns:
	.set i, 0
	.rept NFUNC
	stress_ptr %i
	.set i, i + 1
	.endr

	.section .note.GNU-stack, "", @progbits
