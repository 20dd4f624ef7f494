/*
 * Two names at one address: an alias attribute, and gcc's identical code folding (-O2's
 * -fipa-icf keeps both local symbols of fold_a and fold_b at one body).  An argument spec
 * may name either: the runtime names each function by one of them.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int scale(int x)
{
	return x * 3 + 1;
}

int scale_alias(int x) __attribute__((alias("scale")));

static __attribute__((noinline)) int fold_a(int x)
{
	return x * 7 - 3;
}

static __attribute__((noinline)) int fold_b(int x)
{
	return x * 7 - 3;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;

	/* each call's argument and result, in the order of the calls */
	printf("%d %d\n", n, scale(n));
	printf("%d %d\n", n + 1, scale_alias(n + 1));
	printf("%d %d\n", n + 2, fold_a(n + 2));
	printf("%d %d\n", n + 3, fold_b(n + 3));
	return 0;
}
