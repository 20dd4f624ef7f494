#include "prog.h"

/* Overrides the weak hook in weak.c. */
int hook(int x)
{
	return x * 7;
}

int util_sum(const int *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return s;
}

long util_fib(int n)
{
	return n < 2 ? n : util_fib(n - 1) + util_fib(n - 2);
}

int util_apply(int (*fn)(int), int x)
{
	return fn(x) + 1;
}
