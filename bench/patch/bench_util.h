// SPDX-License-Identifier: Apache-2.0
/* bench_util.h - timing and statistics shared by the patching benchmark programs. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v (v[0] is then the minimum) and returns its median. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	return v[n / 2];
}

#endif
