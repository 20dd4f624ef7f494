/*
 * Unregistering while threads come and go, with no signal left for the runtime (every
 * real-time signal has a handler, as in a Go program): the grace period must end.  A new
 * thread can be listed before it has published its counters; it is then read as soon as
 * it has, not judged from its (reused, stale) stack for ever.  alarm() fails a hang.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

static atomic_ulong hits;
static atomic_int stop;
static volatile int sink;

NOINLINE void work(int i) { sink += i; }

static CB void count(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
		     struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op; (void)fr;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

static void handler(int sig) { (void)sig; }

static void *short_lived(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++)
		work(i);
	return NULL;
}

/* threads that start and end all the time (glibc reuses their stacks) */
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t[4];
		int n = 0;

		for (int i = 0; i < 4; i++)
			if (!pthread_create(&t[n], NULL, short_lived, NULL))
				n++;
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	return NULL;
}

int main(void)
{
	static struct ftrace_ops ops = { .func = count };
	pthread_t c[2];

	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		signal(s, handler);
	alarm(60);	/* a hang ends the test (SIGALRM's default action) */
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)work, 0, 1), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&c[i], NULL, churn, NULL), 0);
	for (int round = 0; round < 300; round++) {
		CHECK_EQ(register_ftrace_function(&ops), 0);
		usleep(200);
		CHECK_EQ(unregister_ftrace_function(&ops), 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	CHECK(atomic_load(&hits) > 0);
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
