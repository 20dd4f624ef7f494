/*
 * pthread_cancel of a thread inside graphed frames: glibc's forced unwind stops at the
 * first hooked return address and ends the thread; the runtime closes the frames left
 * open as unwound when the thread exits. C cleanup handlers still run.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) void leaf(void) { sink++; }

__attribute__((noinline)) void waiter(void)
{
	for (;;) {
		leaf();
		usleep(1000);
		pthread_testcancel();
	}
}

__attribute__((noinline)) void mid(void)
{
	waiter();
	leaf();
}

static void cleanup(void *a)
{
	(void)a;
	printf("cleanup ran\n");
}

static void *body(void *a)
{
	(void)a;
	pthread_cleanup_push(cleanup, NULL);
	mid();
	pthread_cleanup_pop(0);
	return NULL;
}

int main(void)
{
	pthread_t t;
	void *r;

	pthread_create(&t, NULL, body, NULL);
	usleep(20000);
	pthread_cancel(t);
	pthread_join(t, &r);
	printf("joined: %s\n", r == PTHREAD_CANCELED ? "canceled" : "returned");
	leaf();
	return 0;
}
