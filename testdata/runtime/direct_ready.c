/*
 * The ready direct trampolines: ftrace_direct_count (exact per-site counts from several
 * threads, arguments of every kind intact) and ftrace_direct_fexit clones (entry sees and
 * may change the arguments, exit sees them and the return value; stack arguments, vector
 * arguments, two-register and vector results, recursion), alone and sharing a site with a
 * tracer, switched between each other with modify_ftrace_direct, and freed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include "check.h"

struct pair { long a, b; };

NOINLINE long f8(long a, long b, long c, long d, long e, long f, long g, long h)
{
	__asm__ volatile("");
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
NOINLINE double fmixd(double x, long n, float y, double z) { __asm__ volatile(""); return x * n + y - z; }
NOINLINE struct pair fpair(long a, long b) { struct pair p = { a * 2, b * 3 }; __asm__ volatile(""); return p; }
NOINLINE double vsum(int n, ...)
{
	va_list ap;
	double s = 0;

	va_start(ap, n);
	while (n--)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}
long fib(long n);
static long (*volatile p_fib)(long) = fib;
/* through the pointer: gcc turns no call into a loop */
NOINLINE long fib(long n) { return n < 2 ? n : p_fib(n - 1) + p_fib(n - 2); }
NOINLINE long untouched(long x) { __asm__ volatile(""); return x + 1; }

static long (*volatile p_f8)(long, long, long, long, long, long, long, long) = f8;
static double (*volatile p_fmixd)(double, long, float, double) = fmixd;
static struct pair (*volatile p_fpair)(long, long) = fpair;
static double (*volatile p_vsum)(int, ...) = vsum;
static long (*volatile p_untouched)(long) = untouched;

static CB unsigned long site_of(void *fn)
{
	struct ftrace_func_info fi;

	return ftrace_lookup_function((unsigned long)fn, &fi) ? 0 : fi.ip;
}

/* ---- fexit callbacks ------------------------------------------------------------------------ */

static long entries, exits, bad;
static unsigned long last_args[6], last_ret, f8_site, fpair_site, fib_site;
static long fib_depth, fib_max_depth;

static CB void fx_entry(unsigned long ip, unsigned long parent, unsigned long *args, void *data)
{
	(void)parent;
	if (data != &entries)
		bad++;
	__atomic_fetch_add(&entries, 1, __ATOMIC_RELAXED);
	if (ip == f8_site && args[0] == 1000)
		args[0] = 2000;	/* entry may change an argument */
	if (ip == fib_site && ++fib_depth > fib_max_depth)
		fib_max_depth = fib_depth;
	memcpy(last_args, args, sizeof(last_args));
}

static CB void fx_exit(unsigned long ip, unsigned long parent, unsigned long *args,
		       unsigned long ret, void *data)
{
	(void)parent;
	(void)args;
	if (data != &entries)
		bad++;
	__atomic_fetch_add(&exits, 1, __ATOMIC_RELAXED);
	if (ip == fib_site)
		fib_depth--;
	last_ret = ret;
}

static long tcount;
static CB void tracer_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; tcount++; }

static struct ftrace_ops direct, tracer = { .func = tracer_cb };

/* Every kind of argument and result through whatever the sites call now. */
static CB void call_all(void)
{
	struct pair p;

	CHECK_EQ(p_f8(1, 2, 3, 4, 5, 6, 7, 8), 204);
	CHECK(p_fmixd(1.5, 4, 0.25f, 2.0) == 4.25);
	p = p_fpair(5, 7);
	CHECK_EQ(p.a, 10);
	CHECK_EQ(p.b, 21);
	CHECK(p_vsum(3, 1.0, 2.5, 4.0) == 7.5);
	CHECK_EQ(p_fib(10), 55);
}

static void *thread_calls(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		call_all();
	return NULL;
}

int main(void)
{
	static const char filt[] = "f8 fmixd fpair vsum fib";
	pthread_t th[4];
	unsigned long fx, fx2;
	int i;

	f8_site = site_of(f8);
	fpair_site = site_of(fpair);
	fib_site = site_of(fib);
	CHECK_EQ(ftrace_set_filter(&direct, filt, (int)strlen(filt), 1), 0);

	/* Counting: exact per site from 4 threads and main. */
	CHECK_EQ(register_ftrace_direct(&direct, (unsigned long)ftrace_direct_count), 0);
	CHECK(decode((void *)f8).target == (uintptr_t)ftrace_direct_count);
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, thread_calls, NULL), 0);
	call_all();
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(p_untouched(1), 2);
	CHECK_EQ(ftrace_direct_count_read((unsigned long)f8), 4001);
	CHECK_EQ(ftrace_direct_count_read(site_of(fmixd)), 4001);
	CHECK_EQ(ftrace_direct_count_read((unsigned long)fpair), 4001);
	CHECK_EQ(ftrace_direct_count_read((unsigned long)vsum), 4001);
	CHECK_EQ(ftrace_direct_count_read((unsigned long)fib), 4001 * 177);	/* calls of fib(10) */
	CHECK_EQ(ftrace_direct_count_read((unsigned long)untouched), 0);
	CHECK_EQ(ftrace_direct_count_read(0), 0);

	/* Switch to an entry/exit pair. */
	fx = ftrace_direct_fexit_create(fx_entry, fx_exit, &entries);
	CHECK(fx != 0);
	CHECK_EQ(ftrace_direct_fexit_create(NULL, fx_exit, NULL), 0);
	CHECK_EQ(modify_ftrace_direct(&direct, fx), 0);
	CHECK(decode((void *)f8).target == fx);
	CHECK_EQ(p_f8(1, 2, 3, 4, 5, 6, 7, 8), 204);
	CHECK_EQ(entries, 1);
	CHECK_EQ(exits, 1);
	CHECK_EQ(last_args[0], 1);
	CHECK_EQ(last_args[5], 6);
	CHECK_EQ(last_ret, 204);
	CHECK_EQ(p_f8(1000, 0, 0, 0, 0, 0, 0, 1), 2008);	/* entry changed a */
	CHECK_EQ(last_ret, 2008);
	CHECK_EQ(p_fpair(5, 7).b, 21);
	CHECK_EQ(last_ret, 10);	/* rax of the pair */
	CHECK_EQ(p_fib(12), 144);
	CHECK_EQ(fib_depth, 0);
	CHECK_EQ(fib_max_depth, 12);
	entries = exits = 0;
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, thread_calls, NULL), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(entries, 4000 * (4 + 177));
	CHECK_EQ(exits, entries);

	/* Shared with a tracer: the regs trampoline runs the tracer, then enters the clone. */
	CHECK_EQ(ftrace_set_filter(&tracer, "f8", 2, 1), 0);
	CHECK_EQ(register_ftrace_function(&tracer), 0);
	entries = exits = 0;
	CHECK(CALLS_SET(f8, 1, &tracer, &direct));
	CHECK_EQ(p_f8(1, 2, 3, 4, 5, 6, 7, 8), 204);
	CHECK_EQ(tcount, 1);
	CHECK_EQ(entries, 1);
	CHECK_EQ(exits, 1);
	CHECK_EQ(ftrace_direct_fexit_free(fx), -EBUSY);	/* in use */
	/* to a second clone and back to counting while shared */
	fx2 = ftrace_direct_fexit_create(fx_entry, fx_exit, &entries);
	CHECK_EQ(modify_ftrace_direct(&direct, fx2), 0);
	CHECK_EQ(ftrace_direct_fexit_free(fx), 0);
	CHECK_EQ(ftrace_direct_fexit_free(fx), -EINVAL);
	CHECK_EQ(p_f8(1, 2, 3, 4, 5, 6, 7, 8), 204);
	CHECK_EQ(entries, 2);
	CHECK_EQ(modify_ftrace_direct(&direct, (unsigned long)ftrace_direct_count), 0);
	CHECK_EQ(p_f8(1, 2, 3, 4, 5, 6, 7, 8), 204);
	CHECK_EQ(entries, 2);
	CHECK_EQ(tcount, 3);
	CHECK_EQ(ftrace_direct_count_read((unsigned long)f8), 4002);
	CHECK_EQ(unregister_ftrace_function(&tracer), 0);
	CHECK_EQ(unregister_ftrace_direct(&direct, (unsigned long)ftrace_direct_count, 1), 0);
	CHECK_EQ(ftrace_direct_fexit_free(fx2), 0);
	CHECK(is_nop((void *)f8) && is_nop((void *)fib));
	call_all();
	CHECK_EQ(ftrace_direct_count_read((unsigned long)f8), 4002);
	CHECK_EQ(bad, 0);
	DONE();
}
