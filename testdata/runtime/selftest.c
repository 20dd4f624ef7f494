/*
 * The kernel's ftrace self-test scenario (trace_selftest_ops), with exact counts after each
 * call, plus the trampoline transitions checked by decoding what each site calls.
 */
#include <errno.h>
#include <stdlib.h>
#include "check.h"

NOINLINE int func1(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int func2(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int other(int x) { __asm__ volatile(""); return x + 3; }

static long c1, c2, c3, cglobal, cdyn;
static unsigned long func1_site, func2_site;

static CB void cb1(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == func1_site) c1++; else c1 += 1000; }
static CB void cb2(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == func2_site) c2++; else c2 += 1000; }
static CB void cb3(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; c3++; }
/* The global ops sees every function: count only func1/func2 (main and others also run). */
static CB void cbg(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == func1_site || ip == func2_site) cglobal++; }
static CB void cbd(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)r; CHECK(op->private == &cdyn); cdyn++; }

static struct ftrace_ops probe1 = { .func = cb1 };
static struct ftrace_ops probe2 = { .func = cb2 };
static struct ftrace_ops probe3 = { .func = cb3 };
static struct ftrace_ops global = { .func = cbg };

#define COUNTS(a, b, c, g, d) do { CHECK_EQ(c1, a); CHECK_EQ(c2, b); CHECK_EQ(c3, c); \
	CHECK_EQ(cglobal, g); CHECK_EQ(cdyn, d); } while (0)

int main(void)
{
	struct ftrace_func_info fi;
	struct ftrace_ops *dyn;
	struct ftrace_stats st0, st;
	volatile int sink = 0;

	CHECK_EQ(ftrace_lookup_function((unsigned long)func1, &fi), 0);
	func1_site = fi.ip;
	CHECK(!strcmp(fi.name, "func1"));
	CHECK_EQ(ftrace_lookup_function((unsigned long)func2, &fi), 0);
	func2_site = fi.ip;
	CHECK(is_nop(func1) && is_nop(func2) && is_nop(other));
	ftrace_get_stats(&st0);

	CHECK_EQ(ftrace_set_filter(&probe1, "func1", 5, 1), 0);
	CHECK_EQ(ftrace_set_filter(&probe2, "func2", 5, 1), 0);
	CHECK_EQ(ftrace_set_filter(&probe3, "func1 func2", 11, 1), 0);

	/* One ops on func1: its own trampoline. */
	CHECK_EQ(register_ftrace_function(&probe1), 0);
	CHECK_EQ(register_ftrace_function(&probe1), -EBUSY);
	CHECK(calls_tramp_of(func1, &probe1));
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_trampolines, st0.nr_trampolines + 1);
	CHECK(is_nop(func2) && is_nop(other));
	sink += func1(1);
	COUNTS(1, 0, 0, 0, 0);
	sink += func2(1);
	COUNTS(1, 0, 0, 0, 0);

	CHECK_EQ(register_ftrace_function(&probe2), 0);
	CHECK(calls_tramp_of(func2, &probe2));
	sink += func1(1);
	COUNTS(2, 0, 0, 0, 0);
	sink += func2(1);
	COUNTS(2, 1, 0, 0, 0);

	/* probe3 on both: two ops per site → shared caller (list function). */
	CHECK_EQ(register_ftrace_function(&probe3), 0);
	CHECK(CALLS_SET(func1, 0, &probe3, &probe1) && CALLS_SET(func2, 0, &probe3, &probe2));
	CHECK(is_nop(other));
	sink += func1(1);
	COUNTS(3, 1, 1, 0, 0);
	sink += func2(1);
	COUNTS(3, 2, 2, 0, 0);

	/* A global ops: every function. */
	CHECK_EQ(register_ftrace_function(&global), 0);
	CHECK(calls_tramp_of(other, &global));
	CHECK(CALLS_SET(func1, 0, &global, &probe3, &probe1));
	sink += func1(1);
	COUNTS(4, 2, 3, 1, 0);
	sink += func2(1);
	COUNTS(4, 3, 4, 2, 0);

	/* A heap-allocated ops on func1 only. */
	dyn = calloc(1, sizeof(*dyn));
	dyn->func = cbd;
	dyn->private = &cdyn;
	CHECK_EQ(ftrace_set_filter_ip(dyn, (unsigned long)func1, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(dyn), 0);
	sink += func1(1);
	COUNTS(5, 3, 5, 3, 1);
	sink += func2(1);
	COUNTS(5, 4, 6, 4, 1);

	/* Remove func1 from probe3. */
	CHECK_EQ(ftrace_set_filter(&probe3, "!func1", 6, 0), 0);
	sink += func1(1);
	COUNTS(6, 4, 6, 5, 2);
	sink += func2(1);
	COUNTS(6, 5, 7, 6, 2);

	/* Unregister in order; the counts stop one by one. */
	CHECK_EQ(unregister_ftrace_function(&probe1), 0);
	CHECK_EQ(unregister_ftrace_function(&probe1), -EINVAL);
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 8, 8, 3);
	CHECK_EQ(unregister_ftrace_function(&probe2), 0);
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 9, 10, 4);
	CHECK_EQ(unregister_ftrace_function(&probe3), 0);
	/* func2: only global now → global's trampoline again; func1: global + dyn → list. */
	CHECK(calls_tramp_of(func2, &global));
	CHECK(CALLS_SET(func1, 0, dyn, &global));
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 9, 12, 5);
	CHECK_EQ(unregister_ftrace_function(&global), 0);
	/* Back to one ops on func1: dyn's own trampoline. */
	CHECK(calls_tramp_of(func1, dyn));
	CHECK(is_nop(func2) && is_nop(other));
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 9, 12, 6);
	CHECK_EQ(unregister_ftrace_function(dyn), 0);
	ftrace_free_filter(dyn);
	free(dyn);
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 9, 12, 6);
	CHECK(is_nop(func1) && is_nop(func2) && is_nop(other));
	/* Every ops' trampolines and every set's were freed; the shared caller stays (the
	 * list function, and where a thread in a retired set's trampoline goes on); on
	 * CALL_OPS sites, the CALL_OPS callers stay instead (the full one, and the lean one
	 * when a callback was proven to need no vector registers). */
	ftrace_get_stats(&st);
	if (callops_on())
		CHECK(st.nr_trampolines == st0.nr_trampolines + 1 ||
		      st.nr_trampolines == st0.nr_trampolines + 2);
	else
		CHECK_EQ(st.nr_trampolines, st0.nr_trampolines + 1);

	/* Register again: filters survived unregistering. */
	CHECK_EQ(register_ftrace_function(&probe3), 0);
	sink += func1(1);
	sink += func2(1);
	COUNTS(6, 6, 10, 12, 6);
	CHECK_EQ(unregister_ftrace_function(&probe3), 0);
	CHECK(sink != 0);
	DONE();
}
