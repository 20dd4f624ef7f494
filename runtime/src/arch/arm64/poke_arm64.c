// SPDX-License-Identifier: Apache-2.0
/*
 * poke_arm64.c - the arm64 part of live patching.  Every transition the runtime makes is
 * one aligned 4-byte word among nop, mov x9, x30 (preparation) and bl <imm26> (enable),
 * which poke.c writes with one single-copy-atomic store (FTRT_ARCH_SITE_ATOMIC): no
 * breakpoint, so nothing is ever emulated.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
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

/* ftrt_arch_probe_code (arch.h): bti c; movz w0, #0; ret (#1 once byte 4 is 0x20) */
__asm__(".text\n"
	".p2align 2\n"
	".globl ftrt_arch_probe_code\n"
	".hidden ftrt_arch_probe_code\n"
	".type ftrt_arch_probe_code, %function\n"
	"ftrt_arch_probe_code:\n"
	"hint 34\n"
	"movz w0, #0\n"
	"ret\n"
	".size ftrt_arch_probe_code, . - ftrt_arch_probe_code\n");

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

/* The module holding an address, and whether it is marked for BTI. */
struct bti_query {
	uintptr_t addr;
	int found, bti;
};

/* Does the PT_GNU_PROPERTY note at p (len bytes) have GNU_PROPERTY_AARCH64_FEATURE_1_BTI? */
static int note_bti(const unsigned char *p, size_t len)
{
	while (len >= 16) {
		uint32_t namesz, descsz, type;
		size_t hdr, desc;

		memcpy(&namesz, p, 4);
		memcpy(&descsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		hdr = (12 + namesz + 7) & ~(size_t)7;	/* 8-aligned notes */
		desc = (descsz + 7) & ~7u;
		if (hdr + desc > len || hdr > len)
			return 0;
		if (type == NT_GNU_PROPERTY_TYPE_0 && namesz == 4 && !memcmp(p + 12, "GNU", 4)) {
			const unsigned char *q = p + hdr, *end = q + descsz;

			while (q + 8 <= end) {
				uint32_t pt, sz, bits = 0;

				memcpy(&pt, q, 4);
				memcpy(&sz, q + 4, 4);
				if (q + 8 + sz > end)
					return 0;
				if (pt == GNU_PROPERTY_AARCH64_FEATURE_1_AND && sz >= 4) {
					memcpy(&bits, q + 8, 4);
					return !!(bits & GNU_PROPERTY_AARCH64_FEATURE_1_BTI);
				}
				q += 8 + ((sz + 7) & ~7u);
			}
		}
		p += hdr + desc;
		len -= hdr + desc;
	}
	return 0;
}

static int bti_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bti_query *q = arg;
	int in = 0, bti = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr - lo < ph->p_memsz)
			in = 1;
		else if (ph->p_type == PT_GNU_PROPERTY)
			bti = note_bti((const unsigned char *)lo, ph->p_memsz);
	}
	if (!in)
		return 0;
	q->found = 1;
	q->bti = bti;
	return 1;
}

/*
 * PROT_BTI when the code at addr is BTI-guarded: the system has BTI and the module holding
 * it is marked for it (the loaders map such code guarded).  The mprotect method passes it
 * back, else the pages it writes would lose their guard.
 */
int ftrt_arch_code_prot(uintptr_t addr)
{
	struct bti_query q = { .addr = addr };

	if (!(getauxval(AT_HWCAP2) & HWCAP2_BTI))
		return 0;
	dl_iterate_phdr(bti_module, &q);
	return q.found && q.bti ? PROT_BTI : 0;
}
