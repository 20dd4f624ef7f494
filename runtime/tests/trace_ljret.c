/*
 * A longjmp noticed at a return: g recurses 5 deep and jumps back to protected_call's
 * setjmp, and protected_call returns with no traced call in between, so the frames of g
 * are closed when protected_call's return reaches the tracer.  Prints the sum.
 */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf jb;

__attribute__((noinline)) void g(int n)
{
	if (n == 0)
		longjmp(jb, 1);
	g(n - 1);
	__asm__ volatile("");
}

__attribute__((noinline)) int protected_call(void)
{
	if (setjmp(jb) == 0) {
		g(5);
		return 0;
	}
	return 1;
}

__attribute__((noinline)) int outer(void)
{
	return protected_call() + 1;
}

int main(void)
{
	int s = 0;

	for (int i = 0; i < 100; i++)
		s += outer();
	printf("%d\n", s);
	return 0;
}
