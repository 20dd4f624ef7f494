/*
 * dlopen/dlclose hooks (x86-64), so that objects loaded and unloaded at run time follow the
 * registered ops at once (docs/runtime.md, "Loaded and unloaded objects").
 *
 * glibc's dlopen resolves $ORIGIN and the DT_RPATH/DT_RUNPATH search from its caller's
 * address.  So dlopen only goes through ftrt_dlopen_hooked (a C function in the executable,
 * which calls the real dlopen and then rescans) when the caller is the executable itself,
 * where the real dlopen sees the same object as caller; any other caller (a library) is
 * tail-jumped to the real dlopen untouched, and its objects are noticed at the next API call.
 * dlclose does not depend on its caller and is always hooked.
 */
	.text
	.globl dlopen
	.type dlopen, @function
	.p2align 4
dlopen:
	movq ftrt_real_dlopen(%rip), %rax
	testq %rax, %rax
	jz 2f				/* before the constructor: resolve first */
	movq (%rsp), %r11		/* caller */
	cmpq ftrt_exe_lo(%rip), %r11
	jb 1f
	cmpq ftrt_exe_hi(%rip), %r11
	jae 1f
	jmp ftrt_dlopen_hooked
1:	jmp *%rax
2:	jmp ftrt_dlopen_slow
	.size dlopen, .-dlopen

	.globl dlclose
	.type dlclose, @function
	.p2align 4
dlclose:
	jmp ftrt_dlclose_hooked
	.size dlclose, .-dlclose

	.section .note.GNU-stack,"",@progbits
