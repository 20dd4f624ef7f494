/*
 * graph_function / graph_notrace: a known call tree (TestTracerGraphSubtree).
 *   main: other, outer, other, escape (longjmp out of it), other, outer
 *   outer: inner(3), hidden, leaf     hidden: inner(2)     other: inner(4), leaf
 *   escape: inner(1), jumper → longjmp back to main
 * With argument "live" the program changes its own lists between phases: all; filter
 * "other,leaf"; graph_function "outer"; all again (ftrace_trace_set_filter,
 * ftrace_trace_set_graph_function), while main's frame stays open.
 */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <ftrace_trace.h>

volatile int sink;
static jmp_buf jb;

__attribute__((noinline)) void leaf(int i) { sink += i; }

__attribute__((noinline)) void inner(int n)
{
	for (int i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noinline)) void hidden(void) { inner(2); }

__attribute__((noinline)) void outer(void)
{
	inner(3);
	hidden();
	leaf(9);
}

__attribute__((noinline)) void other(void)
{
	inner(4);
	leaf(1);
}

__attribute__((noinline)) void jumper(void)
{
	leaf(5);
	longjmp(jb, 1);
}

__attribute__((noinline)) void escape(void)
{
	inner(1);
	jumper();
	leaf(7);	/* never reached */
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "live")) {
		int e1, e2, e3, e4;

		other();
		e1 = ftrace_trace_set_filter("other,leaf");
		other();
		e2 = ftrace_trace_set_filter("");
		e3 = ftrace_trace_set_graph_function("outer");
		other();
		outer();
		e4 = ftrace_trace_set_graph_function("");
		other();
		printf("live %d %d %d %d\n", e1, e2, e3, e4);
		return 0;
	}
	other();
	outer();
	other();
	if (!setjmp(jb))
		escape();
	other();
	outer();
	printf("sink %d\n", sink);
	return 0;
}
