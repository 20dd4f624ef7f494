// SPDX-License-Identifier: Apache-2.0
/*
 * tramp_arm64.c - the words of arm64 trampoline clones (ftrace_tramp.c allocates their
 * pages, filled with zeros: udf #0).  A clone of [start, end) gets ret x9 after its end,
 * its adrp + ldr at op_ptr re-pointed at its op slot (the arena's data page, within
 * ±4 GiB), and its bl at the call marker aimed at the callback, or, when that is beyond
 * bl's ±128 MiB, at a veneer after the code: ldr x16, #8; br x16; .quad func.
 * There are no multi-ops trampolines on arm64 yet: sites shared by several ops use the
 * list caller, unless they are CALL_OPS sites.
 */
#include <string.h>

#include "arch/arch.h"

#define RET_X9		0xd65f0120u
#define LDR_X16_LIT8	0x58000050u	/* ldr x16, .+8 */
#define BR_X16		0xd61f0200u

static uint32_t word(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

static void put(unsigned char *p, uint32_t w)
{
	memcpy(p, &w, 4);
}

void ftrt_arch_put_ret(unsigned char *p)
{
	put(p, RET_X9);
}

static size_t stub_off(size_t size)
{
	return (size + 4 + 7) & ~(size_t)7;
}

size_t ftrt_arch_tramp_size(const unsigned char *start, size_t size, size_t op_off,
			    size_t call_off)
{
	if ((word(start + op_off) & 0x9f000000u) != 0x90000000u ||	/* adrp */
	    (word(start + op_off + 4) & 0xffc00000u) != 0xf9400000u ||	/* ldr xt, [xn, #imm] */
	    (word(start + call_off) & 0xfc000000u) != FTRT_ARM64_BL)
		return 0;
	return stub_off(size) + 16;
}

void ftrt_arch_tramp_fill(unsigned char *code, const unsigned char *start, size_t size,
			  size_t op_off, size_t call_off, uintptr_t slot, uintptr_t func)
{
	unsigned char *adrp = code + op_off, *ldr = adrp + 4, *call = code + call_off;
	unsigned char *stub = code + stub_off(size);
	int64_t pages = (int64_t)((slot & ~(uintptr_t)0xfff) - ((uintptr_t)adrp & ~(uintptr_t)0xfff)) >> 12;
	uint32_t w;

	memcpy(code, start, size);
	put(code + size, RET_X9);
	w = word(adrp) & 0x9f00001fu;
	w |= ((uint32_t)pages & 3) << 29 | (((uint32_t)(pages >> 2)) & 0x7ffff) << 5;
	put(adrp, w);
	w = (word(ldr) & 0xffc003ffu) | (uint32_t)(((slot & 0xfff) / 8) << 10);
	put(ldr, w);
	put(stub, LDR_X16_LIT8);
	put(stub + 4, BR_X16);
	memcpy(stub + 8, &func, 8);
	if (!ftrt_arch_call_reaches((uintptr_t)call, func))
		func = (uintptr_t)stub;
	put(call, ftrt_arm64_bl((uintptr_t)call, func));
}

size_t ftrt_arch_multi_size(const struct ftrt_multi_tmpl *m, unsigned n, int *bad)
{
	(void)m;
	(void)n;
	*bad = 0;
	return 0;
}

int ftrt_arch_multi_fill(unsigned char *code, const struct ftrt_multi_tmpl *m, unsigned n,
			 uintptr_t slot, struct ftrace_ops *const *vec,
			 const ftrt_arch_func_t *funcs, uintptr_t fallback)
{
	(void)code, (void)m, (void)n, (void)slot, (void)vec, (void)funcs, (void)fallback;
	return -1;
}

/*
 * ftrace_direct_fexit: its data marker is movz x16, #0; movk x16, #0, lsl #16 / #32 / #48,
 * the block's address 16 bits at a time.
 */
int ftrt_arch_fexit_ok(const unsigned char *data)
{
	static const uint32_t want[4] = { 0xd2800010u, 0xf2a00010u, 0xf2c00010u, 0xf2e00010u };

	for (int i = 0; i < 4; i++)
		if (word(data + 4 * i) != want[i])
			return 0;
	return 1;
}

void ftrt_arch_fexit_fill(unsigned char *data, uintptr_t block)
{
	for (int i = 0; i < 4; i++)
		put(data + 4 * i, word(data + 4 * i) | (uint32_t)((block >> (16 * i)) & 0xffff) << 5);
}
