// SPDX-License-Identifier: Apache-2.0
/*
 * tramp_arm64.c - the words of arm64 trampoline clones (ftrace_tramp.c allocates their
 * pages, filled with zeros: udf #0).  A clone of [start, end) gets ret x9 after its end,
 * its adrp + ldr at op_ptr re-pointed at its op slot (the arena's data page, within
 * ±4 GiB), and its bl at the call marker aimed at the callback, or, when that is beyond
 * bl's ±128 MiB, at a veneer after the code: ldr x16, #8; br x16; .quad func.
 * A multi-ops clone holds one segment per ops of its set (ftrt_arch_multi_fill()).
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

/* The adrp + ldr at p (a clone's op-slot load) re-pointed at slot (within ±4 GiB). */
static void repoint_slot(unsigned char *p, uintptr_t slot)
{
	int64_t pages = (int64_t)((slot & ~(uintptr_t)0xfff) - ((uintptr_t)p & ~(uintptr_t)0xfff)) >> 12;
	uint32_t w;

	w = word(p) & 0x9f00001fu;
	w |= ((uint32_t)pages & 3) << 29 | (((uint32_t)(pages >> 2)) & 0x7ffff) << 5;
	put(p, w);
	w = (word(p + 4) & 0xffc003ffu) | (uint32_t)(((slot & 0xfff) / 8) << 10);
	put(p + 4, w);
}

/* Is p movz xreg, #0; movk xreg, #0, lsl #16 / #32 / #48 (a 64-bit immediate to fill)? */
static int is_mov64(const unsigned char *p, unsigned reg)
{
	static const uint32_t want[4] = { 0xd2800000u, 0xf2a00000u, 0xf2c00000u, 0xf2e00000u };

	for (int i = 0; i < 4; i++)
		if (word(p + 4 * i) != (want[i] | reg))
			return 0;
	return 1;
}

/* The four words is_mov64() accepted at p load v, 16 bits at a time. */
static void set_mov64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 4; i++)
		put(p + 4 * i, word(p + 4 * i) | (uint32_t)((v >> (16 * i)) & 0xffff) << 5);
}

/* The bl at call aimed at func, or, beyond its reach, at the veneer written at stub. */
static void aim_bl(unsigned char *call, unsigned char *stub, uintptr_t func)
{
	put(stub, LDR_X16_LIT8);
	put(stub + 4, BR_X16);
	memcpy(stub + 8, &func, 8);
	if (!ftrt_arch_call_reaches((uintptr_t)call, func))
		func = (uintptr_t)stub;
	put(call, ftrt_arm64_bl((uintptr_t)call, func));
}

void ftrt_arch_tramp_fill(unsigned char *code, const unsigned char *start, size_t size,
			  size_t op_off, size_t call_off, uintptr_t slot, uintptr_t func)
{
	unsigned char *call = code + call_off, *stub = code + stub_off(size);

	memcpy(code, start, size);
	put(code + size, RET_X9);
	repoint_slot(code + op_off, slot);
	aim_bl(call, stub, func);
}

/*
 * A multi-ops trampoline (trampgen's armMultiCaller): the prologue (its op-slot adrp + ldr,
 * then cbz x2 to the fallback as its last word), one segment per ops (the ops in x2 by
 * movz/movk, a bl to its callback or to a veneer after the code), the epilogue, ret x9, the
 * fallback (ending with b to the shared caller), then a 16-byte veneer per ops.
 */
size_t ftrt_arch_multi_size(const struct ftrt_multi_tmpl *m, unsigned n, int *bad)
{
	struct ftrt_multi_layout l;

	ftrt_multi_layout(m, n, &l);
	*bad = l.pro < l.op_off + 12 || l.pro % 4 || l.seg % 4 || l.fbl < 4 ||
	       (word(m->op_ptr) & 0x9f000000u) != 0x90000000u ||		/* adrp */
	       (word(m->op_ptr + 4) & 0xffc00000u) != 0xf9400000u ||	/* ldr x, [x, #imm] */
	       (word(m->seg - 4) & 0xff00001fu) != 0xb4000002u ||		/* cbz x2 */
	       !is_mov64(m->seg_op, 2) ||					/* the ops in x2 */
	       (word(m->call) & 0xfc000000u) != FTRT_ARM64_BL ||
	       (word(m->fb_end - 4) & 0xfc000000u) != 0x14000000u;		/* b */
	return l.stubs + 16 * n;
}

int ftrt_arch_multi_fill(unsigned char *code, const struct ftrt_multi_tmpl *m, unsigned n,
			 uintptr_t slot, struct ftrace_ops *const *vec,
			 const ftrt_arch_func_t *funcs, uintptr_t fallback)
{
	struct ftrt_multi_layout l;
	unsigned char *p, *fb;
	int64_t d;
	size_t i;

	ftrt_multi_layout(m, n, &l);
	memcpy(code, m->start, l.pro);
	repoint_slot(code + l.op_off, slot);
	for (i = 0, p = code + l.pro; i < n; i++, p += l.seg) {
		memcpy(p, m->seg, l.seg);
		set_mov64(p + l.imm_off, (uintptr_t)vec[i]);
		aim_bl(p + l.call_off, code + l.stubs + 16 * i, (uintptr_t)funcs[i]);
	}
	memcpy(p, m->done, l.epi);
	put(p + l.epi, RET_X9);
	fb = p + l.epi + 4;
	memcpy(fb, m->fb, l.fbl);
	/* the prologue's cbz x2 (imm19, words) to the fallback: within the page */
	d = (fb - (code + l.pro - 4)) / 4;
	put(code + l.pro - 4, (word(m->seg - 4) & 0xff00001fu) | ((uint32_t)d & 0x7ffff) << 5);
	/* and the fallback's b (imm26) to the shared caller, which is in the same arena */
	if (!ftrt_arch_call_reaches((uintptr_t)fb + l.fbl - 4, fallback))
		return -1;
	d = ((int64_t)fallback - (int64_t)((uintptr_t)fb + l.fbl - 4)) / 4;
	put(fb + l.fbl - 4, 0x14000000u | ((uint32_t)d & 0x3ffffffu));
	return 0;
}

/*
 * ftrace_direct_fexit: its data marker is movz x16, #0; movk x16, #0, lsl #16 / #32 / #48,
 * the block's address 16 bits at a time.
 */
int ftrt_arch_fexit_ok(const unsigned char *data)
{
	return is_mov64(data, 16);
}

void ftrt_arch_fexit_fill(unsigned char *data, uintptr_t block)
{
	set_mov64(data, block);
}
