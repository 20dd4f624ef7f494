/*
 * -ENOMEM: in a child whose address space is limited (RLIMIT_AS) so that the runtime cannot
 * reserve executable memory near the code, register_ftrace_function fails with -ENOMEM and
 * leaves everything as it was (ops not registered, sites nops, no trampoline, counts
 * unchanged); once the limit is lifted the same ops registers and works.
 * Not under ASan: its allocator dies instead of returning NULL when the limit is hit.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

NOINLINE int f1(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int f2(int x) { __asm__ volatile(""); return x + 2; }

static volatile long hits;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

/* Current address-space size in bytes (VmSize). */
static unsigned long vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

NOINLINE static int child(void)
{
	static struct ftrace_ops ops = { .func = cb }, all = { .func = cb };
	int (*volatile fp1)(int) = f1, (*volatile fp2)(int) = f2;
	struct ftrace_stats st0, st;
	struct rlimit old, lim;
	int ret;

	alarm(60);
	CHECK_EQ(ftrace_set_filter(&ops, "f1", 2, 1), 0);
	CHECK_EQ(ftrace_set_notrace(&all, "main child", 10, 1), 0);
	ftrace_get_stats(&st0);
	CHECK_EQ(st0.nr_trampolines, 0);
	CHECK_EQ(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = vm_size() + (256 << 10);	/* less than an arena (1 MiB) */
	CHECK_EQ(setrlimit(RLIMIT_AS, &lim), 0);

	ret = register_ftrace_function(&ops);
	CHECK_EQ(ret, -ENOMEM);
	CHECK_EQ(register_ftrace_function(&all), -ENOMEM);
	CHECK(!(ops.flags & FTRACE_OPS_FL_ENABLED));
	CHECK(!(all.flags & FTRACE_OPS_FL_ENABLED));
	CHECK(is_nop(f1) && is_nop(f2));
	CHECK_EQ(unregister_ftrace_function(&ops), -EINVAL);	/* not registered */
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_trampolines, 0);
	CHECK_EQ(fp1(1), 2);
	CHECK_EQ(hits, 0);

	CHECK_EQ(setrlimit(RLIMIT_AS, &old), 0);
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(calls_tramp_of(f1, &ops));
	CHECK(is_nop(f2));
	CHECK_EQ(register_ftrace_function(&all), 0);
	CHECK(CALLS_SET(f1, 0, &all, &ops));
	CHECK(calls_tramp_of(f2, &all));
	CHECK_EQ(fp1(1), 2);
	CHECK_EQ(hits, 2);
	CHECK_EQ(fp2(1), 3);
	CHECK_EQ(hits, 3);
	CHECK_EQ(unregister_ftrace_function(&all), 0);
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	CHECK(is_nop(f1) && is_nop(f2));
	return failures ? 1 : 0;
}

int main(void)
{
	pid_t pid;
	int status;

#if defined(__SANITIZE_ADDRESS__)
	printf("skip enomem: ASan's allocator aborts on a failed allocation\n");
	DONE();
#endif
	/* A fresh child: nothing registered yet, so no executable memory reserved. */
	pid = fork();
	if (pid == 0)
		_exit(child());
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	DONE();
}
