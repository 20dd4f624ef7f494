/* Fork children of a process whose tracer is nop (started so, or attached and never given
   a tracer): a child that traces nothing writes no trace; one that sets a tracer itself
   (the C API) gets its trace then.  Prints the children's pids. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ftrace_trace.h>

volatile long sink;

__attribute__((noinline)) void work(long i) { sink += i; }

static pid_t child(int set_tracer)
{
	pid_t p = fork();

	if (p == 0) {
		if (set_tracer && ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION))
			_exit(2);
		work(1);
		work(2);
		exit(0);
	}
	return p;
}

int main(void)
{
	pid_t quiet, tracing;
	int st1, st2;

	work(0);
	quiet = child(0);
	waitpid(quiet, &st1, 0);
	tracing = child(1);
	waitpid(tracing, &st2, 0);
	printf("quiet %d %d tracing %d %d\n", (int)quiet, WEXITSTATUS(st1), (int)tracing, WEXITSTATUS(st2));
	return 0;
}
