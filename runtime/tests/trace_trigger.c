/* Triggers on function hits: traceoff/traceon around calls that must not be recorded, a
   stack trace at two nested hits and at a tail-called function, finish, and a snapshot
   after recording stopped. */
#include <stdio.h>

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
	fin();
	calls(11);	/* not recorded: recording stopped when fin returned */
	snap();
	printf("%ld\n", sink);
	return 0;
}
