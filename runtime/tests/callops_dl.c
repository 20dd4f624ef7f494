/*
 * CALL_OPS sites of a library loaded and unloaded again and again (argv[1], built from the
 * LIB part with the CALL_OPS flags) while an ops traces every function: each load's calls
 * are counted exactly, and the cells of an unloaded library are released (the count of
 * cells does not grow with the loads).  Prints "cells N" per load and "ok".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <ftrace.h>

#ifdef LIB
#define F(n) __attribute__((noinline)) int dl_f##n(int x) { __asm__ volatile(""); return x + n; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7)
#else
long ftrt_debug_cells(void);

static long hits;
static ftrace_notrace void count(unsigned long ip, unsigned long p, struct ftrace_ops *op,
				 struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

int main(int argc, char **argv)
{
	static struct ftrace_ops ops = { .func = count };
	long first = -1;
	int fails = 0;

	if (argc < 2 || register_ftrace_function(&ops))
		return 2;
	for (int round = 0; round < 20; round++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		char name[16];
		long cells;

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		hits = 0;
		for (int i = 0; i < 8; i++) {
			int (*f)(int);

			snprintf(name, sizeof(name), "dl_f%d", i);
			f = (int (*)(int))dlsym(h, name);
			if (!f || f(1) != 1 + i)
				fails++;
		}
		if (hits != 8) {
			printf("round %d: %ld calls counted, want 8\n", round, hits);
			fails++;
		}
		cells = ftrt_debug_cells();
		printf("cells %ld\n", cells);
		if (first < 0)
			first = cells;
		else if (cells != first) {
			printf("round %d: %ld cells, %ld after the first load\n", round, cells, first);
			fails++;
		}
		dlclose(h);
	}
	unregister_ftrace_function(&ops);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}
#endif
