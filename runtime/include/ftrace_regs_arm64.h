/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ftrace_regs_arm64.h - the registers an arm64 trampoline saves, and their accessors.
 * Included by ftrace.h (never directly).
 *
 * A traced function's site is "mov x9, x30; bl <trampoline>" at its entry (after bti c):
 * the trampoline sees the function's return address in x9 and keeps it in its frame at the
 * entry sp - 8, the return slot (ftrace_regs_get_return_slot), from which it reloads x30
 * before it continues into the function.
 */
#ifndef FTRACE_REGS_ARM64_H
#define FTRACE_REGS_ARM64_H

/*
 * Every caller fills every field (the regs caller sets full): x0..x7 (arguments), x8 (the
 * indirect result location), fp (x29 at the site), ip, sp.  ip is where execution resumes
 * after the callbacks: site + 4, in the traced function.  A SAVE_REGS + IPMODIFY callback
 * may set it to another function's address: that function then runs instead of the
 * traced one, with the same arguments, and returns to the traced function's caller.
 * sp is the stack pointer at the traced function's entry.
 */
struct ftrace_pt_regs {
	unsigned long x[9];
	unsigned long fp;
	unsigned long ip, sp;
	unsigned long full;		/* non-zero: the regs caller saved the frame */
	unsigned long direct;		/* set: the regs caller enters this direct trampoline */
};

struct ftrace_regs {
	struct ftrace_pt_regs regs;
	unsigned char q[8][16] __attribute__((aligned(16)));	/* q0..q7 */
};

/* The full frame for SAVE_REGS ops, else NULL. */
static inline struct ftrace_pt_regs *ftrace_get_regs(struct ftrace_regs *fregs)
{
	return fregs && fregs->regs.full ? &fregs->regs : (struct ftrace_pt_regs *)0;
}

/* Integer/pointer argument n (0..7) of the traced function; 0 for other n. */
static inline unsigned long ftrace_regs_get_argument(struct ftrace_regs *fregs, unsigned n)
{
	return n < 8 ? fregs->regs.x[n] : 0;
}

static inline void ftrace_regs_set_argument(struct ftrace_regs *fregs, unsigned n,
					    unsigned long v)
{
	if (n < 8)
		fregs->regs.x[n] = v;
}

static inline unsigned long ftrace_regs_get_instruction_pointer(struct ftrace_regs *fregs)
{
	return fregs->regs.ip;
}

static inline void ftrace_regs_set_instruction_pointer(struct ftrace_regs *fregs,
						       unsigned long ip)
{
	fregs->regs.ip = ip;
}

static inline unsigned long ftrace_regs_get_stack_pointer(struct ftrace_regs *fregs)
{
	return fregs->regs.sp;
}

/*
 * After the callbacks, the regs caller enters the direct trampoline at addr as if the site
 * had called it (x9 = the function's return address, x30 = where it resumes).
 */
static inline void ftrace_regs_set_direct(struct ftrace_regs *fregs, unsigned long addr)
{
	if (fregs && fregs->regs.full)
		fregs->regs.direct = addr;
}

/* Address of the slot holding the traced function's return address (sp - 8). */
static inline unsigned long *ftrace_regs_get_return_slot(struct ftrace_regs *fregs)
{
	return (unsigned long *)fregs->regs.sp - 1;
}

/* The frame pointer (x29) at the site. */
static inline unsigned long ftrace_regs_get_frame_pointer(struct ftrace_regs *fregs)
{
	return fregs->regs.fp;
}

/*
 * What a function may return in (AAPCS64): x0-x7 (integers, pointers, small structs; x8
 * holds the address of a larger one) and q0-q7 (floating point, vectors, HFAs), as
 * return_to_handler saves them; x8-x15 follow x0-x7 there.  fgraph return callbacks get
 * them in struct ftrace_graph_ret.
 */
struct ftrace_ret_regs {
	unsigned long x[16];
	unsigned char q[8][16];
};

/* The integer (or pointer) result. */
static inline unsigned long ftrace_ret_regs_get_value(const struct ftrace_ret_regs *rr)
{
	return rr->x[0];
}

#endif /* FTRACE_REGS_ARM64_H */
