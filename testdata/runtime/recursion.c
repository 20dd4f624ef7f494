/*
 * FTRACE_OPS_FL_RECURSION: an ops that sets it is not called again for traced functions
 * its own callback calls (on the same thread); one that does not set it sees them.
 * Checked through an own trampoline and through the list function.
 */
#include "check.h"

NOINLINE int target(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int bystander(int x) { __asm__ volatile(""); return x + 2; }

static volatile long calls;
static volatile int inside;

/* Calls the traced function once from inside the callback (its own guard stops there). */
static CB void cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	int (*volatile t)(int) = target;

	(void)ip; (void)parent; (void)op; (void)fr;
	calls++;
	if (inside < 3) {
		inside++;
		t(0);
		inside--;
	}
}

static CB void nop_cb(unsigned long ip, unsigned long parent, struct ftrace_ops *op, struct ftrace_regs *fr)
{
	(void)ip; (void)parent; (void)op; (void)fr;
}

static CB long run(struct ftrace_ops *ops, int list)
{
	static struct ftrace_ops second = { .func = nop_cb };
	int (*volatile t)(int) = target;

	calls = 0;
	CHECK_EQ(ftrace_set_filter(ops, "target", 6, 1), 0);
	CHECK_EQ(register_ftrace_function(ops), 0);
	if (list) {
		CHECK_EQ(ftrace_set_filter(&second, "target", 6, 1), 0);
		CHECK_EQ(register_ftrace_function(&second), 0);
		CHECK(CALLS_SET(target, 0, &second, ops));
	} else {
		CHECK(calls_tramp_of(target, ops));
	}
	t(1);
	if (list)
		CHECK_EQ(unregister_ftrace_function(&second), 0);
	CHECK_EQ(unregister_ftrace_function(ops), 0);
	return calls;
}

int main(void)
{
	static struct ftrace_ops unguarded = { .func = cb };
	static struct ftrace_ops guarded = { .func = cb, .flags = FTRACE_OPS_FL_RECURSION };

	for (int list = 0; list < 2; list++) {
		/* Unguarded: the outer call plus 3 nested levels. */
		CHECK_EQ(run(&unguarded, list), 4);
		/* Guarded: nested calls from the callback are not reported. */
		CHECK_EQ(run(&guarded, list), 1);
	}
	CHECK_EQ(bystander(1), 3);
	DONE();
}
