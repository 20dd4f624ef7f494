/*
 * Sites of a library not processed by ftlink that reach __fentry__ through the PLT or the
 * GOT (pltcall.S) are accepted, nopped at load and can be traced.
 */
#include <errno.h>
#include "check.h"

int plt_f(int), got_f(int);

static volatile long hits;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

int main(void)
{
	static struct ftrace_ops ops = { .func = cb };
	int (*volatile pf)(int) = plt_f, (*volatile gf)(int) = got_f;
	struct ftrace_stats st;

	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_refused, 0);
	CHECK(is_nop(plt_f));
	CHECK(is_nop(got_f));
	CHECK_EQ(ftrace_set_filter(&ops, "plt_f got_f", 11, 1), 0);
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(calls_tramp_of(plt_f, &ops));
	CHECK(calls_tramp_of(got_f, &ops));
	CHECK_EQ(pf(2), 6);
	CHECK_EQ(gf(2), 3);
	CHECK_EQ(hits, 2);
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	CHECK(is_nop(plt_f) && is_nop(got_f));
	DONE();
}
