/* The graph tracer's time filter: calls far longer (naps) and far shorter (leaves) than a
   millisecond, nested both ways.  argv[1]: rounds; argv[2] "off": the program switches
   the filter off halfway through a round, while main and that round's mid are held back. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ftrace_trace.h>

volatile long sink;
static int off_at = -1;	/* the round that switches the filter off */

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void nap(int ms)
{
	struct timespec d = { 0, ms * 1000000L };

	leaf(1);
	ftrace_trace_marker("nap %d", ms);	/* inside nap, whatever the filter */
	nanosleep(&d, NULL);
	leaf(2);
}

/* long (it naps) when k is a multiple of 3, else a few microseconds */
__attribute__((noinline)) void mid(int k)
{
	for (int i = 0; i < 50; i++) {
		if (k == off_at && i == 25)
			ftrace_trace_set_time_filter(0);
		leaf(i);
	}
	if (k % 3 == 0)
		nap(3);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 12;

	if (argc > 2 && argv[2][0] == 'o')
		off_at = rounds / 2 + 1;	/* a round that does not nap: k % 3 != 0 */

	for (int k = 0; k < rounds; k++)
		mid(k);
	printf("%ld\n", sink);
	return 0;
}
