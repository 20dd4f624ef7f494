// SPDX-License-Identifier: Apache-2.0
/*
 * A daemon's start, many times: a process records enough calls to keep the runtime's
 * writer thread writing, forks, and exits at once; the child records some more and
 * exits.  A child must never take over the parent's half-built batch of writes (its
 * buffers are not the child's).  The top process reaps both (PR_SET_CHILD_SUBREAPER) and
 * prints "ok N" when every one exited 0, else how one ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40, n = argc > 2 ? atoi(argv[2]) : 200000;
	volatile int sink = 0;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		return 2;
	for (int r = 0; r < rounds; r++) {
		int st;
		pid_t p = fork();

		if (p < 0)
			return 2;
		if (p == 0) {	/* the daemon's parent */
			sink += work(n);
			p = fork();
			if (p < 0)
				_exit(2);
			if (p)
				exit(0);
			sink += work(n / 4);	/* the daemon */
			exit(0);
		}
		for (int k = 0; k < 2; k++) {
			if (wait(&st) < 0)
				return 2;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				printf("round %d: a process %s %d\n", r, WIFSIGNALED(st) ? "killed by signal" : "exited",
				       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
				return 1;
			}
		}
	}
	printf("ok %d\n", rounds);
	return 0;
}
