/*
 * Per-call cost of a traced site, all in one run (ratios against baselines measured here):
 *   nop       the site disabled (ftlink's nop)
 *   fentry    the site calling an empty __fentry__ directly (baseline)
 *   floor     the site calling a trampoline that only calls the empty callback and returns
 *   tramp     one ops with an empty callback: the site calls its own trampoline
 *   tramp_kN  the same while N other ops are registered on other functions
 *   list      two ops on the site: a trampoline of the two (the shared caller and the list
 *             function with FTRT_MULTI=0)
 *   list_k8   two ops on the site and 8 others registered elsewhere
 *   multi_k64_own  two ops on the site, 64 others elsewhere, against (instead of fentry) a
 *             site served by its own trampoline, measured in alternation with it
 *   clock     one ops whose callback only reads the trace clock and keeps it: the floor
 *             of any tracer that timestamps a call (the function tracer's target is
 *             measured against it)
 *   regs      one SAVE_REGS ops: its own regs trampoline
 *   direct    the site calls an empty direct trampoline (register_ftrace_direct)
 *   direct_shared_own  a direct call and one ops on the site, against an own trampoline
 * Output: one "name ns_per_call ratio_to_fentry" line each (see report()).
 * Usage: callcost [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
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

NOINLINE int traced(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int baseline(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int floored(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int owned(int x) { __asm__ volatile(""); return x + 1; }

/* 64 other functions for the K other ops. */
#define O(n) NOINLINE int other##n(int x) { __asm__ volatile(""); return x + n; }
#define O8(n) O(n##0) O(n##1) O(n##2) O(n##3) O(n##4) O(n##5) O(n##6) O(n##7)
O8(1) O8(2) O8(3) O8(4) O8(5) O8(6) O8(7) O8(8)

__attribute__((used)) ftrace_notrace void empty_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
				    struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static __thread uint64_t clock_kept;

/* Reads the clock the tracers read (rdtsc / cntvct_el0) and keeps it: nothing else. */
__attribute__((used)) ftrace_notrace void clock_cb(unsigned long ip, unsigned long p,
						   struct ftrace_ops *op, struct ftrace_regs *r)
{
	uint64_t v;

	(void)ip; (void)p; (void)op; (void)r;
#if defined(__x86_64__)
	v = __builtin_ia32_rdtsc();
#else
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
#endif
	clock_kept = v;
}

/*
 * The floor of any trampoline: one that only calls the callback and returns (no registers
 * saved, no ops loaded).  A site calling it costs what the extra call level costs.
 */
__asm__(".text\n"
	".p2align 4\n"
	"bare_tramp:\n"
	"\tcall empty_cb\n"
	"\tret\n");
extern char bare_tramp[];

static long iters = 20000000;

#define PAIRS 201

/* ns per call of n calls of f through a volatile pointer */
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

/*
 * Prints "name ns ratio": fn's per-call ns (its fastest short run) and its ratio to
 * baseline(), the median over pairs of adjacent short runs of the two.  Alternating matters
 * on this VM: the same loop's per-call time drifts by up to 40 % within a process while the
 * clock does not (a neighbour on the host core), so a baseline measured earlier is not
 * comparable, and mins taken apart can come from different phases.
 */
static ftrace_notrace void report_vs(const char *name, int (*fn)(int), int (*base)(int))
{
	static double ratio[PAIRS];
	double best = 1e30;
	long n = iters / PAIRS > 0 ? iters / PAIRS : 1;

	for (int r = 0; r < PAIRS; r++) {
		double b = run(base, n), t = run(fn, n);

		ratio[r] = t / b;
		if (t < best)
			best = t;
	}
	printf("%s %.3f %.4f\n", name, best, median(ratio, PAIRS));
}

static ftrace_notrace void report(const char *name, int (*fn)(int))
{
	report_vs(name, fn, baseline);
}

/* fn's site becomes "call target" (the runtime's own patcher checks the bytes first). */
static ftrace_notrace int plant(int (*fn)(int), const void *target)
{
	struct ftrace_func_info fi;
	struct ftrt_poke pk;
	int32_t rel;
	int ret = ftrace_lookup_function((unsigned long)fn, &fi);

	if (ret)
		return ret;
	memset(&pk, 0, sizeof(pk));
	pk.addr = (void *)fi.ip;
	pk.len = (unsigned char)fi.len;
	memcpy(pk.old, (void *)fi.ip, fi.len);
	rel = (int32_t)((unsigned long)target - (fi.ip + 5));
	pk.new[0] = 0xe8;
	memcpy(pk.new + 1, &rel, 4);
	if (fi.len == 6)
		pk.new[5] = 0x90;
	return ftrt_text_poke_batch(&pk, 1, NULL);
}

static ftrace_notrace void need(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "callcost: %s: %d\n", what, ret);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static struct ftrace_ops a = { .func = empty_cb }, b = { .func = empty_cb };
	static struct ftrace_ops r = { .func = empty_cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
	static struct ftrace_ops own = { .func = empty_cb }, d, e = { .func = empty_cb };
	static struct ftrace_ops c = { .func = clock_cb };
	static struct ftrace_ops others[64];
	char name[32];
	int k = 0;

	if (argc > 1)
		iters = atol(argv[1]);

	/* Baseline: baseline()'s site becomes "call ftrace_stub" (an empty __fentry__). */
	need(plant(baseline, ftrace_stub), "plant baseline");
	need(plant(floored, bare_tramp), "plant floor");
	report("nop", traced);
	report("fentry", baseline);
	report("floor", floored);

	need(ftrace_set_filter(&a, "traced", 6, 1), "filter a");
	need(register_ftrace_function(&a), "register a");
	report("tramp", traced);
	for (int want = 1; want <= 64; want *= 8) {
		for (; k < want; k++) {
			snprintf(name, sizeof(name), "other%d%d", k / 8 + 1, k % 8);
			others[k].func = empty_cb;
			need(ftrace_set_filter(&others[k], name, (int)strlen(name), 1), name);
			need(register_ftrace_function(&others[k]), name);
		}
		snprintf(name, sizeof(name), "tramp_k%d", want);
		report(name, traced);
	}
	/* two ops on the site, 64 elsewhere, against a site with its own trampoline */
	need(ftrace_set_filter(&own, "owned", 5, 1), "filter own");
	need(register_ftrace_function(&own), "register own");
	need(ftrace_set_filter(&b, "traced", 6, 1), "filter b");
	need(register_ftrace_function(&b), "register b");
	report_vs("multi_k64_own", traced, owned);
	need(unregister_ftrace_function(&b), "unregister b");
	for (k = 63; k >= 8; k--)
		need(unregister_ftrace_function(&others[k]), "unregister other");
	need(register_ftrace_function(&b), "register b");
	report("list_k8", traced);
	for (; k >= 0; k--)
		need(unregister_ftrace_function(&others[k]), "unregister other");
	report("list", traced);
	need(unregister_ftrace_function(&b), "unregister b");
	need(unregister_ftrace_function(&a), "unregister a");

	need(ftrace_set_filter(&c, "traced", 6, 1), "filter c");
	need(register_ftrace_function(&c), "register c");
	report("clock", traced);
	need(unregister_ftrace_function(&c), "unregister c");

	need(ftrace_set_filter(&r, "traced", 6, 1), "filter r");
	need(register_ftrace_function(&r), "register r");
	report("regs", traced);
	need(unregister_ftrace_function(&r), "unregister r");

	/* direct calls: an empty direct trampoline (ftrace_stub is a plain ret) */
	need(ftrace_set_filter(&d, "traced", 6, 1), "filter d");
	need(register_ftrace_direct(&d, (unsigned long)ftrace_stub), "register d");
	report("direct", traced);
	need(ftrace_set_filter(&e, "traced", 6, 1), "filter e");
	need(register_ftrace_function(&e), "register e");
	report_vs("direct_shared_own", traced, owned);
	need(unregister_ftrace_function(&e), "unregister e");
	need(unregister_ftrace_direct(&d, (unsigned long)ftrace_stub, 0), "unregister d");
	need(unregister_ftrace_function(&own), "unregister own");
	return 0;
}
