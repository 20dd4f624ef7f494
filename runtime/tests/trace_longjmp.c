/* longjmp and siglongjmp out of traced frames; the graph must stay balanced. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static jmp_buf jb;
static sigjmp_buf sjb;
volatile int sink;

__attribute__((noinline)) void leaf(int i) { sink += i; }
__attribute__((noinline)) void c3(int i) { leaf(i); if (i % 2) longjmp(jb, i); leaf(i); }
__attribute__((noinline)) void c2(int i) { c3(i); leaf(i); }
__attribute__((noinline)) void c1(int i) { c2(i); leaf(i); }
__attribute__((noinline)) void after(int i) { leaf(i); }

static void on_usr1(int sig) { leaf(sig); siglongjmp(sjb, 1); }
__attribute__((noinline)) void s2(void) { raise(SIGUSR1); leaf(0); }
__attribute__((noinline)) void s1(void) { s2(); }

__attribute__((noinline)) int run(void)
{
	int jumps = 0;

	for (int i = 0; i < 10; i++) {
		if (setjmp(jb) == 0)
			c1(i);
		else
			jumps++;
		after(i);
	}
	signal(SIGUSR1, on_usr1);
	for (int i = 0; i < 3; i++) {
		if (sigsetjmp(sjb, 1) == 0)
			s1();
		else
			jumps++;
		after(i);
	}
	return jumps;
}

int main(void)
{
	printf("jumps=%d sink=%d\n", run(), sink);
	return 0;
}
