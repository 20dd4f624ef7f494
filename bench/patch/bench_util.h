// SPDX-License-Identifier: Apache-2.0
/*
 * bench_util.h - timing and statistics shared by the benchmark programs (bench/patch,
 * bench/runtime/c).  Never instrumented (programs built with -pg -mfentry include it).
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline __attribute__((no_instrument_function)) double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline __attribute__((no_instrument_function)) int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v (v[0] is then the minimum) and returns its median. */
static inline __attribute__((no_instrument_function)) double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return v[n / 2];
}

#endif
