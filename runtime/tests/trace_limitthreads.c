// SPDX-License-Identifier: Apache-2.0
/*
 * Three threads making tight calls for argv[1] seconds: with FTRACE_NO_LOSS=1 and a small
 * FTRACE_SIZE, threads wait for the writer while the writer stops the session.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int secs = 2;

__attribute__((noinline)) int leaf(int x) { __asm__ volatile(""); return x + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) * 2; }

static void *run(void *a)
{
	long n = 0;
	time_t t0 = time(NULL);

	(void)a;
	while (time(NULL) - t0 < secs)
		for (int i = 0; i < 100000; i++)
			n += mid(i);
	return (void *)n;
}

int main(int argc, char **argv)
{
	pthread_t th[3];

	if (argc > 1)
		secs = atoi(argv[1]);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	return 0;
}
