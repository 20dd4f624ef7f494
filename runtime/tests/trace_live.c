/* A long-running program for the live-control tests: reads commands on stdin.
   "call N": calls tick() N times; "quit": exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile long sink;

__attribute__((noinline)) void tick(long i) { sink += i; }
__attribute__((noinline)) void calls(long n) { for (long i = 0; i < n; i++) tick(i); }

int main(void)
{
	char line[128];

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "call ", 5)) {
			calls(atol(line + 5));
			printf("done\n");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
