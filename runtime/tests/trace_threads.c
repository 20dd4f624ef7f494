/* Threads: each calls work() a known number of times; one leaves with pthread_exit
   from deep inside traced frames. With SNAP=path set, main writes a snapshot there once
   the threads are joined. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <ftrace_trace.h>

volatile long sink;

__attribute__((noinline)) void work(long i) { sink += i; }
__attribute__((noinline)) void deep3(void) { work(3); pthread_exit((void *)7); }
__attribute__((noinline)) void deep2(void) { deep3(); work(-1); }
__attribute__((noinline)) void deep1(void) { deep2(); work(-1); }

static void *worker(void *arg)
{
	long id = (long)arg;
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", id);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < 1000 * (id + 1); i++)
		work(i);
	if (id == 0)
		deep1();
	return NULL;
}

int main(void)
{
	pthread_t th[4];
	void *ret;
	long sum = 0;

	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &ret);
		sum += (long)ret;
	}
	if (getenv("SNAP")) {
		char out[4096];
		int err;

		/* renamed while it runs: the snapshot names it as it is named now */
		pthread_setname_np(pthread_self(), "snapper");
		err = ftrace_trace_snapshot(getenv("SNAP"), out, sizeof(out));

		if (err)
			printf("snapshot: %d\n", err);
	}
	printf("ret=%ld\n", sum);
	return 0;
}
