/* Works while its trace cannot be written (the test lowers RLIMIT_FSIZE), then closes
   stderr and works on: the runtime's message about the failed writes came before. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
	int s = fib(24);

	usleep(200000);		/* the writer writes meanwhile, and fails */
	s += fib(20);		/* new blocks: a thread of the program says it */
	close(2);
	s += fib(20);
	printf("%d\n", s);
	return 0;
}
