/*
 * Snapshots while a thread records as fast as it can (TestTracerSnapshotRace): the
 * worker flushes its staging buffer many times during each snapshot's copy of the file.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <ftrace_trace.h>

volatile long sink;
static volatile int stop;

__attribute__((noinline)) void leaf(long i) { sink += i; }

static void *worker(void *a)
{
	(void)a;
	for (long i = 0; !stop; i++)
		leaf(i);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec ms = { 0, 10 * 1000 * 1000 };
	pthread_t t;
	int n = argc > 1 ? atoi(argv[1]) : 4, bad = 0;

	pthread_create(&t, NULL, worker, NULL);
	nanosleep(&ms, NULL);
	for (int i = 1; i <= n; i++) {
		char path[64], out[4096];

		snprintf(path, sizeof(path), "snap.%d", i);
		if (ftrace_trace_snapshot(path, out, sizeof(out)) != 0)
			bad++;
		nanosleep(&ms, NULL);
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("snapshots %d failed %d\n", n, bad);
	return 0;
}
