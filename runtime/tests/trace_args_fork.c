// SPDX-License-Identifier: Apache-2.0
/*
 * A string argument recorded in a fork child is the child's: the parent records one first
 * (the runtime keeps its process id for the copies), then the child changes the string in
 * its own memory and records it, while the parent's copy stays as it was.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[32] = "parent";
static volatile size_t total;	/* the calls' results are used: kept */

__attribute__((noinline)) size_t slen(const char *s)
{
	return strlen(s);
}

int main(void)
{
	int st;
	pid_t pid;

	total += slen(buf);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		strcpy(buf, "child");
		total += slen(buf);
		return 0;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 3;
	total += slen(buf);
	printf("%s %zu\n", buf, (size_t)total);
	return 0;
}
