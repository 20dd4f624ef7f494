// SPDX-License-Identifier: Apache-2.0
/*
 * A forked worker that retitles itself over its argv, as nginx's do ("nginx: worker
 * process"): its trace, opened at the fork with its parent's command line, must end with
 * the worker's.  Run with one argument (room for the title).
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int leaf(int x)
{
	return x + 1;
}

int main(int argc, char **argv)
{
	size_t room = strlen(argv[0]) + (argc > 1 ? strlen(argv[1]) + 1 : 0);
	pid_t p = fork();

	if (p < 0)
		return 2;
	if (p == 0) {
		memset(argv[0], 0, room);
		strncpy(argv[0], "retitled: worker", room);
		return leaf(1) - 2;
	}
	if (waitpid(p, NULL, 0) != p)
		return 2;
	return leaf(0) - 1;
}
