// SPDX-License-Identifier: Apache-2.0
/*
 * poke_arm64.c - the arm64 part of live patching.  Every transition the runtime makes is
 * one aligned 4-byte word among nop, mov x9, x30 (preparation) and bl <imm26> (enable),
 * which poke.c writes with one single-copy-atomic store (FTRT_ARCH_SITE_ATOMIC): no
 * breakpoint, so nothing is ever emulated.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <ucontext.h>

#include "arch/arch.h"
#include "core/poke.h"

static int known(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w == FTRT_ARM64_NOP || w == FTRT_ARM64_MOV_X9_X30 ||
	       (w & 0xfc000000u) == FTRT_ARM64_BL;
}

int ftrt_arch_check(const unsigned char *old, const unsigned char *new, unsigned len,
		    unsigned *early, const char **why)
{
	*early = 0;
	if (len != 4) {
		*why = "length is not one instruction (4)";
		return -EINVAL;
	}
	if (!known(old)) {
		*why = "old word is not nop, mov x9, x30 or bl";
		return -EINVAL;
	}
	if (!known(new)) {
		*why = "new word is not nop, mov x9, x30 or bl";
		return -EINVAL;
	}
	return 0;
}

int ftrt_arch_site_insn(const unsigned char *p)
{
	return known(p);
}

/* Never called: no breakpoint is written (FTRT_ARCH_SITE_ATOMIC).  Re-execute the site. */
void ftrt_arch_emulate(const struct ftrt_poke_site *site, void *uc)
{
	ftrt_arch_set_pc(uc, site->addr);
}

uintptr_t ftrt_arch_pc(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.pc;
}

void ftrt_arch_set_pc(void *uc, uintptr_t pc)
{
	((ucontext_t *)uc)->uc_mcontext.pc = pc;
}

uintptr_t ftrt_arch_sp(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.sp;
}
