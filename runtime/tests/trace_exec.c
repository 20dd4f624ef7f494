/*
 * exec finalises the trace: the calls before it are in a complete file (reason exec).
 * Argument "fail": the exec fails and the program goes on (untraced) and exits normally.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void work(int i) { sink += i; }

int main(int argc, char **argv)
{
	for (int i = 0; i < 5; i++)
		work(i);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "fail")) {
		execl("/nonexistent/ftkit-test", "x", (char *)NULL);
		for (int i = 0; i < 5; i++)
			work(i);
		printf("exec failed, sink %d\n", sink);
		return 0;
	}
	execlp("true", "true", (char *)NULL);
	perror("execlp");
	return 1;
}
