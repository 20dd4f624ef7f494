/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace clock: the TSC when it is invariant, else CLOCK_MONOTONIC.
 *
 * ft_clock_read() is the only call on the hot path: one predictable branch and a
 * plain rdtsc (no lfence: events of one thread are ordered by program order, and
 * the ~20 cycles a serialising read would add per event buy nothing here).
 */
#ifndef FTKIT_CLOCK_H
#define FTKIT_CLOCK_H

#include <stdint.h>
#include <time.h>

enum ft_clock_source {
	FT_CLOCK_TSC = 1,
	FT_CLOCK_MONO = 2,
};

struct ft_clock_ref {
	int source;		/* enum ft_clock_source */
	double ns_per_tick;
	uint64_t ref_ticks;	/* a clock reading ...                   */
	uint64_t ref_mono_ns;	/* ... and CLOCK_MONOTONIC at that time  */
	uint64_t ref_real_ns;	/* ... and CLOCK_REALTIME at that time   */
	uint64_t tsc_hz;	/* 0 when unknown / not the TSC          */
};

extern int ft_clock_source;

static inline uint64_t ft_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ft_clock_read(void)
{
	if (__builtin_expect(ft_clock_source == FT_CLOCK_TSC, 1)) {
		uint32_t lo, hi;

		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
	return ft_clock_mono_ns();
}

/* Choose the source and calibrate (busy-waits ~1 ms when the TSC is used). */
void ft_clock_init(int force_mono, struct ft_clock_ref *ref);

/*
 * Re-calibrate ns_per_tick over [ref, now] (async-signal-safe: clock_gettime and
 * rdtsc only). Leaves ref unchanged when the interval is too short to improve it.
 */
void ft_clock_recalibrate(struct ft_clock_ref *ref);

#endif
