/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a program may do to its process that the runtime must survive (argv[1]):
 * "fsize" sets RLIMIT_FSIZE below what the trace needs, "chdir DIR" changes directory
 * before doing its work; "plain" only works. It prints its result and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((noinline)) long fib(int n)
{
	__asm__ volatile("");
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "plain";

	if (!strcmp(how, "fsize")) {
		struct rlimit r = { 300 * 1024, 300 * 1024 };

		if (setrlimit(RLIMIT_FSIZE, &r)) {
			perror("setrlimit");
			return 2;
		}
	} else if (!strcmp(how, "chdir") && argc > 2 && chdir(argv[2])) {
		perror("chdir");
		return 2;
	}
	printf("fib %ld\n", fib(24));
	return 0;
}
