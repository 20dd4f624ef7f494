/*
 * CALL_OPS sites (built with -fpatchable-function-entry=8,8): what each site's cell holds,
 * exact counts, plain sites mixed in, and a cell flipped between two ops while threads call
 * the site (every call must reach exactly one of them).  Argument: number of flips.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "check.h"

#define NUNREL	64
#define CALLS	1000

NOINLINE int target(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int second(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int other(int x) { __asm__ volatile(""); return x + 3; }
int plainfn(int x);	/* callops_plain.c: no slot */

static long ca, cb, crec, cunrel, cregs;
static unsigned long target_site;
/* written by the callbacks, read around calls of target (check.h: GCC's IPA) */
static __thread volatile int hit_a, hit_b;
static volatile int stop;
static long progress;	/* calls made by the threads */

static CB void fa(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == target_site) hit_a++; __atomic_add_fetch(&ca, 1, __ATOMIC_RELAXED); }
static CB void fb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == target_site) hit_b++; __atomic_add_fetch(&cb, 1, __ATOMIC_RELAXED); }
static CB void frec(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; crec++; }
static CB void funrel(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; cunrel++; }
static CB void fregs(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; if (ftrace_get_regs(r)) cregs++; }

static struct ftrace_ops A = { .func = fa };
static struct ftrace_ops B = { .func = fb };
static struct ftrace_ops R = { .func = frec, .flags = FTRACE_OPS_FL_RECURSION };
static struct ftrace_ops G = { .func = fregs, .flags = FTRACE_OPS_FL_SAVE_REGS };
static struct ftrace_ops unrel[NUNREL];

static long none_or_both, total_calls;

static volatile int sink;	/* keeps the calls */

static void *caller(void *arg)
{
	long bad = 0, n = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		hit_a = hit_b = 0;
		sink += target(1);
		if (hit_a + hit_b != 1)
			bad++;
		n++;
		__atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&none_or_both, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_calls, n, __ATOMIC_RELAXED);
	return NULL;
}

static void calls(int (*fn)(int), int n)
{
	int i;

	for (i = 0; i < n; i++)
		sink += fn(i);
}

int main(int argc, char **argv)
{
	struct ftrace_func_info fi;
	long flips = argc > 1 ? atol(argv[1]) : 2000, i;
	int nthreads = 6, k;
	pthread_t th[8];
	unsigned long other_site;

	CHECK_EQ(ftrace_lookup_function((unsigned long)target, &fi), 0);
	target_site = fi.ip;
	CHECK_EQ(ftrace_lookup_function((unsigned long)other, &fi), 0);
	other_site = fi.ip;
	CHECK(is_nop(target) && is_nop(second) && is_nop(other) && is_nop(plainfn));

	/* 64 unrelated ops, all on other(): other's cell holds their set of 64 */
	for (k = 0; k < NUNREL; k++) {
		unrel[k].func = funrel;
		CHECK_EQ(ftrace_set_filter_ip(&unrel[k], other_site, 0, 1), 0);
		CHECK_EQ(register_ftrace_function(&unrel[k]), 0);
	}
	calls(other, 10);
	CHECK_EQ(cunrel, 10 * NUNREL);
	/* 64 > the largest set: other is served as before (the list function) */
	CHECK_EQ(ftrace_lookup_function((unsigned long)other, &fi), 0);
	CHECK(fi.state != FTRACE_SITE_CALLOPS);

	/* one ops on target: the cell holds it, and only it runs */
	CHECK_EQ(ftrace_set_filter_ip(&A, target_site, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&A), 0);
	CHECK(calls_callops(target, 1, (struct ftrace_ops *[]){ &A }));
	CHECK_EQ(ftrace_lookup_function((unsigned long)target, &fi), 0);
	CHECK(fi.state == FTRACE_SITE_CALLOPS && fi.owner == &A);
	cunrel = 0;
	calls(target, CALLS);
	CHECK_EQ(ca, CALLS);
	CHECK_EQ(cunrel, 0);

	/* two ops: the cell holds the set {B, A} (list order), both run once per call */
	CHECK_EQ(ftrace_set_filter_ip(&B, target_site, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&B), 0);
	CHECK(calls_callops(target, 2, (struct ftrace_ops *[]){ &B, &A }));
	ca = cb = 0;
	calls(target, CALLS);
	CHECK_EQ(ca, CALLS);
	CHECK_EQ(cb, CALLS);
	CHECK_EQ(cunrel, 0);

	/* plain site in the same process with A: A's own trampoline */
	CHECK_EQ(ftrace_set_filter_ip(&A, (unsigned long)plainfn, 0, 0), 0);
	{
		struct decoded d = decode(plainfn);

		CHECK(d.target && d.slot == &A && d.func == (uintptr_t)fa);
		CHECK(callops_cell(plainfn) == NULL);
		CHECK_EQ(ftrace_lookup_function((unsigned long)plainfn, &fi), 0);
		CHECK(fi.state == FTRACE_SITE_TRAMP && fi.owner == &A);
	}
	ca = cb = 0;
	calls(plainfn, CALLS);
	calls(target, CALLS);
	CHECK_EQ(ca, 2 * CALLS);
	CHECK_EQ(cb, CALLS);

	/* a SAVE_REGS ops joins: the site leaves CALL_OPS (regs multi-ops trampoline) */
	CHECK_EQ(ftrace_set_filter_ip(&G, target_site, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&G), 0);
	CHECK(callops_cell(target) == NULL);
	ca = cb = 0;
	calls(target, CALLS);
	CHECK_EQ(ca, CALLS);
	CHECK_EQ(cb, CALLS);
	CHECK_EQ(cregs, CALLS);
	CHECK_EQ(unregister_ftrace_function(&G), 0);
	CHECK(calls_callops(target, 2, (struct ftrace_ops *[]){ &B, &A }));

	/* B leaves: A alone again */
	CHECK_EQ(unregister_ftrace_function(&B), 0);
	CHECK(calls_callops(target, 1, (struct ftrace_ops *[]){ &A }));

	/* a RECURSION ops alone: a set of one (the recursion rule applied inside) */
	CHECK_EQ(ftrace_set_filter_ip(&R, (unsigned long)second, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&R), 0);
	CHECK(calls_callops(second, 1, (struct ftrace_ops *[]){ &R }));
	calls(second, CALLS);
	CHECK_EQ(crec, CALLS);

	/*
	 * Flip target's cell between A and B (B registered on second only, so it stays a
	 * live ops) while threads call target: each call reaches exactly one of them.
	 */
	CHECK_EQ(ftrace_set_filter_ip(&B, (unsigned long)second, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&B), 0);
	CHECK(calls_callops(target, 1, (struct ftrace_ops *[]){ &A }));
	ca = cb = 0;
	for (k = 0; k < nthreads; k++)
		CHECK_EQ(pthread_create(&th[k], NULL, caller, NULL), 0);
	for (i = 0; i < flips; i++) {
		long p0 = __atomic_load_n(&progress, __ATOMIC_RELAXED), spins;

		CHECK_EQ(ftrt_debug_callops_set(target_site, (i & 1) ? &A : &B), 0);
		/* let the threads make a few calls with this one */
		for (spins = 0; spins < 1000000 &&
		     __atomic_load_n(&progress, __ATOMIC_RELAXED) < p0 + nthreads; spins++)
			__asm__ volatile("pause");
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	CHECK_EQ(none_or_both, 0);
	CHECK(total_calls > 0 && ca > 0 && cb > 0);
	printf("flips %ld, %d threads: %ld calls (%ld to A, %ld to B), none or both: %ld\n",
	       flips, nthreads, total_calls, ca, cb, none_or_both);

	/* unregister everything: sites back to nops, the cells to the stub */
	CHECK_EQ(unregister_ftrace_function(&A), 0);
	CHECK_EQ(unregister_ftrace_function(&B), 0);
	CHECK_EQ(unregister_ftrace_function(&R), 0);
	for (k = 0; k < NUNREL; k++)
		CHECK_EQ(unregister_ftrace_function(&unrel[k]), 0);
	CHECK(is_nop(target) && is_nop(second) && is_nop(other) && is_nop(plainfn));
	ca = cb = 0;
	calls(target, CALLS);
	CHECK_EQ(ca + cb, 0);
	/* and back: the slot is written once, the cell reused */
	CHECK_EQ(register_ftrace_function(&A), 0);
	CHECK(calls_callops(target, 1, (struct ftrace_ops *[]){ &A }));
	calls(target, CALLS);
	CHECK_EQ(ca, CALLS);
	CHECK_EQ(unregister_ftrace_function(&A), 0);
	CHECK_EQ(ftrace_synchronize(), 0);
	DONE();
}
