// SPDX-License-Identifier: Apache-2.0
/*
 * Trace clock selection and TSC calibration.
 *
 * The TSC (the cycle counter, arch.h) is used when it is invariant (constant rate in
 * all P/C states: ftrt_arch_cycles_constant()). It is calibrated against CLOCK_MONOTONIC
 * over FT_CLOCK_CAL_NS at start-up (a process's start-up cost: keep it short) and
 * again over the whole run when the trace file is written.
 */
#include "clock.h"

int ft_clock_source = FT_CLOCK_MONO;

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One (ticks, monotonic) pair taken as close together as we can manage. */
static void sample_pair(uint64_t *ticks, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = ft_clock_read();
		uint64_t m = ft_clock_mono_ns();
		uint64_t t1 = ft_clock_read();

		if (t1 - t0 < best) {
			best = t1 - t0;
			*ticks = t0 + (t1 - t0) / 2;
			*mono = m;
		}
	}
}

void ft_clock_init(int force_mono, struct ft_clock_ref *ref)
{
	ft_clock_source = (!force_mono && ftrt_arch_cycles_constant()) ? FT_CLOCK_TSC : FT_CLOCK_MONO;
	ref->source = ft_clock_source;
	ref->ref_real_ns = realtime_ns();
	if (ft_clock_source == FT_CLOCK_MONO) {
		ref->ns_per_tick = 1.0;
		ref->ref_mono_ns = ft_clock_mono_ns();
		ref->ref_ticks = ref->ref_mono_ns;
		ref->tsc_hz = 0;
		return;
	}
	sample_pair(&ref->ref_ticks, &ref->ref_mono_ns);
	uint64_t t, m;
	do
		sample_pair(&t, &m);
	while (m - ref->ref_mono_ns < FT_CLOCK_CAL_NS || t <= ref->ref_ticks);
	ref->ns_per_tick = (double)(m - ref->ref_mono_ns) / (double)(t - ref->ref_ticks);
	ref->tsc_hz = (uint64_t)(1e9 / ref->ns_per_tick);
	ref->cal_ns = m - ref->ref_mono_ns;
}

void ft_clock_recalibrate(struct ft_clock_ref *ref)
{
	uint64_t t, m;

	if (ref->source != FT_CLOCK_TSC)
		return;
	sample_pair(&t, &m);
	if (m - ref->ref_mono_ns <= ref->cal_ns || t <= ref->ref_ticks)
		return;
	ref->ns_per_tick = (double)(m - ref->ref_mono_ns) / (double)(t - ref->ref_ticks);
	ref->tsc_hz = (uint64_t)(1e9 / ref->ns_per_tick);
	ref->cal_ns = m - ref->ref_mono_ns;
}

uint64_t ft_clock_ns_to_ticks(const struct ft_clock_ref *ref, uint64_t ns)
{
	uint64_t ticks = ref->ns_per_tick > 0 ? (uint64_t)((double)ns / ref->ns_per_tick) : ns;

	return ns && !ticks ? 1 : ticks;
}
