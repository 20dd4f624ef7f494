/*
 * Per-call cost of a traced site, all in one run (ratios against baselines measured here):
 *   nop       the site disabled (ftlink's nop)
 *   fentry    the site calling an empty __fentry__ directly (baseline)
 *   tramp     one ops with an empty callback: the site calls its own trampoline
 *   tramp_kN  the same while N other ops are registered on other functions
 *   list      two ops on the site: shared caller + list function
 *   list_k8   two ops on the site and 8 others registered elsewhere
 *   regs      one SAVE_REGS ops: its own regs trampoline
 * Output: one "name ns_per_call" line each.  Usage: callcost [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <ftrace.h>

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

/* 64 other functions for the K other ops. */
#define O(n) NOINLINE int other##n(int x) { __asm__ volatile(""); return x + n; }
#define O8(n) O(n##0) O(n##1) O(n##2) O(n##3) O(n##4) O(n##5) O(n##6) O(n##7)
O8(1) O8(2) O8(3) O8(4) O8(5) O8(6) O8(7) O8(8)

static ftrace_notrace void empty_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
				    struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static long iters = 20000000;

static ftrace_notrace double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * iters calls through a volatile pointer, in 100 short runs; the fastest run's ns per call
 * (short runs: on a loaded machine some run without being preempted).
 */
static ftrace_notrace double measure(int (*fn)(int))
{
	int (*volatile p)(int) = fn;
	double best = 1e30;
	volatile int sink = 0;
	long n = iters / 100 > 0 ? iters / 100 : 1;

	for (int r = 0; r < 100; r++) {
		int (*f)(int) = p;
		double t0 = now();
		int s = 0;

		for (long i = 0; i < n; i++)
			s += f((int)i);
		double t = (now() - t0) / (double)n;
		sink += s;
		if (t < best)
			best = t;
	}
	(void)sink;
	return best;
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
	static struct ftrace_ops others[64];
	struct ftrace_func_info fi;
	struct ftrt_poke pk;
	int32_t rel;
	char name[32];
	int k = 0;

	if (argc > 1)
		iters = atol(argv[1]);
	printf("nop %.3f\n", measure(traced));

	/* Baseline: baseline()'s site becomes "call ftrace_stub" (an empty __fentry__). */
	need(ftrace_lookup_function((unsigned long)baseline, &fi), "lookup");
	memset(&pk, 0, sizeof(pk));
	pk.addr = (void *)fi.ip;
	pk.len = (unsigned char)fi.len;
	memcpy(pk.old, (void *)fi.ip, fi.len);
	rel = (int32_t)((unsigned long)ftrace_stub - (fi.ip + 5));
	pk.new[0] = 0xe8;
	memcpy(pk.new + 1, &rel, 4);
	if (fi.len == 6)
		pk.new[5] = 0x90;
	need(ftrt_text_poke_batch(&pk, 1, NULL), "plant call");
	printf("fentry %.3f\n", measure(baseline));

	need(ftrace_set_filter(&a, "traced", 6, 1), "filter a");
	need(register_ftrace_function(&a), "register a");
	printf("tramp %.3f\n", measure(traced));
	for (int want = 1; want <= 64; want *= 8) {
		for (; k < want; k++) {
			snprintf(name, sizeof(name), "other%d%d", k / 8 + 1, k % 8);
			others[k].func = empty_cb;
			need(ftrace_set_filter(&others[k], name, (int)strlen(name), 1), name);
			need(register_ftrace_function(&others[k]), name);
		}
		printf("tramp_k%d %.3f\n", want, measure(traced));
	}
	for (k = 63; k >= 8; k--)
		need(unregister_ftrace_function(&others[k]), "unregister other");
	need(ftrace_set_filter(&b, "traced", 6, 1), "filter b");
	need(register_ftrace_function(&b), "register b");
	printf("list_k8 %.3f\n", measure(traced));
	for (; k >= 0; k--)
		need(unregister_ftrace_function(&others[k]), "unregister other");
	printf("list %.3f\n", measure(traced));
	need(unregister_ftrace_function(&b), "unregister b");
	need(unregister_ftrace_function(&a), "unregister a");

	need(ftrace_set_filter(&r, "traced", 6, 1), "filter r");
	need(register_ftrace_function(&r), "register r");
	printf("regs %.3f\n", measure(traced));
	need(unregister_ftrace_function(&r), "unregister r");
	return 0;
}
