/* The thread filter: threads named with pthread_setname_np and prctl after they start, one
   left unnamed, and main.  Each calls leaf() a different number of times. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <ftrace_trace.h>

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }

static void calls(int n)
{
	ftrace_trace_marker("calls %d", n);	/* only in the threads recorded */
	for (int i = 0; i < n; i++)
		leaf(i);
}

static void *thr_a(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "alpha");
	calls(20);
	return NULL;
}

static void *thr_b(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "beta", 0, 0, 0);
	calls(30);
	return NULL;
}

static void *thr_c(void *arg)
{
	(void)arg;
	calls(40);
	return NULL;
}

int main(void)
{
	void *(*fn[3])(void *) = { thr_a, thr_b, thr_c };
	pthread_t th;

	calls(10);
	for (int i = 0; i < 3; i++) {	/* one after the other: names and counts stay apart */
		pthread_create(&th, NULL, fn[i], NULL);
		pthread_join(th, NULL);
	}
	printf("%ld\n", sink);
	return 0;
}
