/* Triggers on function hits: traceoff/traceon around calls that must not be recorded, a
   stack trace at two nested hits, at a tail-called function and at one called through
   untraced code (libc's qsort calling back), finish, and a snapshot after recording
   stopped. */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }
__attribute__((noinline)) void calls(int n) { for (int i = 0; i < n; i++) leaf(i); }
__attribute__((noinline)) void off(void) { leaf(1); }
__attribute__((noinline)) void on(void) { leaf(2); }
/* a call each time: no tail call made a jump */
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) void deep(int n)
{
	if (n)
		deep(n - 1);
	else
		leaf(3);
}
/* tailer's call of tailee is a jump (-O2): tailee returns straight into main */
__attribute__((noinline)) void tailee(void) { leaf(5); }
__attribute__((noinline)) void tailer(void) { sink++; tailee(); }
__attribute__((noinline)) void fin(void) { leaf(4); }
__attribute__((noinline)) void probe(void) { sink++; }
__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	probe();
	return *(const int *)a - *(const int *)b;
}
/* calls cmp through qsort: no return address into sorter is on the chain */
__attribute__((noinline)) void sorter(void)
{
	int v[2] = { 2, 1 };

	qsort(v, 2, sizeof(v[0]), cmp);
	sink += v[0];
}
__attribute__((noinline)) void snap(void) { sink++; }

int main(void)
{
	calls(5);
	off();
	calls(7);	/* not recorded */
	on();
	calls(9);
	deep(3);
	tailer();
	sorter();
	fin();
	calls(11);	/* not recorded: recording stopped when fin returned */
	snap();
	printf("%ld\n", sink);
	return 0;
}
