/*
 * Systems that forbid writing code.  forbid MODE sets up the restriction and re-executes
 * itself (so the runtime's constructor runs under it too), then checks what the runtime does:
 *
 *   procmem-denied  /proc/self/mem cannot be written (seccomp makes pwrite64 fail with
 *                   EPERM, as proc_mem.force_override=never would): the runtime falls back to
 *                   transient rwx by itself and tracing works, W^X kept afterwards;
 *   mdwe            prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN): no new executable memory,
 *                   so no trampoline: register fails with an error, nothing changes;
 *   mdwe-mprotect   the same with FTRT_POKE=mprotect: code cannot be made writable either;
 *   both            MDWE and /proc/self/mem unusable.
 * In no case may the program crash; functions keep working untraced.  Prints "skip ..." when
 * the kernel lacks MDWE, "untraced" when the runtime disabled tracing of the program at load,
 * "register E" (the error) and "method M" (the code writing method).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "check.h"

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

const char *ftrt_poke_method(void);	/* runtime-internal: "procmem", "mprotect", "unset" */

NOINLINE int f1(int x) { __asm__ volatile(""); return x + 1; }

static volatile long hits;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

/* pwrite64 fails with EPERM from now on (inherited across execve). */
static int deny_pwrite(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwrite64, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

static int check(const char *mode)
{
	static struct ftrace_ops ops = { .func = cb };
	int (*volatile fp)(int) = f1;
	struct ftrace_func_info fi;
	struct ftrace_stats st;
	int traced = ftrace_lookup_function((unsigned long)f1, &fi) == 0;
	int ret;

	alarm(60);
	if (!traced)
		printf("untraced\n");
	else
		CHECK(is_nop(f1));
	CHECK_EQ(fp(1), 2);
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)f1, 0, 1), traced ? 0 : -ENODEV);
	ret = register_ftrace_function(&ops);
	printf("register %d\n", ret);
	printf("method %s\n", ftrt_poke_method());
	if (!strcmp(mode, "procmem-denied")) {
		CHECK_EQ(ret, 0);
		CHECK(calls_tramp_of(f1, &ops));
		CHECK_EQ(fp(1), 2);
		CHECK_EQ(hits, 1);
		CHECK_EQ(maps_wx(NULL, 0), 0);
		CHECK_EQ(unregister_ftrace_function(&ops), 0);
		CHECK(is_nop(f1));
		CHECK_EQ(maps_wx(NULL, 0), 0);
		CHECK(!strcmp(ftrt_poke_method(), "mprotect"));
	} else if (!traced) {
		/* Tracing was disabled at load: no site to patch, registering changes nothing. */
		CHECK_EQ(ret, 0);
		CHECK_EQ(ops.nr_sites, 0);
		CHECK_EQ(fp(1), 2);
		CHECK_EQ(hits, 0);
		CHECK_EQ(unregister_ftrace_function(&ops), 0);
		CHECK_EQ(maps_wx(NULL, 0), 0);
	} else {
		/* No executable memory for a trampoline (or no writable code): an error. */
		CHECK(ret == -ENOMEM || ret == -EACCES || ret == -EPERM);
		CHECK(!(ops.flags & FTRACE_OPS_FL_ENABLED));
		CHECK(is_nop(f1));
		CHECK_EQ(fp(1), 2);
		CHECK_EQ(hits, 0);
		ftrace_get_stats(&st);
		CHECK_EQ(st.nr_trampolines, 0);
		CHECK_EQ(unregister_ftrace_function(&ops), -EINVAL);
		/* Again: the same answer, no crash, no hang. */
		CHECK_EQ(register_ftrace_function(&ops), ret);
		CHECK(is_nop(f1));
		CHECK_EQ(maps_wx(NULL, 0), 0);
	}
	DONE();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char *args[] = { argv[0], "check", (char *)mode, NULL };

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 2 && !strcmp(argv[1], "check"))
		return check(argv[2]);
	if (!strcmp(mode, "mdwe") || !strcmp(mode, "mdwe-mprotect") || !strcmp(mode, "both")) {
		if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0)) {
			if (errno == EINVAL) {
				printf("skip %s: this kernel has no PR_SET_MDWE\n", mode);
				DONE();
			}
			perror("prctl(PR_SET_MDWE)");
			return 1;
		}
	}
	if ((!strcmp(mode, "procmem-denied") || !strcmp(mode, "both")) && deny_pwrite())
		return 1;
	if (!strcmp(mode, "mdwe-mprotect"))
		setenv("FTRT_POKE", "mprotect", 1);
	execv("/proc/self/exe", args);
	perror("execv");
	return 1;
}
