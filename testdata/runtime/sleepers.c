/*
 * Threads that wait in calls a signal handler cuts short whatever SA_RESTART says
 * (epoll_wait, poll, ppoll, select, nanosleep, sigtimedwait: signal(7)) while the runtime
 * does what used to signal every thread: a first enable of functions on many pages (which
 * parks the other threads when none waits so), ftrace_synchronize(), and enough
 * unregisters to release retired trampolines.  No wait may return EINTR, and tracing
 * works meanwhile (exact counts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "../../runtime/tests/waits.h"

/* 80 functions, each on a page of its own: a first enable writes 80 fresh pages */
#define G(n) __attribute__((noinline, aligned(4096))) int g##n(int x) \
	{ __asm__ volatile(""); return x + n; }
#define G10(t) G(t##0) G(t##1) G(t##2) G(t##3) G(t##4) G(t##5) G(t##6) G(t##7) G(t##8) G(t##9)
G10(1) G10(2) G10(3) G10(4) G10(5) G10(6) G10(7) G10(8)
#define P(n) g##n,
#define P10(t) P(t##0) P(t##1) P(t##2) P(t##3) P(t##4) P(t##5) P(t##6) P(t##7) P(t##8) P(t##9)
static int (*volatile fns[])(int) = { P10(1) P10(2) P10(3) P10(4) P10(5) P10(6) P10(7) P10(8) };
#define NFNS ((int)(sizeof(fns) / sizeof(fns[0])))

static atomic_long hits;
static CB void count_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
			struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	atomic_fetch_add(&hits, 1);
}

enum { W_EPOLL, W_POLL, W_PPOLL, W_SELECT, W_NANOSLEEP, W_SIGWAIT, NW };
static const char *const wname[NW] = { "epoll_wait", "poll", "ppoll", "select", "nanosleep",
					"sigtimedwait" };
static int efd;
static atomic_int eintr[NW], woken[NW], waiting[NW];
static atomic_int tids[NW];

static void *waiter(void *arg)
{
	int w = (int)(long)arg, ep = -1, r;
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t usr2;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (w == W_EPOLL) {
		ep = epoll_create1(0);
		CHECK(ep >= 0 && !epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
	}
	atomic_store(&tids[w], (int)syscall(SYS_gettid));
	for (;;) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };
		struct timespec long_ts = { 60, 0 };
		fd_set rd;

		atomic_store(&waiting[w], 1);
		switch (w) {
		case W_EPOLL:
			r = epoll_wait(ep, &ev, 1, -1);
			break;
		case W_POLL:
			r = poll(&pfd, 1, -1);
			break;
		case W_PPOLL:
			r = ppoll(&pfd, 1, NULL, NULL);
			break;
		case W_SELECT:
			FD_ZERO(&rd);
			FD_SET(efd, &rd);
			r = select(efd + 1, &rd, NULL, NULL, NULL);
			break;
		case W_NANOSLEEP:
			r = nanosleep(&long_ts, NULL);
			break;
		default:
			r = sigtimedwait(&usr2, NULL, &long_ts);
			break;
		}
		if (r < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr[w], 1);
			continue;
		}
		atomic_store(&woken[w], 1);
		return NULL;
	}
}


int main(void)
{
	static struct ftrace_ops ops[8];
	pthread_t th[NW];
	sigset_t usr2;
	int w, round, i, total = 0;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);	/* only sigtimedwait takes it */
	efd = eventfd(0, EFD_NONBLOCK);
	CHECK(efd >= 0);
	for (w = 0; w < NW; w++)
		CHECK(!pthread_create(&th[w], NULL, waiter, (void *)(long)w));
	for (w = 0; w < NW; w++)
		while (!atomic_load(&waiting[w]) || !waits_in_syscall(atomic_load(&tids[w])))
			usleep(1000);

	/* a first enable on 80 fresh pages, counted exactly */
	ops[0].func = count_cb;
	CHECK_EQ(ftrace_set_filter(&ops[0], "g*", 2, 1), 0);
	CHECK_EQ(register_ftrace_function(&ops[0]), 0);
	for (i = 0; i < NFNS; i++)
		total += fns[i](i);
	CHECK_EQ(atomic_load(&hits), NFNS);
	CHECK_EQ(ftrace_synchronize(), 0);
	CHECK_EQ(unregister_ftrace_function(&ops[0]), 0);
	ftrace_free_filter(&ops[0]);

	/* unregisters that retire trampolines, and release them (every 96) */
	for (round = 0; round < 300; round++) {
		struct ftrace_ops *op = &ops[1 + round % 7];
		char glob[8];

		memset(op, 0, sizeof(*op));
		op->func = count_cb;
		snprintf(glob, sizeof(glob), "g%d", 10 + round % (NFNS - 1));
		CHECK_EQ(ftrace_set_filter(op, glob, (int)strlen(glob), 1), 0);
		CHECK_EQ(register_ftrace_function(op), 0);
		CHECK_EQ(unregister_ftrace_function(op), 0);
		ftrace_free_filter(op);
	}
	CHECK_EQ(ftrace_synchronize(), 0);
	usleep(20000);

	for (w = 0; w < NW; w++) {
		if (atomic_load(&eintr[w]))
			fprintf(stderr, "%s returned EINTR %d times\n", wname[w], atomic_load(&eintr[w]));
		CHECK_EQ(atomic_load(&eintr[w]), 0);
		CHECK_EQ(atomic_load(&woken[w]), 0);
	}
	/* the descriptor waits and sigtimedwait end as the program asks */
	CHECK_EQ(eventfd_write(efd, 1), 0);
	CHECK_EQ(syscall(SYS_tgkill, getpid(), atomic_load(&tids[W_SIGWAIT]), SIGUSR2), 0);
	for (w = 0; w < NW; w++)
		if (w != W_NANOSLEEP)
			CHECK_EQ(pthread_join(th[w], NULL), 0);
	if (failures)
		return 1;
	printf("ok\n");
	return 0;
}
