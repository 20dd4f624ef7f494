/* Worker threads run traced calls while the main thread switches the tracer
   (function_graph <-> function <-> off) many times: nothing may crash, every
   hooked frame returns, and the workers' results are unchanged. */
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

#include <ftrace_trace.h>

static volatile int stop;

__attribute__((noinline)) long leaf(long i) { return i & 7; }
__attribute__((noinline)) long mid(long i) { return leaf(i) + leaf(i + 1); }
__attribute__((noinline)) long top(long i) { return mid(i) + mid(i + 2); }

static void *worker(void *arg)
{
	long sum = 0, n = 0;

	(void)arg;
	while (!stop) {
		sum += top(n);
		n++;
	}
	/* recompute untraced-equivalent result */
	long want = 0;
	for (long i = 0; i < n; i++)
		want += ((i & 7) + ((i + 1) & 7)) + (((i + 2) & 7) + ((i + 3) & 7));
	return (void *)(long)(sum == want);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	static const enum ftrace_tracer seq[] = { FTRACE_TRACER_FUNCTION_GRAPH, FTRACE_TRACER_FUNCTION,
						  FTRACE_TRACER_FUNCTION_GRAPH, FTRACE_TRACER_NOP };
	pthread_t th[3];
	int ok = 1, errs = 0;

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int r = 0; r < rounds; r++) {
		if (ftrace_trace_set_tracer(seq[r % 4]) != 0)
			errs++;
		/* a switch takes well under a millisecond: let the workers run in each phase */
		usleep(500);
	}
	stop = 1;
	for (int i = 0; i < 3; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		ok &= (long)ret == 1;
	}
	printf("ok=%d errors=%d\n", ok, errs);
	return 0;
}
