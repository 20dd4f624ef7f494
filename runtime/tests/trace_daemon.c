/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon(N, N) (N = argv[1]) from a traced program.  The parent calls work() 5 times,
 * prints its pid and calls daemon(); it leaves inside daemon().  The child calls work()
 * 7 times and writes "<pid> sid <ok> cwd <dir> stdout <target> sum <n>" into RESULT
 * (argv[2], an absolute path; written to RESULT.tmp and renamed when complete).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int work(int x)
{
	__asm__ volatile("");
	return x * 2;
}

int main(int argc, char **argv)
{
	char tmp[4096], cwd[4096] = "?", out[4096] = "?";
	int sum = 0, n;
	ssize_t len;
	FILE *f;

	if (argc < 3)
		return 2;
	n = atoi(argv[1]);
	for (int i = 0; i < 5; i++)
		sum += work(i);
	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	if (daemon(n, n)) {
		perror("daemon");
		return 1;
	}
	for (int i = 0; i < 7; i++)
		sum += work(i);
	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "?");
	len = readlink("/proc/self/fd/1", out, sizeof(out) - 1);
	out[len > 0 ? len : 0] = 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	f = fopen(tmp, "w");
	if (!f)
		return 2;
	fprintf(f, "%d sid %d cwd %s stdout %s sum %d\n", (int)getpid(), getsid(0) == getpid(),
		cwd, out, sum);
	if (fclose(f) || rename(tmp, argv[2]))
		return 2;
	return 0;
}
