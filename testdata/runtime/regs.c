/*
 * Registers: what SAVE_REGS and plain ops see, changing arguments, IP modification
 * (redirecting a function to a replacement, alone and together with another ops), the
 * IPMODIFY rules, and preservation of vector registers across callbacks.
 */
#include <errno.h>
#include <stdlib.h>
#include "check.h"

NOINLINE long add3(long a, long b, long c) { __asm__ volatile(""); return a + b + c; }
NOINLINE long orig(long x) { __asm__ volatile(""); return x * 10; }
NOINLINE long replacement(long x) { __asm__ volatile(""); return x * 1000; }
NOINLINE double fdiv(double a, double b) { __asm__ volatile(""); return a / b; }
NOINLINE double fmix(double a, float b, int c, double d) { __asm__ volatile(""); return a * b + c - d; }

static volatile long seen_regs, seen_args[3], seen_ip, seen_parent_ok, seen_flags, calls_plain, calls_other;
static volatile int has_full;
static unsigned long add3_site;

static CB void regs_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	struct ftrace_pt_regs *r = ftrace_get_regs(fr);

	(void)op;
	has_full = r != NULL;
	if (!r)
		return;
	seen_regs++;
	seen_args[0] = (long)r->rdi;
	seen_args[1] = (long)r->rsi;
	seen_args[2] = (long)r->rdx;
	seen_ip = (long)(ftrace_regs_get_instruction_pointer(fr) == ip + 5 && ip == add3_site);
	seen_parent_ok = *(unsigned long *)ftrace_regs_get_stack_pointer(fr) == parent;
	seen_flags = (long)r->flags;
	if (ip == add3_site)
		ftrace_regs_set_argument(fr, 2, 100);	/* c := 100 */
}

static CB void plain_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	(void)ip; (void)op;
	has_full = ftrace_get_regs(fr) != NULL;
	calls_plain++;
	seen_args[0] = (long)ftrace_regs_get_argument(fr, 0);
	seen_args[1] = (long)ftrace_regs_get_argument(fr, 1);
	seen_args[2] = (long)ftrace_regs_get_argument(fr, 2);
	seen_parent_ok = *ftrace_regs_get_return_slot(fr) == parent;
}

static CB void redirect_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	(void)ip; (void)parent; (void)op;
	ftrace_regs_set_instruction_pointer(fr, (unsigned long)replacement);
}

static CB void other_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	(void)ip; (void)parent; (void)op; (void)fr;
	calls_other++;
}

/* A callback that uses vector registers heavily (and calls libc, which does too). */
static CB void vector_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	volatile double x = 3.25, y = 7.5;
	char buf[256];

	(void)ip; (void)parent; (void)op; (void)fr;
	memset(buf, 0x5a, sizeof(buf));
	snprintf(buf, sizeof(buf), "%f %f", x * y, x / y);
	calls_other += buf[0] != 0;
}

int main(void)
{
	static struct ftrace_ops regs = { .func = regs_cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
	static struct ftrace_ops plain = { .func = plain_cb };
	static struct ftrace_ops redirect = { .func = redirect_cb,
		.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY };
	static struct ftrace_ops redirect2 = { .func = redirect_cb,
		.flags = FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED | FTRACE_OPS_FL_IPMODIFY };
	static struct ftrace_ops bad = { .func = redirect_cb, .flags = FTRACE_OPS_FL_IPMODIFY };
	static struct ftrace_ops other = { .func = other_cb };
	static struct ftrace_ops vec = { .func = vector_cb };
	long (*volatile p_add3)(long, long, long) = add3;
	long (*volatile p_orig)(long) = orig;
	double (*volatile p_fdiv)(double, double) = fdiv;
	double (*volatile p_fmix)(double, float, int, double) = fmix;
	struct ftrace_func_info fi;

	CHECK_EQ(ftrace_lookup_function((unsigned long)add3, &fi), 0);
	add3_site = fi.ip;

	/* SAVE_REGS: full frame, arguments, ip, parent slot, flags; argument change. */
	CHECK_EQ(ftrace_set_filter_ip(&regs, (unsigned long)add3, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&regs), 0);
	CHECK(calls_tramp_of(add3, &regs));
	CHECK_EQ(p_add3(1, 2, 3), 1 + 2 + 100);
	CHECK_EQ(seen_regs, 1);
	CHECK(has_full);
	CHECK_EQ(seen_args[0], 1);
	CHECK_EQ(seen_args[1], 2);
	CHECK_EQ(seen_args[2], 3);
	CHECK(seen_ip);
	CHECK(seen_parent_ok);
	CHECK(seen_flags & 2);	/* bit 1 of rflags always reads as 1 */
	CHECK_EQ(unregister_ftrace_function(&regs), 0);
	CHECK_EQ(p_add3(1, 2, 3), 6);

	/* Plain ops: arguments through the accessors, no full frame. */
	CHECK_EQ(ftrace_set_filter(&plain, "add3", 4, 1), 0);
	CHECK_EQ(register_ftrace_function(&plain), 0);
	CHECK(calls_tramp_of(add3, &plain));
	CHECK_EQ(p_add3(7, 8, 9), 24);
	CHECK_EQ(calls_plain, 1);
	CHECK(!has_full);
	CHECK_EQ(seen_args[0], 7);
	CHECK_EQ(seen_args[1], 8);
	CHECK_EQ(seen_args[2], 9);
	CHECK(seen_parent_ok);
	/* With a SAVE_REGS ops too: the regs caller, and the plain ops still sees its call. */
	CHECK_EQ(register_ftrace_function(&regs), 0);
	CHECK(CALLS_SET(add3, 1, &regs, &plain));
	CHECK_EQ(p_add3(1, 1, 1), 102);
	CHECK_EQ(calls_plain, 2);
	CHECK_EQ(seen_regs, 2);
	CHECK_EQ(unregister_ftrace_function(&regs), 0);
	CHECK(calls_tramp_of(add3, &plain));
	CHECK_EQ(unregister_ftrace_function(&plain), 0);

	/* IPMODIFY rules. */
	CHECK_EQ(register_ftrace_function(&bad), -EINVAL);
	CHECK_EQ(ftrace_set_filter(&redirect, "orig", 4, 1), 0);
	CHECK_EQ(ftrace_set_filter(&redirect2, "orig", 4, 1), 0);

	/* Redirect orig to replacement through its own (regs) trampoline. */
	CHECK_EQ(p_orig(3), 30);
	CHECK_EQ(register_ftrace_function(&redirect), 0);
	CHECK(calls_tramp_of(orig, &redirect));
	CHECK_EQ(p_orig(3), 3000);
	CHECK_EQ(p_orig(4), 4000);
	CHECK_EQ(register_ftrace_function(&redirect2), -EBUSY);
	/* A second (plain) ops on orig: list function through the regs caller, still redirected. */
	CHECK_EQ(ftrace_set_filter(&other, "orig", 4, 1), 0);
	CHECK_EQ(register_ftrace_function(&other), 0);
	CHECK(CALLS_SET(orig, 1, &other, &redirect));
	CHECK_EQ(p_orig(5), 5000);
	CHECK_EQ(calls_other, 1);
	CHECK_EQ(unregister_ftrace_function(&other), 0);
	CHECK_EQ(unregister_ftrace_function(&redirect), 0);
	CHECK_EQ(p_orig(3), 30);
	CHECK(is_nop(orig));
	/* Now the other IPMODIFY ops may take it. */
	CHECK_EQ(register_ftrace_function(&redirect2), 0);
	CHECK_EQ(p_orig(6), 6000);
	CHECK_EQ(unregister_ftrace_function(&redirect2), 0);

	/* Vector arguments and results survive a callback that uses vector registers. */
	calls_other = 0;
	CHECK_EQ(ftrace_set_filter(&vec, "fdiv fmix", 9, 1), 0);
	CHECK_EQ(register_ftrace_function(&vec), 0);
	CHECK(p_fdiv(1.0, 8.0) == 0.125);
	CHECK(p_fmix(2.0, 0.5f, 3, 0.25) == 3.75);
	CHECK_EQ(calls_other, 2);
	/* and through the list function and the regs caller */
	CHECK_EQ(ftrace_set_filter(&regs, NULL, 0, 1), 0);	/* no filter: everything */
	CHECK_EQ(register_ftrace_function(&regs), 0);
	CHECK(CALLS_SET(fdiv, 1, &regs, &vec));
	CHECK(p_fdiv(3.0, 4.0) == 0.75);
	CHECK(p_fmix(2.0, 0.5f, 3, 0.25) == 3.75);
	CHECK_EQ(calls_other, 4);
	CHECK_EQ(unregister_ftrace_function(&regs), 0);
	CHECK_EQ(unregister_ftrace_function(&vec), 0);
	DONE();
}
