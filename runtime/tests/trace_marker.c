/* ftrace_trace_marker: messages among the calls, from two threads, one too long, one from
   a signal handler, none while recording is off.  Prints what each call returned. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ftrace_trace.h>

volatile long sink;
static int handler_rc = 99;

__attribute__((noinline)) void leaf(long i) { sink += i; }

static void on_usr1(int sig)
{
	(void)sig;
	handler_rc = ftrace_trace_marker_write("from a handler", 14);
}

__attribute__((noinline)) void work(int k)
{
	leaf(k);
	ftrace_trace_marker("step %d of %s", k, "work");
	leaf(k + 1);
}

static void *worker(void *arg)
{
	(void)arg;
	ftrace_trace_marker("worker says %d", 7);
	work(10);
	return NULL;
}

int main(void)
{
	static char longtext[1500];
	pthread_t th;
	int rc[3];

	signal(SIGUSR1, on_usr1);
	rc[0] = ftrace_trace_marker("start");
	for (int k = 0; k < 3; k++)
		work(k);
	memset(longtext, 'x', sizeof(longtext) - 1);
	rc[1] = ftrace_trace_marker("%s", longtext);
	raise(SIGUSR1);
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	ftrace_trace_enable(0);
	rc[2] = ftrace_trace_marker("while off");
	ftrace_trace_enable(1);
	printf("%d %d %d %d\n", rc[0], rc[1], handler_rc, rc[2]);
	return 0;
}
