/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a program may do to its process that the runtime must survive (argv[1]):
 * "fsize" sets RLIMIT_FSIZE below what the trace needs, "chdir DIR" changes directory
 * before doing its work, "closeall FILE" closes every descriptor above 2 as daemons do,
 * opens FILE and moves it onto every high number the runtime may use, then works and checks
 * FILE still holds only what it wrote ("keepall FILE": the same without closing or
 * moving anything; closeall also changes its title); "nofile" works, then prints how many more descriptors it could open
 * and the first one's number ("opened K, first F": run it under a small ulimit -n); "plain" only works. It prints its result and
 * exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
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
	if ((!strcmp(how, "closeall") || !strcmp(how, "keepall")) && argc > 2) {
		static const char mine[] = "the program's own data\n";
		char back[sizeof(mine) + 16] = { 0 };
		long half = fib(20);
		int fd;

		for (int i = 3; i < 4096 && how[0] == 'c'; i++)
			close(i);
		fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, mine, sizeof(mine) - 1) != sizeof(mine) - 1)
			return 2;
		/* the runtime's numbers: 3/4 of RLIMIT_NOFILE, at most 768, and above */
		for (int n = 760; n < 800 && how[0] == 'c'; n++)
			dup2(fd, n);
		half += fib(24);
		/* a new title (as a forked worker gives itself): the runtime writes the command
		   line again at exit, through its own descriptor too */
		if (how[0] == 'c')
			argv[0][0] = 'X';
		if (pread(fd, back, sizeof(back), 0) != sizeof(mine) - 1 || strcmp(back, mine)) {
			printf("FILE CHANGED\n");
			return 3;
		}
		printf("fib %ld, file intact\n", half);
		return 0;
	}
	if (!strcmp(how, "nofile")) {
		long f = fib(24);
		int k = 0, fd, first = -1;

		while ((fd = open("/dev/null", O_RDONLY)) >= 0) {
			if (first < 0)
				first = fd;
			k++;
		}
		printf("fib %ld, opened %d, first %d\n", f, k, first);
		return 0;
	}
	printf("fib %ld\n", fib(24));
	return 0;
}
