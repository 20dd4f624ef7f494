// SPDX-License-Identifier: Apache-2.0
/*
 * Cold enable: the FIRST register_ftrace_function of an ops with an empty filter in a
 * process (every site of the program), while one thread calls the program's functions, then
 * its unregister, then warm rounds.  The functions (tab[], nfuncs) are ordinary compiled
 * code from a generated source (bench/runtime/bench_test.go: gcc -O1 -pg -mfentry).
 * Output: "cold_ms register unregister", "warm_ms register unregister" (best of the warm
 * rounds), "cold_minflt register unregister", "sites N", with "epoll" "eintr N" (how often
 * the waiting thread's epoll_wait was cut short).
 * Usage: coldenable [warm rounds] [epoll: a third thread waits in epoll_wait meanwhile, as a
 * server's do; parking must spare it]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ftrace.h>

#include "../../patch/bench_util.h"
#include "../../../runtime/tests/waits.h"

typedef int (*fp)(int);
extern fp const tab[];
extern const unsigned long nfuncs;

static atomic_int stop, started;

static ftrace_notrace void *caller(void *arg)
{
	long s = 0;

	(void)arg;
	atomic_store(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		for (unsigned long i = 0; i < nfuncs; i++)
			s += tab[i](1);
	return (void *)s;
}

static int efd;
static atomic_int eintr, waiting_tid;

static ftrace_notrace void *waiter(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);

	(void)arg;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		exit(1);
	atomic_store(&waiting_tid, (int)syscall(SYS_gettid));
	while (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR)
		atomic_fetch_add(&eintr, 1);
	return NULL;
}


static ftrace_notrace void empty_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
				    struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static ftrace_notrace long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static ftrace_notrace void need(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "coldenable: %s: %d\n", what, ret);
		exit(1);
	}
}

ftrace_notrace int main(int argc, char **argv)
{
	static struct ftrace_ops ops = { .func = empty_cb };
	int warm = argc > 1 ? atoi(argv[1]) : 5;
	double t0, t1, t2, wr = 1e30, wu = 1e30;
	struct ftrace_stats st;
	long f0, f1, f2;
	pthread_t th;

	int epoll = argc > 2 && !strcmp(argv[2], "epoll");
	pthread_t wt;

	if (epoll) {
		efd = eventfd(0, 0);
		need(efd < 0 || pthread_create(&wt, NULL, waiter, NULL), "waiter");
		while (!atomic_load(&waiting_tid) || !waits_in_syscall(atomic_load(&waiting_tid)))
			usleep(1000);
	}
	need(pthread_create(&th, NULL, caller, NULL), "thread");
	while (!atomic_load(&started))
		;
	f0 = minflt();
	t0 = now_ns();
	need(register_ftrace_function(&ops), "register");
	t1 = now_ns();
	f1 = minflt();
	need(unregister_ftrace_function(&ops), "unregister");
	t2 = now_ns();
	f2 = minflt();
	printf("cold_ms %.2f %.2f\n", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
	printf("cold_minflt %ld %ld\n", f1 - f0, f2 - f1);
	for (int i = 0; i < warm; i++) {
		t0 = now_ns();
		need(register_ftrace_function(&ops), "register");
		t1 = now_ns();
		need(unregister_ftrace_function(&ops), "unregister");
		t2 = now_ns();
		if (t1 - t0 < wr)
			wr = t1 - t0;
		if (t2 - t1 < wu)
			wu = t2 - t1;
	}
	if (warm > 0)
		printf("warm_ms %.2f %.2f\n", wr / 1e6, wu / 1e6);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	if (epoll) {
		eventfd_write(efd, 1);
		pthread_join(wt, NULL);
		printf("eintr %d\n", atomic_load(&eintr));
	}
	ftrace_get_stats(&st);
	printf("sites %lu\n", st.nr_sites);
	return 0;
}
