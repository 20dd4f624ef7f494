#include <stdio.h>
#include "prog.h"

static int __attribute__((noinline)) twice(int x)
{
	return 2 * x + (x & 1);
}

int __attribute__((noinline)) square(int x)
{
	return x * x;
}

int main(void)
{
	int v[16];
	for (int i = 0; i < 16; i++)
		v[i] = twice(i) + square(i);
	printf("sum %d\n", util_sum(v, 16));
	printf("fib %ld\n", util_fib(25));
	printf("apply %d %d\n", util_apply(square, 7), util_apply(twice, 9));
	printf("hook %d\n", hook(6));
	return 0;
}
