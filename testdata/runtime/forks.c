/*
 * fork() and the runtime:
 *  1. fork while another thread switches ops (register, filter change, unregister) and a
 *     third calls the traced functions: every child finds each site in the state its
 *     records and the registered ops say (decoded from the bytes), can unregister what is
 *     registered, register its own ops and see exact counts; no child hangs (alarm).
 *  2. fork from inside a callback: the child returns from the callback and uses the API.
 *  3. fork from inside a callback while another thread's unregister waits for that very
 *     callback (it holds the API lock): the fork does not wait, and the child, whose
 *     only thread is the one that was in the callback, can still use the API.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

NOINLINE int f1(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int f2(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int f3(int x) { __asm__ volatile(""); return x + 3; }
NOINLINE int f4(int x) { __asm__ volatile(""); return x + 4; }
NOINLINE int fcb(int x) { __asm__ volatile(""); return x + 5; }
NOINLINE int fpark(int x) { __asm__ volatile(""); return x + 6; }

static int (*volatile fns[4])(int) = { f1, f2, f3, f4 };
static unsigned long sites[4];

static CB void nop_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static struct ftrace_ops A = { .func = nop_cb };
static struct ftrace_ops B = { .func = nop_cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
static struct ftrace_ops C = { .func = nop_cb, .flags = FTRACE_OPS_FL_RECURSION };

/* Child-side counting ops: counts calls of f1..f4 only. */
static volatile long d_hits;
static CB void d_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	int i;

	(void)p; (void)op; (void)r;
	for (i = 0; i < 4; i++)
		if (ip == sites[i])
			d_hits++;
}
static struct ftrace_ops D = { .func = d_cb };

static CB int is_registered(struct ftrace_ops *op) { return op->flags & FTRACE_OPS_FL_ENABLED; }

/* In a child: each of f1..f4 is in the state the registered ops say. */
static CB void check_consistent(struct ftrace_ops **ops, int nops)
{
	int i, j;

	for (i = 0; i < 4; i++) {
		struct ftrace_func_info fi;
		struct ftrace_ops *one = NULL;
		unsigned n = 0;
		int regs = 0;

		CHECK_EQ(ftrace_lookup_function(sites[i], &fi), 0);
		for (j = 0; j < nops; j++)
			if (is_registered(ops[j]) && ftrace_ops_test(ops[j], sites[i])) {
				n++;
				one = ops[j];
				regs |= !!(ops[j]->flags & FTRACE_OPS_FL_SAVE_REGS);
			}
		CHECK_EQ(fi.nr_ops, n);
		if (n == 0) {
			CHECK_EQ(fi.state, FTRACE_SITE_NOP);
			CHECK(is_nop((void *)fns[i]));
		} else if (n == 1) {
			CHECK_EQ(fi.state, FTRACE_SITE_TRAMP);
			CHECK(fi.owner == one);
			CHECK(calls_tramp_of((void *)fns[i], one));
		} else {
			if (multi_off()) {
				CHECK_EQ(fi.state, regs ? FTRACE_SITE_REGS_CALLER : FTRACE_SITE_CALLER);
				CHECK(calls_list((void *)fns[i], regs));
			} else {
				CHECK_EQ(fi.state, FTRACE_SITE_MULTI);
				CHECK(calls_multi((void *)fns[i], regs, (int)n, NULL));
			}
		}
	}
}

/* In a child: the API works; D counts exactly. */
static CB void child_uses_api(void)
{
	int i;

	d_hits = 0;
	CHECK_EQ(register_ftrace_function(&D), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(fns[i](1), 2 + i);
	CHECK_EQ(d_hits, 4);
	CHECK_EQ(unregister_ftrace_function(&D), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(fns[i](1), 2 + i);
	CHECK_EQ(d_hits, 4);
}

static CB int wait_child(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "child %d: status %#x\n", (int)pid, st);
		return 0;
	}
	return 1;
}

/* ---- 1. fork while switching ---- */

static atomic_int stop;

static void *switcher(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		CHECK_EQ(register_ftrace_function(&A), 0);
		CHECK_EQ(register_ftrace_function(&B), 0);
		CHECK_EQ(ftrace_set_filter(&A, "f1 f3", 5, 1), 0);
		CHECK_EQ(register_ftrace_function(&C), 0);
		CHECK_EQ(unregister_ftrace_function(&B), 0);
		CHECK_EQ(ftrace_set_filter(&A, "f*", 2, 1), 0);
		CHECK_EQ(unregister_ftrace_function(&C), 0);
		CHECK_EQ(unregister_ftrace_function(&A), 0);
	}
	return NULL;
}

static void *caller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		for (int i = 0; i < 4; i++)
			fns[i](1);
	return NULL;
}

static void fork_while_switching(int n)
{
	struct ftrace_ops *ops[] = { &A, &B, &C };
	pthread_t ts, tc;
	int i, ok = 0;

	CHECK_EQ(ftrace_set_filter(&A, "f*", 2, 1), 0);
	CHECK_EQ(ftrace_set_filter(&B, "f2 f3", 5, 1), 0);
	CHECK_EQ(ftrace_set_filter(&C, "f3 f4", 5, 1), 0);
	pthread_create(&ts, NULL, switcher, NULL);
	pthread_create(&tc, NULL, caller, NULL);
	for (i = 0; i < n; i++) {
		pid_t pid;

		usleep(1000 + (unsigned)(i % 7) * 700);
		pid = fork();
		if (pid == 0) {
			alarm(30);
			check_consistent(ops, 3);
			for (int j = 0; j < 3; j++)
				if (is_registered(ops[j]))
					CHECK_EQ(unregister_ftrace_function(ops[j]), 0);
			check_consistent(ops, 3);
			child_uses_api();
			_exit(failures ? 1 : 0);
		}
		ok += wait_child(pid);
	}
	atomic_store(&stop, 1);
	pthread_join(ts, NULL);
	pthread_join(tc, NULL);
	CHECK_EQ(ok, n);
	printf("forked %d children while switching\n", n);
}

/* ---- 2. and 3. fork inside a callback ---- */

static volatile int in_child;
static pid_t cb_child;
static atomic_int parked, unregistering;
static int nr_eintr;

static CB void fork_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	cb_child = fork();
	if (cb_child == 0)
		in_child = 1;
}

/* Waits until another thread is inside unregister_ftrace_function of this ops. */
static CB void park_fork_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op,
			    struct ftrace_regs *r)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	(void)ip; (void)p; (void)op; (void)r;
	atomic_store(&parked, 1);
	while (!atomic_load(&unregistering))
		;
	/*
	 * The unregister is now waiting for us; ftrt_synchronize signals this thread (again
	 * and again while it is inside), so the sleep is cut short with EINTR: resume it.
	 */
	while (nanosleep(&ts, &ts))
		if (errno == EINTR)
			nr_eintr++;
	cb_child = fork();
	if (cb_child == 0)
		in_child = 1;
}

static struct ftrace_ops P = { .func = fork_cb };
static struct ftrace_ops Q = { .func = park_fork_cb };

static void *parker(void *arg)
{
	(void)arg;
	CHECK_EQ(fpark(1), 7);
	if (in_child) {
		/* The child's only thread: the unregister of Q never finished here. */
		alarm(30);
		CHECK(is_nop(fpark));
		check_consistent((struct ftrace_ops *[]){ &A }, 1);
		child_uses_api();
		_exit(failures ? 1 : 0);
	}
	return NULL;
}

static void fork_in_callbacks(void)
{
	int (*volatile fp)(int) = fcb;
	struct timespec t0, t1;
	pthread_t t;
	pid_t pid;

	/* 2 */
	CHECK_EQ(ftrace_set_filter_ip(&P, (unsigned long)fcb, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&P), 0);
	CHECK_EQ(fp(1), 6);
	if (in_child) {
		alarm(30);
		CHECK(calls_tramp_of(fcb, &P));
		CHECK_EQ(unregister_ftrace_function(&P), 0);
		CHECK(is_nop(fcb));
		check_consistent((struct ftrace_ops *[]){ &A }, 1);
		child_uses_api();
		_exit(failures ? 1 : 0);
	}
	CHECK(wait_child(cb_child));
	CHECK_EQ(unregister_ftrace_function(&P), 0);
	printf("forked from a callback\n");

	/* 3 */
	CHECK_EQ(ftrace_set_filter_ip(&Q, (unsigned long)fpark, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&Q), 0);
	pthread_create(&t, NULL, parker, NULL);
	while (!atomic_load(&parked))
		;
	atomic_store(&unregistering, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ(unregister_ftrace_function(&Q), 0);	/* waits for the callback */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 100000000L);
	pthread_join(t, NULL);
	pid = cb_child;
	CHECK(wait_child(pid));
	CHECK(is_nop(fpark));
	printf("forked from a callback an unregister waits for (nanosleep: %d EINTR)\n", nr_eintr);
}

int main(void)
{
	int i;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 0; i < 4; i++) {
		struct ftrace_func_info fi;

		CHECK_EQ(ftrace_lookup_function((unsigned long)fns[i], &fi), 0);
		sites[i] = fi.ip;
	}
	CHECK_EQ(ftrace_set_filter(&D, "f1 f2 f3 f4", 11, 1), 0);
#if defined(__SANITIZE_ADDRESS__)
	fork_while_switching(10);	/* forking ASan's huge mappings is slow */
#else
	fork_while_switching(40);
#endif
	fork_in_callbacks();
	DONE();
}
