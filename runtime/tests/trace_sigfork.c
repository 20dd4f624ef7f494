/* A signal handler that forks, landing anywhere in a traced call: also while the runtime
   holds the thread's buffer or is between its steps.  The child returns from the handler
   into whatever the thread was doing, calls work() a while longer and exits; the parent
   reaps every child and prints how many ended other than with exit(0).
   argv[1]: work() calls in the parent, argv[2]: µs between signals, argv[3]: forks. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, in_child, forks;
static pthread_t main_thread;
static long gap_us, max_forks;
volatile long sink;

__attribute__((noinline)) void work(long i) { sink += i; }
__attribute__((noinline)) void in_handler(long x) { sink += x; }

static void on_usr1(int sig)
{
	in_handler(sig);
	if (in_child || forks >= max_forks)
		return;
	forks++;
	if (fork() == 0)
		in_child = 1;	/* back into what the interrupted thread was doing */
}

/* not traced: its own calls would only add events of another thread */
__attribute__((no_instrument_function)) static void *signaller(void *arg)
{
	struct timespec ts = { 0, gap_us * 1000 };

	(void)arg;
	while (!stop) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, after = 0, bad = 0, reaped = 0;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigset_t set;
	pthread_t th;
	int status;

	gap_us = argc > 2 ? atol(argv[2]) : 200;
	max_forks = argc > 3 ? atol(argv[3]) : 100;
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	if (pthread_create(&th, NULL, signaller, NULL))
		return 1;
	for (long i = 0; i < n || forks < max_forks || in_child; i++) {
		work(i);
		if (in_child && ++after == 20000)
			exit(0);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	stop = 1;
	pthread_join(th, NULL);
	while (wait(&status) > 0) {
		reaped++;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			bad++;
			if (WIFSIGNALED(status))
				fprintf(stderr, "child: signal %d\n", WTERMSIG(status));
		}
	}
	printf("forks %ld reaped %ld bad %ld\n", (long)forks, reaped, bad);
	return 0;
}
