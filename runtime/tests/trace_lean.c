/* Which template the tracer's own trampoline is a clone of: after one traced call, the
   site of work() calls the tracer's trampoline; "lean 1" when it is the lean caller's
   clone (no vector registers saved), "lean 0" when it is the full one. */
#include <stdio.h>
#include <string.h>

#include <ftrace.h>

extern const unsigned char ftrace_caller_novec[], ftrace_caller[];

__attribute__((noinline)) double work(double x, long n) { return x * 2.0 + (double)n; }

int main(void)
{
	struct ftrace_func_info fi;
	const unsigned char *t;
	double r = work(1.5, 3);

	if (ftrace_lookup_function((unsigned long)work, &fi) || !fi.target) {
		printf("untraced %.1f\n", r);
		return 0;
	}
	t = (const unsigned char *)fi.target;
	printf("lean %d full %d %.1f\n", !memcmp(t, ftrace_caller_novec, 16), !memcmp(t, ftrace_caller, 16), r);
	return 0;
}
