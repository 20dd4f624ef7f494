/*
 * Per-call cost of CALL_OPS sites (this file is built with -pg -mfentry
 * -fpatchable-function-entry=8,8 -falign-functions=16; callops_plain.c without the slot),
 * all ratios from alternating short runs in one process (as callcost.c):
 *   callops_k0        one ops on a CALL_OPS site / the fentry baseline
 *   callops_k64       the same with 64 other ops registered on other functions
 *   callops_k64_k0    the two above divided (64 unrelated ops ÷ none)
 *   callops_own       one ops: the CALL_OPS site / a plain site with its own trampoline
 *   callops2_k64_own  two ops on the CALL_OPS site, 64 elsewhere / the own-trampoline site
 * Output: one "name ns_per_call ratio" line each.  Usage: callops_bench [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <ftrace.h>

#include "../../patch/bench_util.h"

#define NOINLINE __attribute__((noinline, aligned(64)))

struct ftrt_poke {
	void *addr;
	unsigned char old[8];
	unsigned char new[8];
	unsigned char len;
};
int ftrt_text_poke_batch(struct ftrt_poke *p, size_t n, size_t *bad);
void ftrace_stub(void);
int owned(int x);
int baseline(int x);

NOINLINE int traced(int x) { __asm__ volatile(""); return x + 1; }

/* 64 other functions for the other ops */
#define O(n) NOINLINE int other##n(int x) { __asm__ volatile(""); return x + n; }
#define O8(n) O(n##0) O(n##1) O(n##2) O(n##3) O(n##4) O(n##5) O(n##6) O(n##7)
O8(1) O8(2) O8(3) O8(4) O8(5) O8(6) O8(7) O8(8)

__attribute__((used)) ftrace_notrace void empty_cb(unsigned long ip, unsigned long p,
						 struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static long iters = 20000000;
#define PAIRS 201

static ftrace_notrace double run(int (*fn)(int), long n)
{
	int (*volatile p)(int) = fn;
	int (*f)(int) = p;
	static volatile int sink;
	double t0 = now_ns();
	int s = 0;

	for (long i = 0; i < n; i++)
		s += f((int)i);
	sink += s;
	return (now_ns() - t0) / (double)n;
}

/* fn's fastest ns per call and the median ratio fn / base over adjacent pairs of runs */
static ftrace_notrace double report_vs(const char *name, int (*fn)(int), int (*base)(int))
{
	static double ratio[PAIRS];
	double best = 1e30, m;
	long n = iters / PAIRS > 0 ? iters / PAIRS : 1;

	for (int r = 0; r < PAIRS; r++) {
		double b = run(base, n), t = run(fn, n);

		ratio[r] = t / b;
		if (t < best)
			best = t;
	}
	m = median(ratio, PAIRS);
	printf("%s %.3f %.4f\n", name, best, m);
	return m;
}

static ftrace_notrace void need(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "callops_bench: %s: %d\n", what, ret);
		exit(1);
	}
}

/* baseline()'s site becomes "call ftrace_stub" (an empty __fentry__) */
static ftrace_notrace void plant_baseline(void)
{
	struct ftrace_func_info fi;
	struct ftrt_poke pk;
	int32_t rel;

	need(ftrace_lookup_function((unsigned long)baseline, &fi), "lookup baseline");
	memset(&pk, 0, sizeof(pk));
	pk.addr = (void *)fi.ip;
	pk.len = (unsigned char)fi.len;
	memcpy(pk.old, (void *)fi.ip, fi.len);
	rel = (int32_t)((unsigned long)ftrace_stub - (fi.ip + 5));
	pk.new[0] = 0xe8;
	memcpy(pk.new + 1, &rel, 4);
	if (fi.len == 6)
		pk.new[5] = 0x90;
	need(ftrt_text_poke_batch(&pk, 1, NULL), "plant baseline");
}

int main(int argc, char **argv)
{
	static struct ftrace_ops a = { .func = empty_cb }, b = { .func = empty_cb };
	static struct ftrace_ops own = { .func = empty_cb }, others[64];
	struct ftrace_func_info fi;
	char name[32];
	double r0, r64;
	int k;

	if (argc > 1)
		iters = atol(argv[1]);
	plant_baseline();
	need(ftrace_set_filter(&a, "traced", 6, 1), "filter a");
	need(register_ftrace_function(&a), "register a");
	need(ftrace_lookup_function((unsigned long)traced, &fi), "lookup traced");
	if (fi.state != FTRACE_SITE_CALLOPS) {
		fprintf(stderr, "callops_bench: traced() is no CALL_OPS site (state %d)\n", fi.state);
		return 1;
	}
	need(ftrace_set_filter(&own, "owned", 5, 1), "filter own");
	need(register_ftrace_function(&own), "register own");
	r0 = report_vs("callops_k0", traced, baseline);
	for (k = 0; k < 64; k++) {
		snprintf(name, sizeof(name), "other%d%d", k / 8 + 1, k % 8);
		others[k].func = empty_cb;
		need(ftrace_set_filter(&others[k], name, (int)strlen(name), 1), name);
		need(register_ftrace_function(&others[k]), name);
	}
	r64 = report_vs("callops_k64", traced, baseline);
	printf("callops_k64_k0 0 %.4f\n", r64 / r0);
	report_vs("callops_own", traced, owned);
	need(ftrace_set_filter(&b, "traced", 6, 1), "filter b");
	need(register_ftrace_function(&b), "register b");
	report_vs("callops2_k64_own", traced, owned);
	return 0;
}
