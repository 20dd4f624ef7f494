/*
 * A program that signals itself to die with a signal's default action after its own handler
 * cleaned up (signal(SIG_DFL), then raise as GNU patch does, or kill/sigqueue/pthread_kill,
 * or kill of its process group): the process dies of SIGTERM, and its trace must be
 * finalised (it stayed a .part: the program's handler replaced the runtime's).  "sigwait"
 * sends itself a blocked SIGUSR1 and takes it with sigwait: it goes on, and its trace must
 * go on too.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int work(int x) { __asm__ volatile(""); return x + 1; }

static const char *how = "raise";

static void send_self(int sig)
{
	if (!strcmp(how, "kill"))
		kill(getpid(), sig);
	else if (!strcmp(how, "killpg"))
		kill(0, sig);
	else if (!strcmp(how, "sigqueue"))
		sigqueue(getpid(), sig, (union sigval){ .sival_int = 0 });
	else if (!strcmp(how, "pthread_kill"))
		pthread_kill(pthread_self(), sig);
	else
		raise(sig);
}

static void on_term(int sig)
{
	printf("cleaning up\n");
	fflush(stdout);
	signal(sig, SIG_DFL);
	send_self(sig);
}

int main(int argc, char **argv)
{
	int s = 0;

	if (argc > 1)
		how = argv[1];
	if (!strcmp(how, "sigwait")) {
		sigset_t set;
		int got = 0;

		signal(SIGUSR1, SIG_DFL);	/* as a program about to sigwait may */
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		for (int i = 0; i < 500; i++)
			s = work(s);
		raise(SIGUSR1);
		sigwait(&set, &got);
		for (int i = 0; i < 500; i++)
			s = work(s);
		printf("s=%d got=%d\n", s, got == SIGUSR1);
		return 0;
	}
	signal(SIGTERM, on_term);
	for (int i = 0; i < 1000; i++)
		s = work(s);
	printf("s=%d\n", s);
	fflush(stdout);
	send_self(SIGTERM);
	printf("not reached\n");
	return 0;
}
