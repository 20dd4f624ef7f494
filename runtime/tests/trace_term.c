/* Ending by a signal whose default action terminates the process (argv[1]):
     wait   traced calls, then "ready" and a loop answering "ping" with "pong" from
            inside a traced frame until stdin ends (the test signals it meanwhile)
     pipe   writes lines from a traced frame until stdout is closed (SIGPIPE) */
#include <stdio.h>
#include <string.h>

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void work(int n)
{
	for (int i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noinline)) void waiter(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		leaf(1);
		printf(strcmp(line, "ping\n") ? "what\n" : "pong\n");
		fflush(stdout);
	}
}

__attribute__((noinline)) void writer(void)
{
	for (long i = 0;; i++) {
		leaf(i);
		printf("line %ld\n", i);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	work(100);
	if (argc > 1 && !strcmp(argv[1], "pipe"))
		writer();
	else
		waiter();
	printf("bye\n");
	return 0;
}
