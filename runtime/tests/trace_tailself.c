/*
 * f tail-calls g, g tail-calls f: with only f traced, each f after the first is entered
 * at the same return-address slot, already hooked, and the calls return once for each
 * entry (TestTracerTailSelf).
 */
#include <stdio.h>

int g(int n);

__attribute__((noinline)) int f(int n)
{
	if (n <= 0)
		return 0;
	return g(n);
}

__attribute__((noinline)) int g(int n)
{
	__asm__ volatile("");
	return f(n - 1);
}

int main(void)
{
	volatile int r = f(3);

	printf("%d\n", r);
	return 0;
}
