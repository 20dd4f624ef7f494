/*
 * trace_fib.c's fib(N), and what fib's site does at the end (traced by the tracer
 * FTRACE_TRACER names): "state offset nr_ops" of ftrace_lookup_function(fib) in state.txt
 * (state: enum ftrace_site_state; offset: the site's bl from fib's entry).
 */
#include <stdio.h>
#include <stdlib.h>
#include <ftrace.h>

__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	struct ftrace_func_info fi;
	FILE *f;

	printf("fib(%d) = %d\n", n, fib(n));
	if (ftrace_lookup_function((unsigned long)fib, &fi))
		return 3;
	f = fopen("state.txt", "w");
	if (!f)
		return 4;
	fprintf(f, "%d %lu %u\n", (int)fi.state, fi.ip - (unsigned long)fib, fi.nr_ops);
	return fclose(f) ? 5 : 0;
}
