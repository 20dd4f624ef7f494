/*
 * Multi-ops trampolines on arm64 (=2 sites): a site served by two ops calls a clone of
 * ftrace_multi_caller holding exactly their two segments (decoded from memory: the ops in
 * movz/movk x2, a bl to each callback), each callback runs once per call with the site's
 * ip, the real parent (the bl before it calls the function, also after the first
 * callback replaced the return slot, as a graph tracer does) and the first argument; 64 unrelated ops elsewhere change
 * nothing; a SAVE_REGS ops makes it the regs multi caller (a full frame); one ops stays on
 * while the other is switched on and off 200 times under 3 calling threads: the one that
 * stays sees every call exactly once; all off: nops.  With FTRT_MULTI=0 the same checks
 * hold through the list caller (no clone).  Last, unregister waits while a thread is in
 * the ops' callback (under qemu-user the runtime's signal for that wait must be one qemu can
 * deliver).  Prints "ok" or the failed checks.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftrace.h>

#include "arm64_insn.h"

extern const unsigned char ftrace_multi_caller[], ftrace_multi_caller_op_ptr[];
extern const unsigned char ftrace_regs_multi_caller[], ftrace_regs_multi_caller_op_ptr[];

/*
 * What a swapping callback puts in the return slot: returns to saved_parent (by ret, which
 * BTI does not check), as the graph tracer's return_to_handler returns to the real parent.
 */
__attribute__((used, visibility("hidden"))) unsigned long saved_parent;
void ret_stub(void);
__asm__(".text\n.p2align 2\n.type ret_stub, %function\nret_stub:\n"
	"\tadrp x16, saved_parent\n\tldr x16, [x16, :lo12:saved_parent]\n\tret x16\n"
	".size ret_stub, .-ret_stub\n");

#define N	1000
#define NOTHER	64
#define NOINLINE __attribute__((noinline))
#define CB ftrace_notrace

NOINLINE int target(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int other(int x) { __asm__ volatile(""); return x + 2; }
/* calls target with a bl (not a tail call: it adds after) */
NOINLINE int call_target(int x) { return target(x) * 2; }

static int fails;
#define CHECK(c) do { if (!(c)) { fails++; printf("%d: FAIL: %s\n", __LINE__, #c); } } while (0)

static long ca, cb, cr, cother;
static unsigned long tsite;
static long bad_ip, bad_parent, bad_arg, bad_full;
static __thread volatile int hit_a;
static __thread unsigned long want_arg;
static volatile int swap;	/* one thread calls: the callbacks swap the return slot */

/* the parent is a return address after a bl to target */
static CB void check_call(unsigned long ip, unsigned long parent, struct ftrace_regs *r)
{
	if (ip != tsite)
		__atomic_add_fetch(&bad_ip, 1, __ATOMIC_RELAXED);
	if (bl_dest(parent - 4) != (unsigned long)target)
		__atomic_add_fetch(&bad_parent, 1, __ATOMIC_RELAXED);
	if (ftrace_regs_get_argument(r, 0) != want_arg)
		__atomic_add_fetch(&bad_arg, 1, __ATOMIC_RELAXED);
}

/*
 * Like a graph tracer, the first of A and B to run replaces the return slot (ret_stub then
 * returns to the parent): the second must still be given the real parent.
 */
static CB void swap_slot(struct ftrace_regs *r)
{
	unsigned long *slot = ftrace_regs_get_return_slot(r);

	if (swap && *slot != (unsigned long)ret_stub) {
		saved_parent = *slot;
		*slot = (unsigned long)ret_stub;
	}
}

static CB void fa(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)op;
	check_call(ip, p, r);
	swap_slot(r);
	hit_a++;
	__atomic_add_fetch(&ca, 1, __ATOMIC_RELAXED);
}

static CB void fb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)op;
	check_call(ip, p, r);
	swap_slot(r);
	__atomic_add_fetch(&cb, 1, __ATOMIC_RELAXED);
}

static CB void fr(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)op;
	check_call(ip, p, r);
	if (!ftrace_get_regs(r))
		__atomic_add_fetch(&bad_full, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&cr, 1, __ATOMIC_RELAXED);
}

static CB void fo(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	__atomic_add_fetch(&cother, 1, __ATOMIC_RELAXED);
}

static struct ftrace_ops A = { .func = fa }, B = { .func = fb };
static struct ftrace_ops R = { .func = fr, .flags = FTRACE_OPS_FL_SAVE_REGS };
static struct ftrace_ops O[NOTHER];

static void calls(int n)
{
	volatile int sink = 0;

	for (int i = 0; i < n; i++) {
		want_arg = (unsigned long)i;
		sink += call_target(i);
	}
}

/* Does the site call a clone of template (its code up to the op-slot load) holding these ops? */
static int calls_multi(const unsigned char *tmpl, const unsigned char *op_ptr,
		       struct ftrace_ops *x, struct ftrace_ops *y)
{
	unsigned long d = bl_dest(tsite);
	int seen_x = 0, seen_y = 0, bls = 0;

	if (!d || memcmp((void *)d, tmpl, (size_t)(op_ptr - tmpl)))
		return 0;
	/* each segment: movz x2 + 3 movk x2 (the ops, 16 bits at a time), later its bl */
	for (unsigned long pc = d; pc < d + 4096 - 16 && word(pc) != 0xd65f0120u /* ret x9 */; pc += 4) {
		if ((word(pc) & 0xffe0001fu) == 0xd2800002u) {
			unsigned long v = 0;

			for (int k = 0; k < 4; k++)
				v |= (unsigned long)((word(pc + 4 * k) >> 5) & 0xffff) << (16 * k);
			seen_x += v == (unsigned long)x;
			seen_y += v == (unsigned long)y;
		}
		bls += (word(pc) & 0xfc000000u) == 0x94000000u;
	}
	return seen_x == 1 && seen_y == 1 && bls == 2;
}

/* W: its callback holds the calling thread until release is set */
static volatile int in_w, release, unregistered;
static CB void fw(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	in_w = 1;
	while (!release)
		__asm__ volatile("yield");
}
static struct ftrace_ops W = { .func = fw };

static void *call_once(void *arg)
{
	(void)arg;
	call_target(1);
	return NULL;
}

static void *unregister_w(void *arg)
{
	(void)arg;
	CHECK(unregister_ftrace_function(&W) == 0);
	unregistered = 1;
	return NULL;
}

static volatile int stop;
static long bad, total, progress;

static void *caller(void *arg)
{
	volatile int sink = 0;
	long b = 0, n = 0;

	(void)arg;
	want_arg = 7;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		hit_a = 0;
		sink += call_target(7);
		b += hit_a != 1;
		n++;
		__atomic_add_fetch(&progress, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&bad, b, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total, n, __ATOMIC_RELAXED);
	return NULL;
}

int main(void)
{
	const char *m = getenv("FTRT_MULTI");
	int multi = !(m && !strcmp(m, "0"));
	struct ftrace_func_info fi;
	unsigned long osite;
	pthread_t th[3];
	int k;

	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	tsite = fi.ip;
	CHECK(ftrace_lookup_function((unsigned long)other, &fi) == 0);
	osite = fi.ip;

	/* two ops: a clone of exactly the two, each run once per call */
	CHECK(ftrace_set_filter_ip(&A, tsite, 0, 1) == 0);
	CHECK(ftrace_set_filter_ip(&B, tsite, 0, 1) == 0);
	CHECK(register_ftrace_function(&A) == 0);
	CHECK(register_ftrace_function(&B) == 0);
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	CHECK(fi.nr_ops == 2);
	if (multi) {
		CHECK(fi.state == FTRACE_SITE_MULTI);
		CHECK(calls_multi(ftrace_multi_caller, ftrace_multi_caller_op_ptr, &A, &B));
	} else {
		CHECK(fi.state == FTRACE_SITE_CALLER);
	}
	swap = 1;
	calls(N);
	swap = 0;
	CHECK(ca == N && cb == N && bad_parent == 0);

	/* 64 unrelated ops on another function: the same clone, the same counts */
	for (k = 0; k < NOTHER; k++) {
		O[k].func = fo;
		CHECK(ftrace_set_filter_ip(&O[k], osite, 0, 1) == 0);
		CHECK(register_ftrace_function(&O[k]) == 0);
	}
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	CHECK(fi.nr_ops == 2 && fi.state == (multi ? FTRACE_SITE_MULTI : FTRACE_SITE_CALLER));
	if (multi)
		CHECK(calls_multi(ftrace_multi_caller, ftrace_multi_caller_op_ptr, &A, &B));
	ca = cb = 0;
	calls(N);
	CHECK(ca == N && cb == N && cother == 0);
	other(1);
	CHECK(cother == NOTHER);
	for (k = 0; k < NOTHER; k++)
		CHECK(unregister_ftrace_function(&O[k]) == 0);

	/* a SAVE_REGS ops with A: the regs multi caller, a full frame for it */
	CHECK(unregister_ftrace_function(&B) == 0);
	CHECK(ftrace_set_filter_ip(&R, tsite, 0, 1) == 0);
	CHECK(register_ftrace_function(&R) == 0);
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	CHECK(fi.nr_ops == 2);
	if (multi) {
		CHECK(fi.state == FTRACE_SITE_MULTI);
		CHECK(calls_multi(ftrace_regs_multi_caller, ftrace_regs_multi_caller_op_ptr, &A, &R));
	} else {
		CHECK(fi.state == FTRACE_SITE_REGS_CALLER);
	}
	ca = cr = 0;
	calls(N);
	CHECK(ca == N && cr == N && bad_full == 0);
	CHECK(unregister_ftrace_function(&R) == 0);

	/* B switched on and off while threads call: A sees every call exactly once */
	for (k = 0; k < 3; k++)
		CHECK(pthread_create(&th[k], NULL, caller, NULL) == 0);
	for (int i = 0; i < 200; i++) {
		long p0 = __atomic_load_n(&progress, __ATOMIC_RELAXED);

		CHECK((i & 1) ? unregister_ftrace_function(&B) == 0 : register_ftrace_function(&B) == 0);
		for (long s = 0; s < 1000000 && __atomic_load_n(&progress, __ATOMIC_RELAXED) < p0 + 3; s++)
			__asm__ volatile("yield");
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	CHECK(bad == 0 && total > 0);
	CHECK(bad_ip == 0 && bad_parent == 0 && bad_arg == 0);

	/* all off: the site is a nop again, nothing runs */
	CHECK(unregister_ftrace_function(&A) == 0);
	CHECK(word(tsite) == 0xd503201fu);
	ca = cb = 0;
	calls(N);
	CHECK(ca == 0 && cb == 0);

	/* unregister returns only once no thread runs the callback */
	CHECK(ftrace_set_filter_ip(&W, tsite, 0, 1) == 0);
	CHECK(register_ftrace_function(&W) == 0);
	CHECK(pthread_create(&th[0], NULL, call_once, NULL) == 0);
	while (!in_w)
		__asm__ volatile("yield");
	CHECK(pthread_create(&th[1], NULL, unregister_w, NULL) == 0);
	usleep(300000);
	CHECK(!unregistered);	/* still waiting for the callback */
	release = 1;
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	CHECK(unregistered);
	printf(fails ? "%d failures\n" : "ok\n", fails);
	return fails != 0;
}
