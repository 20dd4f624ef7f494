/* A long-running program for the live-control tests: reads commands on stdin.
   "call N": calls tick() N times; "poller": starts a thread that waits in poll on a pipe
   nobody writes (it prints "polling" once it waits); "eintr": prints how many times that
   poll returned EINTR; "quit": exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "waits.h"

volatile long sink;

__attribute__((noinline)) void tick(long i) { sink += i; }
__attribute__((noinline)) void calls(long n) { for (long i = 0; i < n; i++) tick(i); }

static atomic_int poll_eintr, poll_tid;
static int quiet[2];

static void *poller(void *arg)
{
	struct pollfd p = { .events = POLLIN };

	(void)arg;
	p.fd = quiet[0];
	atomic_store(&poll_tid, (int)syscall(SYS_gettid));
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		atomic_fetch_add(&poll_eintr, 1);
	return NULL;
}


int main(void)
{
	char line[128];

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "call ", 5)) {
			calls(atol(line + 5));
			printf("done\n");
		} else if (!strncmp(line, "poller", 6)) {
			pthread_t t;

			if (pipe(quiet) || pthread_create(&t, NULL, poller, NULL))
				return 1;
			while (!atomic_load(&poll_tid) || !waits_in_syscall(atomic_load(&poll_tid)))
				usleep(1000);
			printf("polling\n");
		} else if (!strncmp(line, "eintr", 5)) {
			printf("eintr %d\n", atomic_load(&poll_eintr));
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	return 0;
}
