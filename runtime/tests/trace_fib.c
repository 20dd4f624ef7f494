/* fib(N) with tracing: the function tracer must see exactly fib's call count. */
#include <stdio.h>
#include <stdlib.h>

/* keep every call a call: no inlining, no tail-recursion-into-loop at -O2 */
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;

	printf("fib(%d) = %d\n", n, fib(n));
	return 0;
}
