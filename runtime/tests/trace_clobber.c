// SPDX-License-Identifier: Apache-2.0
/*
 * Makes a file of its own at the path given (its trace's final name, in the test) while
 * it runs: the runtime must not replace it, and keeps the complete trace at its .part.
 */
#include <stdio.h>

__attribute__((noinline)) int work(int n)
{
	return n < 2 ? n : work(n - 1) + work(n - 2);
}

int main(int argc, char **argv)
{
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "w")))
		return 2;
	fprintf(f, "data\n");
	fclose(f);
	printf("%d\n", work(10));
	return 0;
}
