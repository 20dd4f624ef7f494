// SPDX-License-Identifier: Apache-2.0
/*
 * patch_bench.c - how fast the live-patching engine switches sites, and what a site costs
 * per call before and after a switch.
 *
 *   patch_bench [NSITES [ROUNDS]]
 *
 * Prints "name value unit" lines:
 *   enable_all_ms / disable_all_ms   one batch switching NSITES sites nop <-> call (median)
 *   one_site_us                      one batch with a single site (median of 1000)
 *   call_ns_{nop_before,call,nop_after}, call_ratio_after_before
 *                                    one function: its site a nop before any patching, a
 *                                    call to an empty stub, a nop again after switching back;
 *                                    control_ns: a never-patched function measured
 *                                    interleaved with each (shows load from elsewhere);
 *                                    the ratios are normalised by it
 *   serialise_us                     one membarrier (or fallback) serialisation
 * The method in use (FTRT_POKE, FTRT_SYNC_CORES) is printed too.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/src/core/poke.h"
#include "bench_util.h"

#ifndef NFUNC
#define NFUNC 300000
#endif

extern unsigned char pb_base[];
extern void pb_stub(void);

static const unsigned char NOP5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static void mk(struct ftrt_poke *p, size_t i, int enable)
{
	unsigned char *s = pb_base + 16 * i;
	unsigned char call[5];
	int32_t rel = (int32_t)((uintptr_t)pb_stub - ((uintptr_t)s + 5));

	call[0] = 0xe8;
	memcpy(call + 1, &rel, 4);
	p->addr = s;
	p->len = 5;
	memcpy(p->old, enable ? NOP5 : call, 5);
	memcpy(p->new, enable ? call : NOP5, 5);
}

static void batch(struct ftrt_poke *p, size_t n)
{
	size_t bad;
	int err = ftrt_text_poke_batch(p, n, &bad);

	if (err) {
		fprintf(stderr, "patch_bench: batch of %zu failed: %d at %zu\n", n, err, bad);
		exit(1);
	}
}

typedef void (*fn_t)(void);

/* ns per call of function i (best of one run of 2M calls through a volatile pointer) */
static double per_call_once(size_t i)
{
	fn_t volatile f = (fn_t)(void *)(pb_base + 16 * i);
	double t0 = now_ns();
	long k;

	for (k = 0; k < 2000000; k++)
		f();
	return (now_ns() - t0) / 2000000;
}

/* Interleave measurements of a and b (same load for both); best of 9 each. */
static void per_call2(size_t a, size_t b, double *ta, double *tb)
{
	int r;

	*ta = *tb = 1e30;
	for (r = 0; r < 9; r++) {
		double x = per_call_once(a), y = per_call_once(b);

		if (x < *ta)
			*ta = x;
		if (y < *tb)
			*tb = y;
	}
}

/* A second thread, parked: batches then take the cross-modification path of a running
   program (int3, tail, head, each followed by a serialisation of every core). */
static void *parked(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* rounds of switching all n sites on, then off: ms per batch into te[], td[] */
static void switch_all(struct ftrt_poke *en, struct ftrt_poke *dis, size_t n, int rounds,
		       double *te, double *td)
{
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();

		batch(en, n);
		te[r] = (now_ns() - t0) / 1e6;
		t0 = now_ns();
		batch(dis, n);
		td[r] = (now_ns() - t0) / 1e6;
	}
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : NFUNC;
	int rounds = argc > 2 ? atoi(argv[2]) : 5, r;
	struct ftrt_poke *en, *dis, one[1];
	double *te, *td, t1[1000], ser[200], before, call, after, base[3];
	double te1[5], td1[5];
	pthread_t th;
	size_t i;

	if (n < 2 || n > NFUNC || rounds < 1) {
		fprintf(stderr, "usage: patch_bench [2..%d [rounds]]\n", NFUNC);
		return 2;
	}
	en = calloc(n, sizeof(*en));
	dis = calloc(n, sizeof(*dis));
	te = calloc(rounds, sizeof(*te));
	td = calloc(rounds, sizeof(*td));
	if (!en || !dis || !te || !td)
		return 1;
	for (i = 0; i < n; i++) {
		mk(&en[i], i, 1);
		mk(&dis[i], i, 0);
	}
	/*
	 * Function n (one more than the sites switched) is never patched: a load control,
	 * measured interleaved with function n-1 before patching, while its site calls the
	 * stub, and after switching it back.
	 */
	per_call2(n, n - 1, &base[0], &before);

	/* warm up: method choice, membarrier registration, handler installation */
	batch(&en[0], 1);
	batch(&dis[0], 1);
	/* one thread: the final bytes go in one pass (start-up patching in a constructor) */
	switch_all(en, dis, n, 5, te1, td1);
	if (pthread_create(&th, NULL, parked, NULL) != 0)
		return 1;
	for (r = 0; r < 200; r++) {
		double t0 = now_ns();

		ftrt_sync_cores();
		ser[r] = (now_ns() - t0) / 1e3;
	}
	switch_all(en, dis, n, rounds, te, td);
	for (r = 0; r < 1000; r++) {
		double t0;

		mk(one, (size_t)r * 7 % n, 1);
		t0 = now_ns();
		batch(one, 1);
		t1[r] = (now_ns() - t0) / 1e3;
		mk(one, (size_t)r * 7 % n, 0);
		batch(one, 1);
	}
	mk(one, n - 1, 1);
	batch(one, 1);
	per_call2(n, n - 1, &base[1], &call);
	mk(one, n - 1, 0);
	batch(one, 1);
	per_call2(n, n - 1, &base[2], &after);

	printf("method %s\n", ftrt_poke_method());
	printf("cores %s\n", ftrt_sync_cores_method());
	printf("sites %zu\n", n);	/* switched per batch */
	printf("enable_all_ms %.2f\n", median(te, rounds));
	printf("disable_all_ms %.2f\n", median(td, rounds));
	printf("enable_all_ms_one_thread %.2f\n", median(te1, 5));
	printf("disable_all_ms_one_thread %.2f\n", median(td1, 5));
	printf("one_site_us %.1f\n", median(t1, 1000));
	printf("serialise_us %.1f\n", median(ser, 200));
	printf("call_ns_nop_before %.2f\n", before);
	printf("call_ns_call %.2f\n", call);
	printf("call_ns_nop_after %.2f\n", after);
	/* normalised by the control measured at the same time */
	printf("call_ratio_after_before %.3f\n", (after / base[2]) / (before / base[0]));
	printf("call_ratio_call_before %.3f\n", (call / base[1]) / (before / base[0]));
	printf("control_ns_before %.2f\ncontrol_ns_call %.2f\ncontrol_ns_after %.2f\n",
	       base[0], base[1], base[2]);
	return 0;
}
