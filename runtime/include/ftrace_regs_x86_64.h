/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ftrace_regs_x86_64.h - the registers an x86-64 trampoline saves, and their accessors.
 * Included by ftrace.h (never directly).
 */
#ifndef FTRACE_REGS_X86_64_H
#define FTRACE_REGS_X86_64_H

/*
 * Full register frame (x86-64).  Saved by the regs caller (SAVE_REGS ops); the plain
 * caller fills only the argument registers, rax, r10, ip and sp.
 * ip is where execution resumes after the callbacks: the return address of the site call
 * (site + 5).  A SAVE_REGS + IPMODIFY callback may set it (ftrace_regs_set_instruction_
 * pointer) to another function's address: that function then runs instead of the traced
 * one, with the same arguments, and returns to the traced function's caller.
 * sp is the stack pointer at the traced function's entry (it points at parent_ip).
 */
struct ftrace_pt_regs {
	unsigned long r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8;
	unsigned long rax, rcx, rdx, rsi, rdi;
	unsigned long ip, sp;
	unsigned long full;		/* 1: every field is valid (regs caller); 0: the caller's
					   argument registers, ip and sp; 2 (lean caller):
					   the integer argument registers only */
	unsigned long orig_ax;		/* regs caller: direct trampoline to enter (0: none) */
	unsigned long flags;
};

struct ftrace_regs {
	struct ftrace_pt_regs regs;
	unsigned char xmm[8][16] __attribute__((aligned(16)));	/* xmm0..xmm7 */
};

/* The full frame for SAVE_REGS ops, else NULL. */
static inline struct ftrace_pt_regs *ftrace_get_regs(struct ftrace_regs *fregs)
{
	return fregs && fregs->regs.full == 1 ? &fregs->regs : (struct ftrace_pt_regs *)0;
}

/* Integer/pointer argument n (0..5) of the traced function; 0 for other n. */
static inline unsigned long ftrace_regs_get_argument(struct ftrace_regs *fregs, unsigned n)
{
	switch (n) {
	case 0: return fregs->regs.rdi;
	case 1: return fregs->regs.rsi;
	case 2: return fregs->regs.rdx;
	case 3: return fregs->regs.rcx;
	case 4: return fregs->regs.r8;
	case 5: return fregs->regs.r9;
	}
	return 0;
}

static inline void ftrace_regs_set_argument(struct ftrace_regs *fregs, unsigned n,
					    unsigned long v)
{
	switch (n) {
	case 0: fregs->regs.rdi = v; break;
	case 1: fregs->regs.rsi = v; break;
	case 2: fregs->regs.rdx = v; break;
	case 3: fregs->regs.rcx = v; break;
	case 4: fregs->regs.r8 = v; break;
	case 5: fregs->regs.r9 = v; break;
	}
}

static inline unsigned long ftrace_regs_get_instruction_pointer(struct ftrace_regs *fregs)
{
	return fregs->regs.ip;
}

/* Only honoured for IPMODIFY ops running through the regs caller. */
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
 * From a SAVE_REGS callback: enter the direct trampoline addr when the callbacks are done,
 * instead of returning into the traced function (the kernel's arch_ftrace_set_direct_caller;
 * the direct ops' own callback does this, see register_ftrace_direct).
 */
static inline void ftrace_regs_set_direct(struct ftrace_regs *fregs, unsigned long addr)
{
	if (fregs && fregs->regs.full == 1)
		fregs->regs.orig_ax = addr;
}

/* Address of the slot holding the traced function's return address (== sp). */
static inline unsigned long *ftrace_regs_get_return_slot(struct ftrace_regs *fregs)
{
	return (unsigned long *)fregs->regs.sp;
}

/* The frame pointer (%rbp) at the site: regs caller only, else 0. */
static inline unsigned long ftrace_regs_get_frame_pointer(struct ftrace_regs *fregs)
{
	return fregs->regs.full == 1 ? fregs->regs.rbp : 0;
}

/*
 * What a function may return in (System V): rax, rdx (integers, pointers, small structs),
 * xmm0, xmm1 (float, double, vectors); x87 st(0) is not kept.  return_to_handler saves
 * them so; fgraph return callbacks get them in struct ftrace_graph_ret.
 */
struct ftrace_ret_regs {
	unsigned long rax, rdx;
	unsigned char xmm0[16] __attribute__((aligned(16)));
	unsigned char xmm1[16];
};

/* The integer (or pointer) result. */
static inline unsigned long ftrace_ret_regs_get_value(const struct ftrace_ret_regs *rr)
{
	return rr->rax;
}

#endif /* FTRACE_REGS_X86_64_H */
