/*
 * Direct calls (register_ftrace_direct & co.): the kernel's direct-call test matrix (every
 * enable/disable order of a direct call and a function tracer on one function, exact counts
 * in each state), a second direct user, the IPMODIFY and filter rules, a direct trampoline
 * out of rel32 reach, and modify_ftrace_direct with 8 threads calling the site while the
 * target flips between two trampolines: every call must enter exactly one of them.
 * Usage: direct [flips]   (default 10000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "check.h"

/* Per-thread: calls each direct trampoline saw, and how many entered the current call. */
__thread long hits_a, hits_b, hits_far;
__thread int entered;
/* Per-thread accounting of the traced function's own runs (stress phase). */
__thread long body_calls, neither, both;

/*
 * Two direct trampolines: count (thread-local: no atomics needed), mark the call entered,
 * return into the traced function with every register but the flags as they were.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl tramp_a\n"
	"tramp_a:\n"
	"\tincq %fs:hits_a@tpoff\n"
	"\tincl %fs:entered@tpoff\n"
	"\tret\n"
	".p2align 4\n"
	".globl tramp_b\n"
	"tramp_b:\n"
	"\tincq %fs:hits_b@tpoff\n"
	"\tincl %fs:entered@tpoff\n"
	"\tret\n");
extern char tramp_a[], tramp_b[];

NOINLINE long dfunc(long a, long b)
{
	body_calls++;
	if (entered == 0)
		neither++;
	else if (entered > 1)
		both++;
	entered = 0;
	return a * 3 + b;
}

NOINLINE long dfunc2(long a, long b) { __asm__ volatile(""); entered = 0; return a * 5 + b; }

static long tcount, gcount;
static unsigned long dsite;

static CB void tracer_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)p; (void)op; (void)r; if (ip == dsite) tcount++; }
/* An IPMODIFY ops (never reached: refused). */
static CB void ipm_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; gcount++; }

static struct ftrace_ops direct, direct2, tracer = { .func = tracer_cb };
static struct ftrace_ops ipm = { .func = ipm_cb,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY };

static long (*volatile p_dfunc)(long, long) = dfunc;
static long (*volatile p_dfunc2)(long, long) = dfunc2;

/* One call; returns which trampolines it entered as a*1 + b*10 + tracer*100. */
static CB long call_once(void)
{
	long a0 = hits_a, b0 = hits_b, t0 = tcount;

	CHECK_EQ(p_dfunc(4, 5), 17);
	return (hits_a - a0) + 10 * (hits_b - b0) + 100 * (tcount - t0);
}

/* What the site does now, from its bytes: 'n' nop, 'a'/'b' a direct call, 's' a trampoline. */
static CB char site_kind(void)
{
	struct decoded d = decode((void *)dfunc);

	if (is_nop((void *)dfunc))
		return 'n';
	if (d.target == (uintptr_t)tramp_a)
		return 'a';
	if (d.target == (uintptr_t)tramp_b)
		return 'b';
	return d.target ? 's' : '?';
}

/* The two-ops site (direct + tracer) runs both through the regs variant. */
static CB int shared_ok(void)
{
	struct ftrace_func_info fi;

	if (ftrace_lookup_function((unsigned long)dfunc, &fi) || fi.nr_ops != 2)
		return 0;
	return (tracer.flags & FTRACE_OPS_FL_ENABLED) && tracer.next == &direct ?
		CALLS_SET(dfunc, 1, &tracer, &direct) : CALLS_SET(dfunc, 1, &direct, &tracer);
}

static CB int direct_state(char want)
{
	struct ftrace_func_info fi;

	return site_kind() == want && !ftrace_lookup_function((unsigned long)dfunc, &fi) &&
	       fi.state == FTRACE_SITE_DIRECT && fi.owner == &direct && fi.nr_ops == 1;
}

/* The matrix: D = direct on, T = tracer on; every order of enabling and disabling both. */
static CB void matrix(void)
{
	static const char *const orders[] = { "DTtd", "DTdt", "TDdt", "TDtd", "DdTt", "TtDd" };
	unsigned i, j;

	for (i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
		int d = 0, t = 0;

		for (j = 0; orders[i][j]; j++) {
			switch (orders[i][j]) {
			case 'D':
				CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)tramp_a), 0);
				d = 1;
				break;
			case 'd':
				CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)tramp_a, 0), 0);
				d = 0;
				break;
			case 'T':
				CHECK_EQ(register_ftrace_function(&tracer), 0);
				t = 1;
				break;
			case 't':
				CHECK_EQ(unregister_ftrace_function(&tracer), 0);
				t = 0;
				break;
			}
			/* exact counts: the direct trampoline and the tracer, each once or not */
			CHECK_EQ(call_once(), d * 1 + t * 100);
			CHECK_EQ(call_once(), d * 1 + t * 100);
			if (d && t)
				CHECK(shared_ok());
			else if (d)
				CHECK(direct_state('a'));
			else if (t)
				CHECK(calls_tramp_of((void *)dfunc, &tracer));
			else
				CHECK(is_nop((void *)dfunc));
			/* modify in this state: the calls follow, and back */
			if (d) {
				CHECK_EQ(modify_ftrace_direct(&direct, (unsigned long)tramp_b), 0);
				CHECK_EQ(call_once(), 10 + t * 100);
				if (!t)
					CHECK(direct_state('b'));
				CHECK_EQ(modify_ftrace_direct_nolock(&direct, (unsigned long)tramp_a), 0);
				CHECK_EQ(call_once(), 1 + t * 100);
			}
		}
		CHECK(is_nop((void *)dfunc));
	}
}

/* Errors and exclusions. */
static CB void rules(void)
{
	static struct ftrace_ops empty, withfunc = { .func = tracer_cb };

	CHECK_EQ(register_ftrace_direct(&empty, (unsigned long)tramp_a), -EINVAL);	/* no filter */
	CHECK_EQ(ftrace_set_filter(&withfunc, "dfunc", 5, 1), 0);
	CHECK_EQ(register_ftrace_direct(&withfunc, (unsigned long)tramp_a), -EINVAL);	/* func set */
	CHECK_EQ(register_ftrace_direct(&direct, 0), -EINVAL);
	CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)tramp_a), 0);
	CHECK(direct.flags & FTRACE_OPS_FL_DIRECT);
	CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)tramp_a), -EINVAL);	/* registered */
	CHECK_EQ(unregister_ftrace_function(&direct), -EINVAL);	/* not through this call */
	/* a second direct user: -EBUSY on the same function, fine on another */
	CHECK_EQ(ftrace_set_filter(&direct2, "dfunc", 5, 1), 0);
	CHECK_EQ(register_ftrace_direct(&direct2, (unsigned long)tramp_b), -EBUSY);
	CHECK(!(direct2.flags & (FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_DIRECT)) && !direct2.func);
	CHECK_EQ(ftrace_set_filter(&direct2, "dfunc2", 6, 1), 0);
	CHECK_EQ(register_ftrace_direct(&direct2, (unsigned long)tramp_b), 0);
	hits_a = hits_b = 0;
	CHECK_EQ(p_dfunc2(1, 1), 6);
	CHECK_EQ(p_dfunc(1, 1), 4);
	CHECK_EQ(hits_a, 1);
	CHECK_EQ(hits_b, 1);
	/* ... nor may it take the first one's function by a filter change */
	CHECK_EQ(ftrace_set_filter(&direct2, "dfunc", 5, 0), -EBUSY);
	CHECK_EQ(ftrace_set_filter(&direct2, NULL, 0, 1), -EINVAL);	/* empty */
	/* IPMODIFY excludes a direct call on the same function, both ways */
	CHECK_EQ(ftrace_set_filter(&ipm, "dfunc", 5, 1), 0);
	CHECK_EQ(register_ftrace_function(&ipm), -EBUSY);
	CHECK_EQ(ftrace_set_filter(&ipm, "dfunc2", 6, 1), 0);
	CHECK_EQ(register_ftrace_function(&ipm), -EBUSY);	/* direct2 there */
	CHECK_EQ(unregister_ftrace_direct(&direct2, (unsigned long)tramp_a, 0), -EINVAL);	/* wrong addr */
	CHECK_EQ(unregister_ftrace_direct(&direct2, (unsigned long)tramp_b, 1), 0);
	CHECK(!direct2.filter_hash && !direct2.func && !direct2.direct_call);
	CHECK_EQ(register_ftrace_function(&ipm), 0);
	CHECK_EQ(ftrace_set_filter(&direct2, "dfunc2", 6, 1), 0);
	CHECK_EQ(register_ftrace_direct(&direct2, (unsigned long)tramp_b), -EBUSY);	/* ipm there */
	CHECK_EQ(unregister_ftrace_function(&ipm), 0);
	CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)tramp_a, 0), 0);
	CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)tramp_a, 0), -EINVAL);
	CHECK(is_nop((void *)dfunc) && is_nop((void *)dfunc2));
	CHECK_EQ(gcount, 0);
	ftrace_free_filter(&direct2);
	ftrace_free_filter(&withfunc);
}

/*
 * A direct trampoline more than 2 GiB away from the site: no rel32 reaches it, so the site
 * calls the direct ops' own regs trampoline, which diverts into it.
 */
static CB void far_away(void)
{
	static long far_count;
	unsigned char *code = MAP_FAILED, *p;
	unsigned long hint;
	uintptr_t cnt = (uintptr_t)&far_count;
	struct ftrace_func_info fi;

	for (hint = 1ul << 32; hint < (1ul << 46) && code == MAP_FAILED; hint <<= 1) {
		long d = (long)(hint - (uintptr_t)dfunc);

		if (d == (long)(int32_t)d || -d == (long)(int32_t)-d)
			continue;
		code = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	}
	CHECK(code != MAP_FAILED);
	if (code == MAP_FAILED)
		return;
	/* movabs $&far_count, %r11; lock incq (%r11); ret  (r11 is free at function entry) */
	p = code;
	*p++ = 0x49; *p++ = 0xbb;
	memcpy(p, &cnt, 8); p += 8;
	*p++ = 0xf0; *p++ = 0x49; *p++ = 0xff; *p++ = 0x03;
	*p++ = 0xc3;
	CHECK_EQ(mprotect(code, 4096, PROT_READ | PROT_EXEC), 0);
	CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)code), 0);
	CHECK_EQ(ftrace_lookup_function((unsigned long)dfunc, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_TRAMP);
	CHECK(fi.owner == &direct);
	CHECK(calls_tramp_of((void *)dfunc, &direct));
	entered = 1;	/* the far trampoline does not mark */
	CHECK_EQ(p_dfunc(2, 3), 9);
	CHECK_EQ(far_count, 1);
	CHECK_EQ(modify_ftrace_direct(&direct, (unsigned long)tramp_a), 0);
	CHECK(direct_state('a'));
	hits_a = 0;
	CHECK_EQ(p_dfunc(2, 3), 9);
	CHECK_EQ(hits_a, 1);
	CHECK_EQ(modify_ftrace_direct(&direct, (unsigned long)code), 0);
	CHECK(calls_tramp_of((void *)dfunc, &direct));
	entered = 1;
	CHECK_EQ(p_dfunc(2, 3), 9);
	CHECK_EQ(far_count, 2);
	CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)code, 0), 0);
	CHECK_EQ(ftrace_synchronize(), 0);
	munmap(code, 4096);
}

/* ---- switching stress ---------------------------------------------------------------------- */

#define THREADS 8

static atomic_int stop;
static struct {
	long calls, body, a, b, neither, both;
} res[THREADS];

static void *caller(void *arg)
{
	long i = (long)arg, n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (p_dfunc(n, 1) != n * 3 + 1)
			both += 1000000;	/* a wrong result counts as a failure too */
		n++;
	}
	res[i].calls = n;
	res[i].body = body_calls;
	res[i].a = hits_a;
	res[i].b = hits_b;
	res[i].neither = neither;
	res[i].both = both;
	return NULL;
}

static CB void stress(long flips)
{
	pthread_t th[THREADS];
	long i, total = 0, ta = 0, tb = 0;

	atomic_store(&stop, 0);
	CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)tramp_a), 0);
	for (i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, caller, (void *)i), 0);
	for (i = 0; i < flips; i++) {
		/* half of the flips with the site shared (the trampoline reads the target) */
		if (i == flips / 2)
			CHECK_EQ(register_ftrace_function(&tracer), 0);
		CHECK_EQ(modify_ftrace_direct(&direct, (unsigned long)(i & 1 ? tramp_a : tramp_b)), 0);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(unregister_ftrace_function(&tracer), 0);
	CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)(flips & 1 ? tramp_b : tramp_a), 0), 0);
	for (i = 0; i < THREADS; i++) {
		CHECK_EQ(res[i].neither, 0);
		CHECK_EQ(res[i].both, 0);
		CHECK_EQ(res[i].body, res[i].calls);
		CHECK_EQ(res[i].a + res[i].b, res[i].calls);
		total += res[i].calls;
		ta += res[i].a;
		tb += res[i].b;
	}
	printf("stress: %ld flips, %ld calls (a %ld, b %ld), neither 0, both 0 checked\n",
	       flips, total, ta, tb);
	CHECK(total > 0);
}

int main(int argc, char **argv)
{
	struct ftrace_func_info fi;
	long flips = argc > 1 ? atol(argv[1]) : 10000;

	CHECK_EQ(ftrace_lookup_function((unsigned long)dfunc, &fi), 0);
	dsite = fi.ip;
	CHECK_EQ(ftrace_set_filter(&direct, "dfunc", 5, 1), 0);
	CHECK_EQ(ftrace_set_filter(&tracer, "dfunc", 5, 1), 0);
	entered = 0;
	matrix();
	/* the tracer with no filter (every function), as the function tracer */
	CHECK_EQ(ftrace_set_filter(&tracer, NULL, 0, 1), 0);
	matrix();
	CHECK_EQ(ftrace_set_filter(&tracer, "dfunc", 5, 1), 0);
	rules();
	far_away();
	stress(flips);
	DONE();
}
