/*
 * CALL_OPS on arm64 (-fpatchable-function-entry=4,2): decoded from memory, independently
 * of the runtime's bookkeeping: the site's bl goes to a copy of ftrace_callops_caller, the
 * 8 bytes before the function point at a cell, the cell holds the one ops or the set of
 * two; exact counts; a plain site (patchable_function_entry(2, 0)) in the same program
 * gets a trampoline; a cell flipped between two ops while threads call the site; back to
 * nops and the stub.  Prints "ok" or the failed checks.
 *
 * Under qemu-user, which keeps running its translation of code written through
 * /proc/self/mem (a site enabled again after it ran as a nop would stay a nop), the
 * runtime's probe chooses guest stores (FTRT_POKE=mprotect) by itself.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ftrace.h>

#include "arm64_insn.h"

extern const unsigned char ftrace_callops_caller[], ftrace_callops_caller_end[];
extern struct ftrace_ops ftrt_callops_stub;
void ftrt_callops_func(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *);
int ftrt_debug_callops_set(unsigned long ip, struct ftrace_ops *ops);

#define N	1000
#define NOINLINE __attribute__((noinline))
#define CB ftrace_notrace

NOINLINE int target(int x) { __asm__ volatile(""); return x + 1; }
__attribute__((noinline, patchable_function_entry(2, 0))) int plainfn(int x)
{ __asm__ volatile(""); return x + 2; }

static int fails;
#define CHECK(c) do { if (!(c)) { fails++; printf("%d: FAIL: %s\n", __LINE__, #c); } } while (0)

static long ca, cb;
static unsigned long tsite;
static __thread volatile int hit_a, hit_b;
static CB void fa(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == tsite) hit_a++; __atomic_add_fetch(&ca, 1, __ATOMIC_RELAXED); }
static CB void fb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == tsite) hit_b++; __atomic_add_fetch(&cb, 1, __ATOMIC_RELAXED); }
static struct ftrace_ops A = { .func = fa }, B = { .func = fb };

/* The site at ip calls a copy of ftrace_callops_caller. */
static int calls_caller(unsigned long ip)
{
	unsigned long d = bl_dest(ip);

	return d && !memcmp((void *)d, ftrace_callops_caller,
			    (size_t)(ftrace_callops_caller_end - ftrace_callops_caller));
}

/* What fn's cell holds: the slot is the 8 bytes before fn. */
static struct ftrace_ops *cell_of(void *fn)
{
	uintptr_t *cell, a = (uintptr_t)fn;

	__asm__("" : "+r"(a));	/* an address, not the function object (gcc's bounds checks) */
	memcpy(&cell, (void *)(a - 8), 8);
	return (struct ftrace_ops *)*cell;
}

static void calls(int (*fn)(int), int n)
{
	volatile int sink = 0;

	for (int i = 0; i < n; i++)
		sink += fn(i);
}

static volatile int stop;
static long bad, total, progress;

static void *caller(void *arg)
{
	volatile int sink = 0;
	long b = 0, n = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		hit_a = hit_b = 0;
		sink += target(1);
		b += hit_a + hit_b != 1;
		n++;
		__atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&bad, b, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total, n, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	struct ftrace_func_info fi;
	struct ftrace_ops *set;
	unsigned long psite;
	pthread_t th[3];
	int k;

	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	tsite = fi.ip;
	CHECK(ftrace_lookup_function((unsigned long)plainfn, &fi) == 0);
	psite = fi.ip;
	CHECK(word(tsite) == 0xd503201fu && word(psite) == 0xd503201fu);

	/* one ops: the cell holds it */
	CHECK(ftrace_set_filter_ip(&A, tsite, 0, 1) == 0);
	CHECK(register_ftrace_function(&A) == 0);
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	CHECK(fi.state == FTRACE_SITE_CALLOPS && fi.owner == &A && fi.nr_ops == 1);
	CHECK(calls_caller(tsite) && cell_of(target) == &A);
	calls(target, N);
	CHECK(ca == N && cb == 0);

	/* two ops on one site: the cell holds their set; each runs once per call */
	CHECK(ftrace_set_filter_ip(&B, tsite, 0, 1) == 0);
	CHECK(register_ftrace_function(&B) == 0);
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	CHECK(fi.state == FTRACE_SITE_CALLOPS && fi.nr_ops == 2);
	set = cell_of(target);
	CHECK(calls_caller(tsite) && set->func == ftrt_callops_func);
	ca = cb = 0;
	calls(target, N);
	CHECK(ca == N && cb == N);

	/* a plain site with A too: A's own trampoline, not the CALL_OPS caller */
	CHECK(ftrace_set_filter_ip(&A, psite, 0, 0) == 0);
	CHECK(ftrace_lookup_function((unsigned long)plainfn, &fi) == 0);
	CHECK(fi.state == FTRACE_SITE_TRAMP && fi.owner == &A);
	CHECK(bl_dest(psite) && !calls_caller(psite));
	ca = cb = 0;
	calls(plainfn, N);
	calls(target, N);
	CHECK(ca == 2 * N && cb == N);

	/* B leaves target (it stays on plainfn): A alone in the cell again */
	CHECK(ftrace_set_filter_ip(&B, psite, 0, 1) == 0);
	CHECK(cell_of(target) == &A);

	/* the cell flipped between A and B while threads call target: exactly one per call */
	for (k = 0; k < 3; k++)
		CHECK(pthread_create(&th[k], NULL, caller, NULL) == 0);
	for (long i = 0; i < 400; i++) {
		long p0 = __atomic_load_n(&progress, __ATOMIC_RELAXED);

		CHECK(ftrt_debug_callops_set(tsite, (i & 1) ? &A : &B) == 0);
		for (long s = 0; s < 1000000 && __atomic_load_n(&progress, __ATOMIC_RELAXED) < p0 + 3; s++)
			__asm__ volatile("yield");
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	CHECK(bad == 0 && total > 0);

	/* all off: nops, the cell back to the stub; on again: the same cell */
	CHECK(unregister_ftrace_function(&A) == 0);
	CHECK(unregister_ftrace_function(&B) == 0);
	CHECK(word(tsite) == 0xd503201fu && word(psite) == 0xd503201fu);
	CHECK(cell_of(target) == &ftrt_callops_stub);
	ca = cb = 0;
	calls(target, N);
	CHECK(ca == 0 && cb == 0);
	CHECK(register_ftrace_function(&A) == 0);
	CHECK(calls_caller(tsite) && cell_of(target) == &A);
	calls(target, N);
	CHECK(ca == N);
	CHECK(unregister_ftrace_function(&A) == 0);
	printf(fails ? "%d failures\n" : "ok\n", fails);
	return fails != 0;
}
