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

int ftrt_arch_arg_off(int loc)
{
	static const unsigned short gpr[] = {
		offsetof(struct ftrace_regs, regs.rdi), offsetof(struct ftrace_regs, regs.rsi),
		offsetof(struct ftrace_regs, regs.rdx), offsetof(struct ftrace_regs, regs.rcx),
		offsetof(struct ftrace_regs, regs.r8), offsetof(struct ftrace_regs, regs.r9),
		offsetof(struct ftrace_regs, regs.rax),
	};

	if (loc >= 0 && loc < 7)
		return gpr[loc];
	if (loc >= 8 && loc < 16)
		return (int)(offsetof(struct ftrace_regs, xmm) + 16 * (size_t)(loc - 8));
	return -1;
}

int ftrt_arch_ret_off(int loc)
{
	switch (loc) {
	case 0: return offsetof(struct ftrace_ret_regs, rax);
	case 1: return offsetof(struct ftrace_ret_regs, rdx);
	case 2: return offsetof(struct ftrace_ret_regs, xmm0);
	case 3: return offsetof(struct ftrace_ret_regs, xmm1);
	}
	return -1;
}

unsigned long ftrt_arch_arg_sp(const struct ftrace_regs *fregs)
{
	return fregs->regs.sp;
}

/* A result returned in memory: %rax holds its address at exit (psABI 3.2.3). */
int ftrt_arch_ret_entry_off(int loc)
{
	(void)loc;
	return -1;
}
