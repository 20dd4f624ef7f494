// SPDX-License-Identifier: Apache-2.0
/*
 * api_bench.c - enabling and disabling every site of a program through the runtime's API
 * (register_ftrace_function / unregister_ftrace_function with an ops matching all), and
 * one site (ftrace_set_filter_ip + register, unregister).  Linked with libftrt.a and
 * bench/runtime/c/gen_sites.S (NSITES generated "nop5; ret" functions with an
 * ftlink-format __mcount_loc table).  Baseline in the same run: the live-patching engine
 * alone (ftrt_text_poke_batch) switching the same sites nop <-> call, i.e. the bare cost
 * of the cross-modification that every API call includes.
 *
 *   api_bench [ROUNDS]
 *
 * Prints "name median min" lines (ms or us): api_enable_ms, api_disable_ms,
 * engine_enable_ms, engine_disable_ms, api_one_enable_us, api_one_disable_us,
 * engine_one_us, plus "sites N" and "method M".
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ftrace.h>
#include "../../runtime/src/core/poke.h"
#include "bench_util.h"

static const unsigned char NOP5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static unsigned long *sites;
static size_t nsites;
static volatile unsigned long hits;

static void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

static void stub(void)
{
}

static void report(const char *name, double *v, int n, double unit)
{
	double med = median(v, n);

	printf("%s %.3f %.3f\n", name, med / unit, v[0] / unit);
}

static int collect(const struct ftrace_func_info *fi, void *data)
{
	(void)data;
	/* gen_sites.S's sites only (the generated functions have no symbols) */
	if (fi->len == 5 && !fi->name[0])
		sites[nsites++] = fi->ip;
	return 0;
}

static void die(const char *what, long err)
{
	fprintf(stderr, "api_bench: %s: %ld\n", what, err);
	exit(1);
}

/* The sites' first bytes: all calls (1) or all nops (0)?  Sampled. */
static void check_all(int call)
{
	size_t i, step = nsites / 97 + 1;

	for (i = 0; i < nsites; i += step) {
		const unsigned char *s = (const unsigned char *)sites[i];

		if (call ? s[0] != 0xe8 : memcmp(s, NOP5, 5))
			die(call ? "site not enabled" : "site not disabled", (long)i);
	}
}

static void engine_batch(struct ftrt_poke *p, size_t n, int enable)
{
	size_t i, bad;
	int err;

	for (i = 0; i < n; i++) {
		unsigned char call[5];
		int32_t rel = (int32_t)((uintptr_t)stub - ((uintptr_t)p[i].addr + 5));

		call[0] = 0xe8;
		memcpy(call + 1, &rel, 4);
		memcpy(p[i].old, enable ? NOP5 : call, 5);
		memcpy(p[i].new, enable ? call : NOP5, 5);
	}
	err = ftrt_text_poke_batch(p, n, &bad);
	if (err)
		die("engine batch", err);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, ones = rounds * 200, i;
	static struct ftrace_ops all = { .func = cb }, one = { .func = cb };
	double *ae, *ad, *ee, *ed, *oe, *od, *eo, t0, t1, t2;
	struct ftrace_stats st;
	struct ftrt_poke *pk;
	size_t k;
	long err;

	ftrace_get_stats(&st);
	sites = calloc(st.nr_sites + 1, sizeof(*sites));
	pk = calloc(st.nr_sites + 1, sizeof(*pk));
	ae = calloc((size_t)rounds, sizeof(double));
	ad = calloc((size_t)rounds, sizeof(double));
	ee = calloc((size_t)rounds, sizeof(double));
	ed = calloc((size_t)rounds, sizeof(double));
	oe = calloc((size_t)ones, sizeof(double));
	od = calloc((size_t)ones, sizeof(double));
	eo = calloc((size_t)ones, sizeof(double));
	if (!sites || !pk || !ae || !ad || !ee || !ed || !oe || !od || !eo || rounds < 1)
		die("setup", -1);
	if ((err = ftrace_for_each_function(collect, NULL)))
		die("listing", err);
	for (k = 0; k < nsites; k++) {
		pk[k].addr = (void *)sites[k];
		pk[k].len = 5;
	}
	if (!nsites)
		die("no generated sites", 0);
	printf("sites %zu\n", nsites);

	for (i = 0; i < rounds; i++) {
		t0 = now_ns();
		if ((err = register_ftrace_function(&all)))
			die("register all", err);
		t1 = now_ns();
		check_all(1);
		hits = 0;
		((void (*)(void))sites[nsites / 2])();
		if (hits != 1)
			die("callback not called", (long)hits);
		t2 = now_ns();
		if ((err = unregister_ftrace_function(&all)))
			die("unregister all", err);
		ae[i] = t1 - t0;
		ad[i] = now_ns() - t2;
		check_all(0);
		/* the engine alone, same sites */
		t0 = now_ns();
		engine_batch(pk, nsites, 1);
		ee[i] = now_ns() - t0;
		check_all(1);
		t0 = now_ns();
		engine_batch(pk, nsites, 0);
		ed[i] = now_ns() - t0;
		check_all(0);
	}
	for (i = 0; i < ones; i++) {
		unsigned long ip = sites[(size_t)i * 7919 % nsites];

		t0 = now_ns();
		if ((err = ftrace_set_filter_ip(&one, ip, 0, 1)) || (err = register_ftrace_function(&one)))
			die("register one", err);
		t1 = now_ns();
		if ((err = unregister_ftrace_function(&one)))
			die("unregister one", err);
		t2 = now_ns();
		oe[i] = t1 - t0;
		od[i] = t2 - t1;
		t0 = now_ns();
		engine_batch(pk + (size_t)i * 7919 % nsites, 1, 1);
		engine_batch(pk + (size_t)i * 7919 % nsites, 1, 0);
		eo[i] = (now_ns() - t0) / 2;
	}
	report("api_enable_ms", ae, rounds, 1e6);
	report("api_disable_ms", ad, rounds, 1e6);
	report("engine_enable_ms", ee, rounds, 1e6);
	report("engine_disable_ms", ed, rounds, 1e6);
	report("api_one_enable_us", oe, ones, 1e3);
	report("api_one_disable_us", od, ones, 1e3);
	report("engine_one_us", eo, ones, 1e3);
	printf("method %s\n", ftrt_poke_method());
	return 0;
}
