// SPDX-License-Identifier: Apache-2.0
/*
 * Where arm64 (AAPCS64) passes arguments and returns values, for the argument and
 * return-value recorder (tracers/args.c): register names as specs write them (x0-x8,
 * d0-d7 or q0-q7 for the low 8 bytes of a vector register), the N-th integer or floating
 * argument, and the values in the frames the trampolines and return_to_handler save.
 * Stack-passed arguments start at the entry stack pointer (no return address there).
 */
#include <stddef.h>
#include <string.h>

#include <ftrace.h>

#include "arch/arch.h"

/* locations: 0-8 x0-x8, 16-23 the low 8 bytes of q0-q7 (at exit: 0-15 x0-x15; a spec's
   x8 is the entry's) */
#define LOC_Q	16

static int num(const char *p, size_t len, int max)
{
	int v = 0;

	if (!len || len > 2)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + p[i] - '0';
	}
	return v <= max ? v : -1;
}

int ftrt_arch_arg_reg(const char *name, size_t len, int ret)
{
	int n;

	(void)ret;	/* a result's x8 is the entry's: ftrt_arch_ret_entry_off */
	if (len < 2)
		return -1;
	n = num(name + 1, len - 1, 8);
	if (n < 0)
		return -1;
	if (name[0] == 'x')
		return n;
	if ((name[0] == 'q' || name[0] == 'd' || name[0] == 'v') && n < 8)
		return LOC_Q + n;
	return -1;
}

unsigned ftrt_arch_arg_stack_off(unsigned n)
{
	return 8 * (n - 1);	/* the first stack word is at the entry sp */
}

int ftrt_arch_arg_int(unsigned n, unsigned *stack_off)
{
	if (n >= 1 && n <= 8)
		return (int)n - 1;
	*stack_off = ftrt_arch_arg_stack_off(n - 8);
	return -1;
}

int ftrt_arch_arg_fp(unsigned n)
{
	return n >= 1 && n <= 8 ? LOC_Q + (int)n - 1 : -2;
}

int ftrt_arch_ret_loc(int fp)
{
	return fp ? LOC_Q : 0;
}

int ftrt_arch_arg_off(int loc)
{
	if (loc >= 0 && loc <= 8)
		return (int)(offsetof(struct ftrace_regs, regs.x) + 8 * (size_t)loc);
	if (loc >= LOC_Q && loc < LOC_Q + 8)
		return (int)(offsetof(struct ftrace_regs, q) + 16 * (size_t)(loc - LOC_Q));
	return -1;
}

int ftrt_arch_ret_off(int loc)
{
	if (loc >= 0 && loc < 16)
		return (int)(offsetof(struct ftrace_ret_regs, x) + 8 * (size_t)loc);
	if (loc >= LOC_Q && loc < LOC_Q + 8)
		return (int)(offsetof(struct ftrace_ret_regs, q) + 16 * (size_t)(loc - LOC_Q));
	return -1;
}

/*
 * A result returned in memory is written where the caller's x8 pointed at the call
 * (AAPCS64 6.9): a "retval%x8" spec reads the x8 of the entry, kept by the tracer.
 */
int ftrt_arch_ret_entry_off(int loc)
{
	return loc == 8 ? ftrt_arch_arg_off(8) : -1;
}

unsigned long ftrt_arch_arg_sp(const struct ftrace_regs *fregs)
{
	return fregs->regs.sp;
}

_Static_assert(offsetof(struct ftrace_ret_regs, q) == 128,
	       "return_to_handler saves x0-x15 then q0-q7");
