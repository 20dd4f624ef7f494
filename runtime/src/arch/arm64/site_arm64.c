// SPDX-License-Identifier: Apache-2.0
/*
 * site_arm64.c - reading arm64 call sites for the core (ftrace_core.c).  A site is the
 * -fpatchable-function-entry=2 pair at a function's entry (after bti c): two nops as the
 * compiler leaves them, "mov x9, x30; nop" once prepared, "mov x9, x30; bl <tramp>" while
 * enabled.  There is no __fentry__ call to recognise: only nops are taken.
 */
#include <string.h>

#include "arch/arch.h"
#include "core/poke.h"

static uint32_t word(const unsigned char *b)
{
	uint32_t w;

	memcpy(&w, b, 4);
	return w;
}

/*
 * The table's site (the first nop) holds two nops, or the prepared "mov x9, x30; nop"
 * (a site of an object loaded again after a fork's exec would be fresh; this is for a
 * table read twice).  Anything else (a bl left by someone else) is refused.
 */
unsigned ftrt_arch_fentry_site(const unsigned char *b, int want, int *isnop)
{
	uint32_t w0 = word(b), w1 = word(b + 4);

	*isnop = 0;
	if (want >= 0 && want != 8)
		return 0;
	if ((w0 == FTRT_ARM64_NOP || w0 == FTRT_ARM64_MOV_X9_X30) && w1 == FTRT_ARM64_NOP) {
		*isnop = 1;
		return 8;
	}
	return 0;
}

/* "mov x9, x30; bl X" (len 8) or "bl X" (len 4): X. */
uintptr_t ftrt_arch_site_call_dest(const unsigned char *b, unsigned len, int *via_got)
{
	const unsigned char *bl = b + len - 4;
	int32_t imm = (int32_t)(word(bl) << 6) >> 6;

	*via_got = 0;
	return (uintptr_t)bl + (intptr_t)imm * 4;
}

/* bti c / bti j / bti jc (hint #34, #36, #38), paciasp/pacibsp are not entry markers. */
static int is_bti(uint32_t w)
{
	return (w & 0xffffff3fu) == 0xd503241fu && (w & 0xc0);
}

const unsigned char *ftrt_arch_skip_entry_marker(const unsigned char *b)
{
	return is_bti(word(b)) ? b + 4 : b;
}

/*
 * A PLT entry: adrp x16, page; ldr x17, [x16, #off]; add x16, x16, #off; br x17 (the slot
 * is page + off).
 */
int ftrt_arch_plt_slot(const unsigned char *b, uintptr_t *slot)
{
	uint32_t adrp = word(b), ldr = word(b + 4), br = word(b + 12);
	int64_t imm;

	if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u ||
	    br != 0xd61f0220u)
		return 0;
	imm = ((int64_t)((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3);
	imm = (imm << 43) >> 43;	/* 21 bits, signed */
	*slot = ((uintptr_t)b & ~(uintptr_t)0xfff) + (uintptr_t)(imm << 12) +
		((ldr >> 10) & 0xfff) * 8;
	return 1;
}

int ftrt_arch_plt_stub(const unsigned char *t)
{
	uintptr_t slot;

	return ftrt_arch_plt_slot(ftrt_arch_skip_entry_marker(t), &slot);
}

/* recordmcount and ftlink only record nops at a function's entry (aarch64 -pg is refused). */
const char *ftrt_arch_site_not_at_entry(const unsigned char *b, unsigned before)
{
	(void)b;
	(void)before;
	return NULL;
}

/*
 * The kernel's ftrace_init_nop: the nop before the bl site becomes mov x9, x30, once, so
 * that the trampoline finds the function's return address in x9 (bl overwrites x30).  x9
 * is a scratch register at a function's entry (AAPCS64: caller-saved, no argument), so
 * the mov is harmless while the site stays a nop.
 */
int ftrt_arch_site_prepare(uintptr_t ip, struct ftrt_poke *pk)
{
	uint32_t nop = FTRT_ARM64_NOP, mov = FTRT_ARM64_MOV_X9_X30;

	if (word((const unsigned char *)ip - 4) == mov)
		return 0;
	pk->addr = (void *)(ip - 4);
	memcpy(pk->old, &nop, 4);
	memcpy(pk->new, &mov, 4);
	pk->len = 4;
	return 1;
}
