// SPDX-License-Identifier: Apache-2.0
/*
 * Where x86-64 (System V psABI) passes arguments and returns values, for the argument
 * and return-value recorder (tracers/args.c): register names as specs write them, the
 * N-th integer or floating argument, and the values in the frames the trampolines and
 * return_to_handler save.
 */
#include <stddef.h>
#include <string.h>

#include <ftrace.h>

#include "arch/arch.h"

_Static_assert(offsetof(struct ftrace_ret_regs, rdx) == 8 &&
	       offsetof(struct ftrace_ret_regs, xmm0) == 16 &&
	       offsetof(struct ftrace_ret_regs, xmm1) == 32,
	       "return_to_handler saves rax, rdx, xmm0, xmm1 at 0, 8, 16, 32");

/* entry locations: 0-5 the integer argument registers, 6 rax, 8-15 xmm0-xmm7 */
static const char *const entry_regs[] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax" };
/* exit locations: 0 rax, 1 rdx, 2 xmm0, 3 xmm1 */
static const char *const exit_regs[] = { "rax", "rdx", "xmm0", "xmm1" };

int ftrt_arch_arg_reg(const char *name, size_t len, int ret)
{
	if (ret) {
		for (int i = 0; i < 4; i++)
			if (strlen(exit_regs[i]) == len && !memcmp(name, exit_regs[i], len))
				return i;
		return -1;
	}
	for (int i = 0; i < 7; i++)
		if (strlen(entry_regs[i]) == len && !memcmp(name, entry_regs[i], len))
			return i;
	if (len == 4 && !memcmp(name, "xmm", 3) && name[3] >= '0' && name[3] <= '7')
		return 8 + name[3] - '0';
	return -1;
}

unsigned ftrt_arch_arg_stack_off(unsigned n)
{
	return 8 * n;	/* above the return address */
}

int ftrt_arch_arg_int(unsigned n, unsigned *stack_off)
{
	if (n >= 1 && n <= 6)
		return (int)n - 1;
	*stack_off = ftrt_arch_arg_stack_off(n - 6);
	return -1;
}

int ftrt_arch_arg_fp(unsigned n)
{
	return n >= 1 && n <= 8 ? 8 + (int)n - 1 : -2;
}

int ftrt_arch_ret_loc(int fp)
{
	return fp ? 2 : 0;
}

unsigned long ftrt_arch_arg_get(const struct ftrace_regs *fregs, int loc)
{
	const struct ftrace_pt_regs *r = &fregs->regs;
	unsigned long v;

	switch (loc) {
	case 0: return r->rdi;
	case 1: return r->rsi;
	case 2: return r->rdx;
	case 3: return r->rcx;
	case 4: return r->r8;
	case 5: return r->r9;
	case 6: return r->rax;
	}
	if (loc >= 8 && loc < 16) {
		memcpy(&v, fregs->xmm[loc - 8], sizeof(v));
		return v;
	}
	return 0;
}

unsigned long ftrt_arch_ret_get(const struct ftrace_ret_regs *rr, int loc)
{
	unsigned long v = 0;

	switch (loc) {
	case 0: return rr->rax;
	case 1: return rr->rdx;
	case 2: memcpy(&v, rr->xmm0, sizeof(v)); break;
	case 3: memcpy(&v, rr->xmm1, sizeof(v)); break;
	}
	return v;
}

unsigned long ftrt_arch_arg_sp(const struct ftrace_regs *fregs)
{
	return fregs->regs.sp;
}
