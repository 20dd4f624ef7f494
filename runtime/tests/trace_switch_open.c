/* The graph tracer switched off or away while calls it recorded are open: each still gets
   its exit, at its real return, whatever records meanwhile (function tracer, nothing). */
#include <stdio.h>

#include <ftrace_trace.h>

__attribute__((noinline)) long inner(long i) { return i * 3 + 1; }

/* recorded by the graph tracer; returns under the function tracer */
__attribute__((noinline)) long to_function(long i)
{
	long s = inner(i);

	ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION);
	return s + inner(i + 1) + inner(i + 2);
}

/* returns while tracing is off */
__attribute__((noinline)) long to_off(long i)
{
	long s = inner(i);

	ftrace_trace_enable(0);
	return s + inner(i + 1);
}

/* returns under no tracer, after the graph tracer is back and recorded more */
__attribute__((noinline)) long to_nop(long i)
{
	long s = inner(i);

	ftrace_trace_set_tracer(FTRACE_TRACER_NOP);
	s += inner(i + 1);
	ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION_GRAPH);
	return s + inner(i + 2);
}

int main(void)
{
	long s = to_function(1);

	ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION_GRAPH);
	s += to_off(2);
	ftrace_trace_enable(1);
	s += to_nop(3);
	printf("%ld\n", s);
	return 0;
}
