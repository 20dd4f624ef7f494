/* Signals landing anywhere in a traced call, so also between the moment the runtime
   takes a thread's buffer position and the moment it moves it.  The handler calls a
   traced function of a shared library (its addresses differ from the program's in their
   high half); main calls work() argv[1] times while a thread signals it without pause
   (argv[2]: or one signal every argv[2] microseconds; argv[3] "marker": the handler also
   writes a marker, and main prints how many were refused).
   Built twice: with -DLIB as libsig.so, without as the program. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#ifdef LIB
volatile long lib_sink;

__attribute__((noinline)) void in_handler(long x) { lib_sink += x; }
#else
#include <ftrace_trace.h>

void in_handler(long x);

static volatile sig_atomic_t stop;
static volatile long handled;
static pthread_t main_thread;
static long gap_us;
static int markers;
static volatile long refused;
volatile long sink;

__attribute__((noinline)) void work(long i) { sink += i; }

static void on_usr1(int sig)
{
	in_handler(sig);
	if (markers && ftrace_trace_marker_write("sig", 3) != 0)
		refused++;
	handled++;
}

/* not traced: its own calls would only add events of another thread */
__attribute__((no_instrument_function)) static void *signaller(void *arg)
{
	(void)arg;
	while (!stop) {
		pthread_kill(main_thread, SIGUSR1);
		if (gap_us) {
			struct timespec ts = { 0, gap_us * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigset_t set;
	pthread_t th;

	gap_us = argc > 2 ? atol(argv[2]) : 0;
	markers = argc > 3 && !strcmp(argv[3], "marker");
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	if (pthread_create(&th, NULL, signaller, NULL))
		return 1;
	for (long i = 0; i < n; i++)
		work(i);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* none after the count is printed */
	stop = 1;
	pthread_join(th, NULL);
	printf("work %ld handled %ld\n", n, (long)handled);
	if (markers)
		printf("markers refused %ld\n", (long)refused);
	return 0;
}
#endif
