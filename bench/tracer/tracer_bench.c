/*
 * Workloads for the tracer benchmarks (bench/tracer_test.go). Prints the time of the
 * measured loop only (start-up and the tracers' write-out are outside it):
 *   calls <function calls in the loop> ns <nanoseconds> check <result>
 * fib N REPS: fib(N) REPS times (tiny functions: the worst case per call);
 * msort N REPS: merge sort of N pseudo-random ints REPS times (recursive, larger bodies);
 * tsc2 N REPS: N x REPS pairs of rdtsc, the least a graph tracer reading the TSC at entry
 * and exit pays per call (no function called: "calls" counts the pairs).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#ifdef __clang__
__attribute__((noinline, disable_tail_calls))
#else
__attribute__((noinline, optimize("no-optimize-sibling-calls")))
#endif
int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) void merge(int *a, int *tmp, long lo, long mid, long hi)
{
	long i = lo, j = mid, k = lo;

	while (i < mid && j < hi)
		tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < hi)
		tmp[k++] = a[j++];
	memcpy(a + lo, tmp + lo, (size_t)(hi - lo) * sizeof(int));
}

__attribute__((noinline)) void msort(int *a, int *tmp, long lo, long hi)
{
	if (hi - lo < 2)
		return;
	long mid = lo + (hi - lo) / 2;

	msort(a, tmp, lo, mid);
	msort(a, tmp, mid, hi);
	merge(a, tmp, lo, mid, hi);
}

#ifdef BENCH_XRAY
/* LLVM XRay FDR mode, set up through its API (the env-only set-up does not record here). */
int __xray_log_select_mode(const char *mode);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_patch(void);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);

static void xray_start(void)
{
	const char *cfg = getenv("BENCH_XRAY_FDR");

	if (__xray_log_select_mode("xray-fdr") != 0 ||
	    __xray_log_init_mode("xray-fdr", cfg ? cfg : "") != 2 || __xray_patch() != 1) {
		fprintf(stderr, "xray fdr set-up failed\n");
		exit(1);
	}
}

static void xray_stop(void)
{
	__xray_log_finalize();
	__xray_log_flushLog();
}
#else
static void xray_start(void) {}
static void xray_stop(void) {}
#endif

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* calls of msort and merge for n elements (computed without tracing anything) */
static long msort_calls(long n)
{
	return n < 2 ? 1 : 2 + msort_calls(n / 2) + msort_calls(n - n / 2);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s fib|msort|tsc2 N REPS\n", argv[0]);
		return 2;
	}
	long n = atol(argv[2]), reps = atol(argv[3]), calls, t0, t1, check = 0;

	xray_start();

	if (!strcmp(argv[1], "fib")) {
		long a = 0, b = 1;

		for (long i = 0; i < n + 1; i++) {
			long c = a + b;
			a = b;
			b = c;
		}
		calls = (2 * a - 1) * reps;	/* calls of fib(n) = 2 fib(n+1) - 1 */
		t0 = now_ns();
		for (long r = 0; r < reps; r++)
			check += fib((int)n);
		t1 = now_ns();
	} else if (!strcmp(argv[1], "tsc2")) {
		unsigned long long sum = 0;

		calls = n * reps;
		t0 = now_ns();
		for (long i = 0; i < calls; i++) {
			sum += __rdtsc();
			sum += __rdtsc();
		}
		t1 = now_ns();
		check = (long)(sum & 1);
	} else {
		int *a = malloc((size_t)n * sizeof(int)), *tmp = malloc((size_t)n * sizeof(int));
		unsigned x = 12345;

		calls = (msort_calls(n) - 0) * reps;
		t0 = now_ns();
		for (long r = 0; r < reps; r++) {
			for (long i = 0; i < n; i++)
				a[i] = (int)(x = x * 1103515245u + 12345u) >> 8;
			msort(a, tmp, 0, n);
			check += a[n / 2];
		}
		t1 = now_ns();
	}
	xray_stop();
	printf("calls %ld ns %ld check %ld\n", calls, t1 - t0, check);
	return 0;
}
