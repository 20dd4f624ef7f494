/*
 * Start-up cost: time for the runtime to find and read the call-site tables of every
 * loaded object (what its constructor does), with the sites of gen_sites.S (N generated
 * functions with an ftlink-format table) plus the program's own.
 * Output: "init_us T" (the constructor's scan in this fresh process), "sites N",
 * "startup_us best median" (forgetting and reading everything again, warm).  Usage: startup [runs] (0: only start and exit,
 * for whole-process timing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long ftrt_debug_reload(void);
extern unsigned long ftrt_init_ns;	/* the constructor's scan, in this process */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	double *t = calloc((size_t)runs, sizeof(double));
	long sites = 0;

	printf("init_us %.1f\n", ftrt_init_ns / 1e3);
	if (runs <= 0)
		return 0;

	for (int i = 0; i < runs; i++) {
		double t0 = now_us();

		sites = ftrt_debug_reload();
		t[i] = now_us() - t0;
		if (sites < 0) {
			fprintf(stderr, "startup: reload: %ld\n", sites);
			return 1;
		}
	}
	qsort(t, (size_t)runs, sizeof(double), cmp);
	printf("sites %ld\n", sites);
	printf("startup_us %.1f %.1f\n", t[0], t[runs / 2]);
	return 0;
}
