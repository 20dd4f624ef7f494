/*
 * A program's own SIGTERM handler that cleans up and passes the signal on with its default
 * action (signal(SIG_DFL) + raise, as GNU patch does): the process dies of SIGTERM, and
 * its trace must be finalised (it stayed a .part: the handler replaced the runtime's).
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) int work(int x) { __asm__ volatile(""); return x + 1; }

static void on_term(int sig)
{
	printf("cleaning up\n");
	fflush(stdout);
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	int s = 0;

	signal(SIGTERM, on_term);
	for (int i = 0; i < 1000; i++)
		s = work(s);
	printf("s=%d\n", s);
	fflush(stdout);
	raise(SIGTERM);
	printf("not reached\n");
	return 0;
}
