/*
 * Shared libraries: one linked at start-up, one loaded with dlopen after ops are
 * registered (its sites are enabled for them), unloaded (its records dropped), loaded
 * again with plain dlopen (hooked: traced at once), reloaded at the same address after a
 * plain dlclose, and loaded by a library's dlopen call (noticed at the next API call).
 */
#include <dlfcn.h>
#include <errno.h>
#include "check.h"

int needed_func(int x);
void *needed_dlopen(const char *path);

static volatile unsigned long last_ip;
static volatile long calls;

static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)p; (void)op; (void)r;
	last_ip = ip;
	calls++;
}

static volatile long fcalls;
static CB void fcb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	fcalls++;
}

static CB unsigned long site_of(void *fn)
{
	struct ftrace_func_info fi = { .name = "", .object = "" };

	return ftrace_lookup_function((unsigned long)fn, &fi) ? 0 : fi.ip;
}

/* Call fn through a pointer and check that exactly that call was reported. */
static CB void traced_call(int (*fn)(int), int arg, int want)
{
	long before = calls;

	CHECK_EQ(fn(arg), want);
	CHECK_EQ(calls - before, 1);
	CHECK_EQ(last_ip, site_of((void *)fn));
}

int main(int argc, char **argv)
{
	static struct ftrace_ops global = { .func = cb };
	static struct ftrace_ops f = { .func = fcb };
	struct ftrace_func_info fi = { .name = "", .object = "" };
	struct ftrace_stats st0, st;
	int (*volatile fn)(int);
	void *h;

	if (argc < 2) {
		fprintf(stderr, "usage: dlopen path/to/libdyn.so\n");
		return 2;
	}
	/* The DT_NEEDED library's sites are known and named. */
	CHECK_EQ(ftrace_lookup_function((unsigned long)needed_func, &fi), 0);
	CHECK(!strcmp(fi.name, "needed_func"));
	CHECK(strstr(fi.object, "libneeded.so") != NULL);
	ftrace_get_stats(&st0);

	CHECK_EQ(register_ftrace_function(&global), 0);
	CHECK(calls_tramp_of(needed_func, &global));
	fn = needed_func;
	traced_call(fn, 2, 42);

	/* dlopen after registering: the new sites follow the registered ops. */
	h = ftrace_dlopen(argv[1], RTLD_NOW);
	CHECK(h != NULL);
	fn = (int (*)(int))dlsym(h, "dyn_func");
	CHECK(fn != NULL);
	CHECK(calls_tramp_of((void *)fn, &global));
	traced_call(fn, 1, 51);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_sites, st0.nr_sites + 3);
	/* named by its global symbol, not gcc's local alias at the same address */
	CHECK_EQ(ftrace_lookup_function((unsigned long)dlsym(h, "dyn_rec"), &fi), 0);
	CHECK(fi.name && !strcmp(fi.name, "dyn_rec"));

	/* Names of the new object are filterable. */
	CHECK_EQ(ftrace_set_filter(&f, "dyn_f*", 6, 1), 0);
	CHECK_EQ(register_ftrace_function(&f), 0);
	CHECK(CALLS_SET(fn, 0, &f, &global));
	CHECK(calls_tramp_of(dlsym(h, "dyn_other"), &global));
	traced_call(fn, 1, 51);
	CHECK_EQ(fcalls, 1);
	CHECK_EQ(unregister_ftrace_function(&f), 0);

	/* Unloading drops its records. */
	{
		unsigned long old = (unsigned long)fn;

		CHECK_EQ(ftrace_dlclose(h), 0);
		CHECK_EQ(ftrace_lookup_function(old, &fi), -ENODEV);
		ftrace_get_stats(&st);
		CHECK_EQ(st.nr_sites, st0.nr_sites);
	}

	/* Plain dlopen from the executable: hooked, traced at once (no API call before). */
	h = dlopen(argv[1], RTLD_NOW);
	CHECK(h != NULL);
	fn = (int (*)(int))dlsym(h, "dyn_func");
	traced_call(fn, 3, 53);
	CHECK(calls_tramp_of((void *)fn, &global));

	/* Plain dlclose and dlopen again (usually at the same address). */
	CHECK_EQ(dlclose(h), 0);
	h = dlopen(argv[1], RTLD_NOW);
	CHECK(h != NULL);
	fn = (int (*)(int))dlsym(h, "dyn_func");
	traced_call(fn, 4, 54);
	CHECK(calls_tramp_of((void *)fn, &global));
	CHECK_EQ(dlclose(h), 0);

	/*
	 * dlopen called by a library: passed to glibc untouched (it resolves paths from its
	 * caller), picked up at the next API call.
	 */
	h = needed_dlopen(argv[1]);
	CHECK(h != NULL);
	fn = (int (*)(int))dlsym(h, "dyn_func");
	CHECK(calls_tramp_of((void *)fn, &global));
	traced_call(fn, 4, 54);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_sites, st0.nr_sites + 3);
	CHECK_EQ(st.nr_refused, 0);

	CHECK_EQ(unregister_ftrace_function(&global), 0);
	CHECK(is_nop((void *)fn) && is_nop(needed_func));
	CHECK_EQ(fn(0), 50);
	CHECK_EQ(dlclose(h), 0);
	DONE();
}
