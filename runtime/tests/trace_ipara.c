/*
 * gcc turns -fipa-ra back on for a function with an optimize attribute, even under
 * -pg: g keeps a, b and c in rdi/rsi/rdx across its call of f, which it knows leaves
 * them alone. Under function_graph, f returns through return_to_handler and the
 * runtime's C code: the result must not change. (Built without -fno-ipa-ra.)
 */
#include <stdio.h>

#define ATTR __attribute__((noinline, optimize("no-optimize-sibling-calls")))

volatile int sink;

ATTR void f(void)
{
	sink++;
}

ATTR long g(long a, long b, long c)
{
	long x = a * 3 + b, y = b * 5 + c, z = c * 7 + a, w = a ^ b ^ c;

	f();
	return x + y * 2 + z * 3 + w * 4;
}

int main(void)
{
	long s = 0;

	for (long i = 0; i < 1000; i++)
		s += g(i, i + 1, i + 2);
	printf("%ld\n", s);
	return 0;
}
