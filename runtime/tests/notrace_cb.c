/*
 * ftrace_notrace keeps a callback, and what it calls, out of the sites: with
 * -fpatchable-function-entry (aarch64), no_instrument_function alone leaves the entry's
 * nops, and an ops of every function ("*") without FTRACE_OPS_FL_RECURSION then traced
 * its own callback and recursed until the stack ran out.  Exact counts; prints "ok".
 */
#include <errno.h>
#include <stdio.h>
#include <ftrace.h>

static long hits, helped;

__attribute__((noinline)) int work(int x) { __asm__ volatile(""); return x * 2 + 1; }

static ftrace_notrace __attribute__((noinline)) void helper(void)
{
	__asm__ volatile("");
	helped++;
}

static ftrace_notrace void count_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
				    struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
	helper();
}

static int (*volatile fn)(int) = work;

int main(void)
{
	static struct ftrace_ops o = { .func = count_cb };
	struct ftrace_func_info fi;
	int sum = 0, fails = 0;

	if (ftrace_lookup_function((unsigned long)count_cb, &fi) != -ENODEV ||
	    ftrace_lookup_function((unsigned long)helper, &fi) != -ENODEV) {
		printf("FAIL: a notrace function has a site\n");
		fails++;
	}
	if (ftrace_lookup_function((unsigned long)work, &fi)) {
		printf("FAIL: work has no site\n");
		fails++;
	}
	if (ftrace_set_filter(&o, "*", 1, 1) || register_ftrace_function(&o)) {
		printf("FAIL: register\n");
		return 1;
	}
	for (int i = 0; i < 5; i++)
		sum += fn(i);
	unregister_ftrace_function(&o);
	if (hits != 5 || helped != 5 || sum != 25) {
		printf("FAIL: hits %ld helped %ld sum %d, want 5 5 25\n", hits, helped, sum);
		fails++;
	}
	if (!fails)
		printf("ok\n");
	return fails != 0;
}
