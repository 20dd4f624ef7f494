/* A traced program started from the environment runs itself twice through sh -c (a
   wrapper that is not traced): every one of the three keeps its trace
   (TestTracerEnvSession). argv[1]: "child" for the runs sh starts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;
__attribute__((noinline)) void work(long i) { sink += i; }

int main(int argc, char **argv)
{
	char cmd[4096];

	for (long i = 0; i < 100; i++)
		work(i);
	if (argc > 1 && !strcmp(argv[1], "child"))
		return 0;
	snprintf(cmd, sizeof(cmd), "'%s' child; '%s' child", argv[0], argv[0]);
	printf("%d %s\n", system(cmd), getenv("FTRACE_SESSION") ? "session" : "none");
	return 0;
}
