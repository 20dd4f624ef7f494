/* Needs one descriptor of its own (it opens its own file), then calls fib: run under
   descriptor limits that leave it none if the runtime keeps one it cannot use. */
#include <stdio.h>

__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	FILE *f = fopen(argv[0], "r");

	(void)argc;
	if (!f) {
		perror("fopen");
		return 1;
	}
	fclose(f);
	printf("fib %d\n", fib(10));
	return 0;
}
