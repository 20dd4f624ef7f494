/* Signal handlers nesting on traced frames, fork, tail calls, deep recursion,
   and the ways a program can end (argv[1]: exit, segv, abort, int3, sigtrap, sigsys,
   _exit). */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }
static void on_usr2(int sig) { leaf(sig); leaf(sig); }
__attribute__((noinline)) void sigframe(void) { leaf(1); raise(SIGUSR2); leaf(2); }

/* backtrace() from traced frames must see the same frames as without tracing */
__attribute__((noinline)) int bt3(void) { void *b[64]; int n = backtrace(b, 64); leaf(n); return n; }
__attribute__((noinline)) int bt2(void) { int n = bt3(); leaf(n); return n; }
__attribute__((noinline)) int bt1(void) { int n = bt2(); leaf(n); return n; }

__attribute__((noinline)) long tail_b(long x) { leaf(x); return x + 1; }
__attribute__((noinline)) long tail_a(long x) { leaf(x); return tail_b(x * 2); }

__attribute__((noinline)) long recurse(long n)
{
	volatile char pad[32];

	pad[0] = (char)n;
	if (!n)
		return 0;
	return recurse(n - 1) + 1 + pad[0] - (char)n;
}

static int kill_child; /* "killchild": the fork child dies of SIGKILL, its file stays .part */

__attribute__((noinline)) int forker(void)
{
	pid_t p = fork();
	int st;

	if (p == 0) {
		leaf(100);
		leaf(101);
		if (kill_child)
			raise(SIGKILL);
		fflush(stdout);
		exit(3);
	}
	leaf(200);
	waitpid(p, &st, 0);
	return WEXITSTATUS(st);
}

__attribute__((noinline)) void crash(const char *how)
{
	leaf(7);
	if (!strcmp(how, "segv"))
		*(volatile int *)16 = 1;
	if (!strcmp(how, "abort"))
		abort();
	if (!strcmp(how, "int3"))	/* the program's own breakpoint (gtest_break_on_failure) */
#if defined(__x86_64__)
		__asm__ volatile("int3");
#else
		__asm__ volatile("brk #0xf000");
#endif
	if (!strcmp(how, "sigtrap"))
		raise(SIGTRAP);
	if (!strcmp(how, "sigsys"))	/* what a seccomp filter's SECCOMP_RET_TRAP sends */
		raise(SIGSYS);
	if (!strcmp(how, "_exit"))
		_exit(5);
	if (!strcmp(how, "sig63"))	/* the runtime's attach signal, sent by someone else */
		kill(getpid(), 63);
}

int main(int argc, char **argv)
{
	kill_child = argc > 1 && !strcmp(argv[1], "killchild");
	signal(SIGUSR2, on_usr2);
	sigframe();
	long t = tail_a(5);
	long r = recurse(argc > 2 ? atol(argv[2]) : 10000);
	int child = forker();
	int bt = bt1();
	printf("tail=%ld recurse=%ld child=%d backtrace=%d\n", t, r, child, bt);
	fflush(stdout);
	crash(argc > 1 ? argv[1] : "exit");
	return 0;
}
