/* Known durations for the clock tests: nap() sleeps 20 ms, three times, between
   short traced calls. */
#include <stdio.h>
#include <time.h>

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void nap(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	leaf(1);
	while (nanosleep(&ts, &ts) != 0)
		;
	leaf(2);
}

int main(void)
{
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 100; j++)
			leaf(j);
		nap();
	}
	printf("slept 3 times\n");
	return 0;
}
