// SPDX-License-Identifier: Apache-2.0
/*
 * A live switch from function_graph to function inside a call whose return the graph
 * tracer hooked, which then tail-calls (gcc -O2: jmp g): g's return slot is f's, which
 * holds return_to_handler.  The function tracer must name g's real caller, main.
 */
#include <ftrace_trace.h>

volatile long sink;

__attribute__((noinline)) int g(long x)
{
	return (int)(x * 3);
}

__attribute__((noinline)) int f(long n)
{
	ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION);
	sink += n;
	return g(sink);
}

int main(void)
{
	return f(5) == 15 ? 0 : 1;
}
