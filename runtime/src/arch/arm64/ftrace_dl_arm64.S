/*
 * dlopen/dlclose hooks (arm64), as on x86-64 (ftrace_dl_x86_64.S): dlopen goes through
 * ftrt_dlopen_hooked only when its caller (x30) is the executable, so that the real
 * dlopen, reached with x30 unchanged, sees the same caller for $ORIGIN and the search
 * path; any other caller is passed to the real dlopen untouched.  dlclose is always hooked.
 * x16/x17 (intra-procedure-call scratch) are free at a call.
 */
#include "gnu_property.h"

	.text
	.globl dlopen
	.type dlopen, %function
	.p2align 4
dlopen:
	bti c				/* called through the PLT (br x17) */
	adrp x16, ftrt_real_dlopen
	ldr x16, [x16, :lo12:ftrt_real_dlopen]
	cbz x16, 2f			/* before the constructor: resolve first */
	adrp x17, ftrt_exe_lo
	ldr x17, [x17, :lo12:ftrt_exe_lo]
	cmp x30, x17
	b.lo 1f
	adrp x17, ftrt_exe_hi
	ldr x17, [x17, :lo12:ftrt_exe_hi]
	cmp x30, x17
	b.hs 1f
	b ftrt_dlopen_hooked
1:	br x16
2:	b ftrt_dlopen_slow
	.size dlopen, .-dlopen

	.globl dlclose
	.type dlclose, %function
	.p2align 4
dlclose:
	bti c
	b ftrt_dlclose_hooked
	.size dlclose, .-dlclose

FTRT_GNU_PROPERTY_BTI_PAC
	.section .note.GNU-stack,"",%progbits
