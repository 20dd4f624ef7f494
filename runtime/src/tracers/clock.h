/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace clock: the TSC when it is invariant, else CLOCK_MONOTONIC.
 *
 * ft_clock_read() is the only call on the hot path: one predictable branch and a
 * read of the cycle counter (ftrt_arch_cycles(), arch.h).
 */
#ifndef FTKIT_CLOCK_H
#define FTKIT_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "arch/arch.h"

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
	uint64_t cal_ns;	/* length of the interval ns_per_tick was measured over */
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
	if (__builtin_expect(ft_clock_source == FT_CLOCK_TSC, 1))
		return ftrt_arch_cycles();
	return ft_clock_mono_ns();
}

/*
 * Choose the source and calibrate provisionally (busy-waits FT_CLOCK_CAL_NS when the TSC
 * is used): within about 1 part in 10^4, enough for a trace cut short by SIGKILL.
 */
#define FT_CLOCK_CAL_NS 100000u
void ft_clock_init(int force_mono, struct ft_clock_ref *ref);

/*
 * Re-calibrate ns_per_tick over [ref, now] (async-signal-safe: clock_gettime and
 * the cycle counter only): the longer the interval, the better the figure, so this is done when the
 * trace is written (finalisation, snapshots). Leaves ref unchanged when the interval is
 * no longer than the one it was measured over.
 */
void ft_clock_recalibrate(struct ft_clock_ref *ref);

/* ns in clock ticks at ref's rate, at least 1 for a nonzero ns (trace.c touches no float). */
uint64_t ft_clock_ns_to_ticks(const struct ft_clock_ref *ref, uint64_t ns);

#endif
