// SPDX-License-Identifier: Apache-2.0
/*
 * tramp_x86_64.c - the bytes of x86-64 trampoline clones (ftrace_tramp.c allocates their
 * pages and fills them with int3 first): the op-slot load re-pointed, the calls aimed, the
 * absolute-jump stubs for callbacks out of rel32 reach, the ret after a template's end.
 */
#include <string.h>

#include "arch/arch.h"

static int fits_rel32(uintptr_t from_next, uintptr_t to)
{
	long d = (long)(to - from_next);

	return d == (long)(int32_t)d;
}

void ftrt_arch_put_ret(unsigned char *p)
{
	p[0] = 0xc3;
}

/*
 * A per-ops clone: [start, end) + ret + padding + an absolute jump to func used when func
 * is out of rel32 range.
 *
 *	start ... op_ptr: 48 8b 15 <rel32 → slot> ... call: e8 <rel32 → func|stub> ... end
 *	c3, cc padding, stub: ff 25 00 00 00 00 .quad func
 */
size_t ftrt_arch_tramp_size(const unsigned char *start, size_t size, size_t op_off,
			    size_t call_off)
{
	static const unsigned char op_ref[3] = { 0x48, 0x8b, 0x15 };

	if (memcmp(start + op_off, op_ref, 3) || start[call_off] != 0xe8)
		return 0;
	return ((size + 1 + 7) & ~(size_t)7) + 14;
}

void ftrt_arch_tramp_fill(unsigned char *code, const unsigned char *start, size_t size,
			  size_t op_off, size_t call_off, uintptr_t slot, uintptr_t func)
{
	size_t stub_off = (size + 1 + 7) & ~(size_t)7;
	uintptr_t target;
	int32_t rel;

	memcpy(code, start, size);
	code[size] = 0xc3;
	rel = (int32_t)(slot - (uintptr_t)(code + op_off + 7));
	memcpy(code + op_off + 3, &rel, 4);
	code[stub_off] = 0xff;
	code[stub_off + 1] = 0x25;
	memset(code + stub_off + 2, 0, 4);
	memcpy(code + stub_off + 6, &func, sizeof(func));
	target = func;
	if (!fits_rel32((uintptr_t)code + call_off + 5, target))
		target = (uintptr_t)code + stub_off;
	rel = (int32_t)(target - ((uintptr_t)code + call_off + 5));
	memcpy(code + call_off + 1, &rel, 4);
}

/*
 * A multi-ops trampoline: the prologue (ending with the slot test's jz rel32), one segment
 * per ops (movabs $ops, %rdx; call rel32), the epilogue, ret, the fallback (ending with
 * jmp rel32), then a 16-byte absolute-jump stub per ops.
 */
size_t ftrt_arch_multi_size(const struct ftrt_multi_tmpl *m, unsigned n, int *bad)
{
	const unsigned char *start = m->start;
	struct ftrt_multi_layout l;

	ftrt_multi_layout(m, n, &l);
	*bad = memcmp(start + l.op_off, "\x48\x8b\x15", 3) || start[l.pro - 6] != 0x0f ||
	       start[l.pro - 5] != 0x84 || memcmp(start + l.pro + l.imm_off, "\x48\xba", 2) ||
	       start[l.pro + l.call_off] != 0xe8 || m->fb_end[-5] != 0xe9;
	return l.stubs + 16 * n;
}

int ftrt_arch_multi_fill(unsigned char *code, const struct ftrt_multi_tmpl *m, unsigned n,
			 uintptr_t slot, struct ftrace_ops *const *vec,
			 const ftrt_arch_func_t *funcs, uintptr_t fallback)
{
	const unsigned char *start = m->start;
	struct ftrt_multi_layout l;
	unsigned char *p;
	int32_t rel;
	size_t i;

	ftrt_multi_layout(m, n, &l);

	memcpy(code, start, l.pro);
	rel = (int32_t)(slot - (uintptr_t)(code + l.op_off + 7));
	memcpy(code + l.op_off + 3, &rel, 4);
	for (i = 0, p = code + l.pro; i < n; i++, p += l.seg) {
		unsigned char *stub = code + l.stubs + 16 * i;
		uintptr_t target = (uintptr_t)funcs[i];

		memcpy(p, start + l.pro, l.seg);
		memcpy(p + l.imm_off + 2, &vec[i], 8);
		stub[0] = 0xff;
		stub[1] = 0x25;
		memset(stub + 2, 0, 4);
		memcpy(stub + 6, &target, 8);
		if (!fits_rel32((uintptr_t)p + l.call_off + 5, target))
			target = (uintptr_t)stub;
		rel = (int32_t)(target - ((uintptr_t)p + l.call_off + 5));
		memcpy(p + l.call_off + 1, &rel, 4);
	}
	memcpy(p, m->done, l.epi);
	p[l.epi] = 0xc3;
	p += l.epi + 1;
	memcpy(p, m->fb, l.fbl);
	/* the slot test's jz rel32 (the prologue's last instruction) to the fallback */
	rel = (int32_t)(p - (code + l.pro));
	memcpy(code + l.pro - 4, &rel, 4);
	/* and the fallback's jmp rel32 to the shared caller (same arena: in reach) */
	if (!fits_rel32((uintptr_t)p + l.fbl, fallback))
		return -1;
	rel = (int32_t)(fallback - ((uintptr_t)p + l.fbl));
	memcpy(p + l.fbl - 4, &rel, 4);
	return 0;
}

/* ftrace_direct_fexit: its data marker is movabs $block, %rax (48 b8 imm64). */
int ftrt_arch_fexit_ok(const unsigned char *data)
{
	return !memcmp(data, "\x48\xb8", 2);
}

void ftrt_arch_fexit_fill(unsigned char *data, uintptr_t block)
{
	memcpy(data + 2, &block, sizeof(block));
}
