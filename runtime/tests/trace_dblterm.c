/*
 * Ended by two terminating signals in a row (timeout(1) signals the child, then its process
 * group): three threads call work() until killed.  The second signal must not end the
 * process while the first one's handler writes the trace (it was left a .part).
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) void work(void) { __asm__ volatile(""); }

static void *spin(void *a)
{
	(void)a;
	for (;;)
		work();
	return NULL;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, spin, NULL);
	pthread_create(&t, NULL, spin, NULL);
	printf("ready\n");
	fflush(stdout);
	spin(NULL);
	return 0;
}
