// SPDX-License-Identifier: Apache-2.0
/*
 * site_x86_64.c - reading x86-64 call sites for the core (ftrace_core.c): which bytes are
 * a call to __fentry__ or its nop, where a call goes, PLT stubs, and the prologue ends that
 * tell a site not at its function's entry.
 */
#include <string.h>

#include "arch/arch.h"

static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/*
 * recordmcount's length is the form in the object file; the linker may have relaxed ff 15
 * into 67 e8 since: only the length must agree.
 */
unsigned ftrt_arch_fentry_site(const unsigned char *b, int want, int *isnop)
{
	*isnop = 0;
	if (b[0] == 0xe8 && (want < 0 || want == 5))
		return 5;
	if (b[0] == 0xff && b[1] == 0x15 && (want < 0 || want == 6))
		return 6;
	if (b[0] == 0x67 && b[1] == 0xe8 && (want < 0 || want == 6))
		return 6;
	if (!memcmp(b, ftrt_arch_nop(5), 5)) {
		*isnop = 1;
		return 5;
	}
	if (!memcmp(b, ftrt_arch_nop(6), 6)) {
		*isnop = 1;
		return 6;
	}
	return 0;
}

/* e8 / 67 e8 rel32: the target; ff 15 rel32: the GOT slot. */
uintptr_t ftrt_arch_site_call_dest(const unsigned char *b, unsigned len, int *via_got)
{
	int32_t rel;

	memcpy(&rel, b + len - 4, 4);
	*via_got = b[0] == 0xff;
	return (uintptr_t)b + len + (intptr_t)rel;
}

/* The plt stub shapes a call to __fentry__ in a library may go through (jmp *GOT). */
int ftrt_arch_plt_stub(const unsigned char *t)
{
	return (t[0] == 0xff && t[1] == 0x25) || (t[0] == 0xf2 && t[1] == 0xff && t[2] == 0x25) ||
	       (!memcmp(t, endbr64, 4) &&
		((t[4] == 0xff && t[5] == 0x25) || (t[4] == 0xf2 && t[5] == 0xff && t[6] == 0x25)));
}

const unsigned char *ftrt_arch_skip_entry_marker(const unsigned char *b)
{
	return memcmp(b, endbr64, 4) ? b : b + 4;
}

/* [bnd] jmp *rel32(%rip) */
int ftrt_arch_plt_slot(const unsigned char *b, uintptr_t *slot)
{
	int32_t rel;

	if (b[0] == 0xf2)	/* bnd prefix */
		b++;
	if (b[0] != 0xff || b[1] != 0x25)
		return 0;
	memcpy(&rel, b + 2, 4);
	*slot = (uintptr_t)b + 6 + (intptr_t)rel;
	return 1;
}

/*
 * The tracers take the traced function's return address from the top of the stack at the
 * site: wrong when the site follows a GCC nested function's push %r10 (the slot holds the
 * static chain) or a prologue (gcc -pg without -mfentry calls mcount after it; such a call
 * through a PLT stub cannot be told from __fentry__'s by its target).  A prologue ends with
 * push %reg, mov %rsp,%rbp or sub $imm,%rsp, which the end of the previous function or its
 * padding (ret, jmp, nops, int3, ud2) never does (mcountloc.X86PrologueBefore, tested on
 * gcc's output).
 */
const char *ftrt_arch_site_not_at_entry(const unsigned char *b, unsigned before)
{
	static const char mcount[] = "an mcount site: built with -pg without -mfentry, recompile with -pg -mfentry";

	if (before >= 2 && b[-2] == 0x41 && b[-1] == 0x52)
		return "after push %r10, a GCC nested function: the stack is not the entry stack";
	if (before >= 3 && !memcmp(b - 3, "\x48\x89\xe5", 3))
		return mcount;		/* mov %rsp,%rbp */
	if (before >= 4 && !memcmp(b - 4, "\x48\x83\xec", 3))
		return mcount;		/* sub $imm8,%rsp */
	if (before >= 7 && !memcmp(b - 7, "\x48\x81\xec", 3))
		return mcount;		/* sub $imm32,%rsp */
	if (before >= 1 && (b[-1] & 0xf8) == 0x50)
		return mcount;		/* push %reg (and %r8-%r15 after a 41 prefix) */
	return NULL;
}

/* A site needs no preparation: nop and call are the only two states. */
int ftrt_arch_site_prepare(uintptr_t ip, struct ftrt_poke *pk)
{
	(void)ip;
	(void)pk;
	return 0;
}
