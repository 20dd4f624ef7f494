// SPDX-License-Identifier: Apache-2.0
/*
 * Time of a gapless modify_ftrace_direct: the direct call of 1 and of N sites (gen_sites.S,
 * "nop5; ret" functions) switched between two direct trampolines, while a second thread
 * runs (so every batch takes the patching protocol's multi-thread path, as in a real
 * program), alternately, `runs` times each.
 * Output: "modify_1_us best median", "modify_N_us best median" (N as built), "sites N".
 * Usage: directmod [runs]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftrace.h>

#include "../../patch/bench_util.h"

#ifndef NSITES
#define NSITES 10000
#endif

extern char gen_first[];
void __fentry__(void);

static atomic_int stop;

static void *spinner(void *arg)
{
	void (*volatile f)(void) = (void (*)(void))(void *)gen_first;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		f();	/* site 0: the direct trampoline, old or new */
	return NULL;
}

static void need(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "directmod: %s: %d\n", what, ret);
		exit(1);
	}
}

/* best and median microseconds of runs modifies of ops between ftrace_stub and __fentry__ */
static void measure(const char *name, struct ftrace_ops *ops, int runs)
{
	double *t = calloc((size_t)runs, sizeof(double));
	unsigned long cur = (unsigned long)ftrace_stub;

	need(register_ftrace_direct(ops, cur), "register");
	for (int i = 0; i < runs; i++) {
		unsigned long next = cur == (unsigned long)ftrace_stub ?
			(unsigned long)__fentry__ : (unsigned long)ftrace_stub;
		double t0 = now_ns();

		need(modify_ftrace_direct(ops, next), "modify");
		t[i] = (now_ns() - t0) / 1e3;
		cur = next;
	}
	need(unregister_ftrace_direct(ops, cur, 1), "unregister");
	qsort(t, (size_t)runs, sizeof(double), dcmp);
	printf("%s %.1f %.1f\n", name, t[0], t[runs / 2]);
	free(t);
}

int main(int argc, char **argv)
{
	static struct ftrace_ops one, all;
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	char name[32];
	pthread_t th;

	need(ftrace_set_filter_ip(&one, (unsigned long)gen_first, 0, 1), "filter one");
	for (long i = 0; i < NSITES; i++)
		need(ftrace_set_filter_ip(&all, (unsigned long)gen_first + 16 * i, 0, 0), "filter all");
	need(pthread_create(&th, NULL, spinner, NULL), "thread");
	measure("modify_1_us", &one, runs);
	snprintf(name, sizeof(name), "modify_%d_us", NSITES);
	measure(name, &all, runs);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("sites %d\n", NSITES);
	return 0;
}
