// SPDX-License-Identifier: Apache-2.0
/*
 * stress_test.c - the runtime under running threads (built with recordmcount + libftrt.a
 * + ftlink; the traced functions are in stress_funcs.S, this file is not traced).
 *
 *   stress_test stress THREADS MAX_SWITCHES SECONDS
 *	THREADS threads call the 1000 functions in a loop while this thread registers,
 *	unregisters and re-filters 4 ops (sites move between own trampoline, list caller and
 *	regs caller) until MAX_SWITCHES or SECONDS.  Every call is checked: the callbacks that
 *	ran for it (a per-thread bit mask they set) must be exactly the ops registered and
 *	matching when the call ran in a stable period, and within what the configurations
 *	around it allow when it overlapped a switch (an ops registered throughout must never
 *	miss a call).  Totals of the callbacks and of the callers must agree.
 *   stress_test signals|fork THREADS MAX_SWITCHES SECONDS
 *	the same, and the threads are interrupted by signals whose handler makes checked calls
 *	too; or the switching thread forks every 10 switches and the child checks its calls,
 *	unregisters and registers in its own copy.
 *   stress_test api THREADS MAX_SWITCHES SECONDS
 *	the same with one switching thread per ops, all switching at once.
 *   stress_test park
 *	a thread parks inside a callback; unregister on another thread must wait for it, then
 *	retire the trampoline, and ftrace_synchronize() releases its memory; unregister from
 *	inside a callback is refused.
 *   stress_test nested park|self|altstack
 *	a thread is interrupted by a signal while on a trampoline's own instructions (outside
 *	its callback: ftrt_cb_depth 0).  park: the handler waits; the ops is unregistered on
 *	another thread, and ftrace_synchronize() must not release the trampoline until the
 *	handler has returned into it.  self: the handler itself unregisters the ops and calls
 *	ftrace_synchronize(), which must keep the memory (-EAGAIN).  Either way the thread
 *	then resumes in the trampoline: releasing it early would crash.  altstack: as park,
 *	with the program's handler on an alternate signal stack.
 *   stress_test syncfail
 *	run with FTRT_TEST_SYNC_FAIL=1 (the wait for callbacks fails): unregister returns the
 *	error and keeps the trampoline (in use, executable), the callback is no longer called.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftrace.h"

#define NFUNC 1000
#define NOPS 4
#define MAXCFG 200000

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef long (*fn_t)(void);
extern const fn_t stress_fns[NFUNC];

static struct ftrace_ops ops[NOPS];
static __thread unsigned fired;			/* callbacks that ran for the current call */
static atomic_ulong cb_count[NOPS];
static atomic_int regs_missing;

static void cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
	       struct ftrace_regs *fregs)
{
	int k = (int)(intptr_t)op->private;

	(void)ip;
	(void)parent_ip;
	fired |= 1u << k;
	atomic_fetch_add_explicit(&cb_count[k], 1, memory_order_relaxed);
	if ((op->flags & FTRACE_OPS_FL_SAVE_REGS) && !ftrace_get_regs(fregs))
		atomic_store(&regs_missing, 1);
}

/*
 * The ops (independent of the runtime's matcher):
 *   0: every function
 *   1: filter "stress_fn_*[02468]" (even), or with variant bit "stress_fn_*[13579]"
 *   2: SAVE_REGS, filter "stress_fn_*5 stress_fn_1*"
 *   3: RECURSION, notrace "stress_fn_*7"
 */
static const char *pat1[2] = { "stress_fn_*[02468]", "stress_fn_*[13579]" };

static unsigned match_mask(int i, int variant)
{
	unsigned m = 1u << 0;
	char name[32];

	snprintf(name, sizeof(name), "stress_fn_%d", i);
	if (!fnmatch(pat1[variant], name, 0))
		m |= 1u << 1;
	if (!fnmatch("stress_fn_*5", name, 0) || !fnmatch("stress_fn_1*", name, 0))
		m |= 1u << 2;
	if (fnmatch("stress_fn_*7", name, 0))
		m |= 1u << 3;
	return m;
}

static unsigned mmask[2][NFUNC];

/*
 * Each ops k has its own history: pcfg[k][j] is its j-th state (bit 0 registered, bit 1 the
 * filter variant of ops 1), ep[k] = 2j while state j is stable and 2j+1 while it changes
 * from j to j+1.  Only the thread that switches ops k writes them, so several threads may
 * switch different ops at once.
 */
static unsigned char pcfg[NOPS][MAXCFG];
static atomic_ulong ep[NOPS];
static atomic_int stop;

/* config as one mask: bits 0..3 registered ops, bit 4 = filter variant of ops 1 */
static unsigned allowed(int i, unsigned c)
{
	return mmask[(c >> 4) & 1][i] & c & 0xf;
}

static unsigned allowed_k(int i, int k, unsigned v)
{
	return (v & 1) ? mmask[(v >> 1) & 1][i] & (1u << k) : 0;
}

struct wstats {
	unsigned long calls, stable, overlapped, fired[NOPS], sig_calls;
};

/* Call stress_fn_i and check which callbacks ran for it (see the top of the file). */
static void checked_call(int i, struct wstats *ws, int nested)
{
	unsigned long e1[NOPS], e2[NOPS], j;
	unsigned lo = 0, hi = 0, got;
	int k, stable = 1;
	long ret;

	for (k = 0; k < NOPS; k++)
		e1[k] = atomic_load(&ep[k]);
	fired = 0;
	ret = stress_fns[i]();
	got = fired;
	for (k = 0; k < NOPS; k++)
		e2[k] = atomic_load(&ep[k]);
	if (ret != i)
		FAIL("stress_fn_%d returned %ld", i, ret);
	for (k = 0; k < NOPS; k++) {
		unsigned klo = 1u << k, khi = 0;

		for (j = e1[k] / 2; j <= (e2[k] + 1) / 2; j++) {
			unsigned a = allowed_k(i, k, pcfg[k][j]);

			klo &= a;
			khi |= a;
		}
		lo |= klo;
		hi |= khi;
		if (e1[k] != e2[k] || (e1[k] & 1))
			stable = 0;
	}
	if (nested) {		/* RECURSION ops skip calls made while a callback runs */
		lo &= ~(1u << 3);
		hi &= ~(1u << 3);
	}
	if ((got & lo) != lo || (got & ~hi))
		FAIL("stress_fn_%d: callbacks %#x ran, expected at least %#x and at most %#x",
		     i, got, lo, hi);
	ws->calls++;
	if (stable)
		ws->stable++;
	else
		ws->overlapped++;
	for (k = 0; k < NOPS; k++)
		ws->fired[k] += (got >> k) & 1;
}

/* The runtime's per-thread callback depth (runtime/src/core/poke.h): a signal handler that
 * interrupted a callback (or the trampoline around it) makes nested calls. */
extern __thread int ftrt_cb_depth __attribute__((tls_model("initial-exec")));

static __thread struct wstats *my_ws;
static struct wstats *wstats_base;
static _Atomic pid_t worker_tid[64];

/* SIGUSR1: a checked call from a signal handler, on top of whatever the thread was doing. */
static void on_usr1(int sig)
{
	unsigned saved = fired;
	static _Atomic unsigned n;

	(void)sig;
	if (my_ws) {
		checked_call((int)(atomic_fetch_add(&n, 1) % NFUNC), my_ws, ftrt_cb_depth > 0);
		my_ws->sig_calls++;
	}
	fired = saved;
}

static void *worker(void *arg)
{
	struct wstats *ws = arg;
	unsigned r = (unsigned)(uintptr_t)ws * 2654435761u;
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	my_ws = ws;
	atomic_store(&worker_tid[ws - wstats_base], (pid_t)syscall(SYS_gettid));
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int i = (int)((r = r * 1103515245u + 12345u) >> 8) % NFUNC;

		checked_call(i, ws, 0);
	}
	/* no more handler calls into ws once we leave */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	my_ws = NULL;
	return NULL;
}

static atomic_int sig_stop;

static void *signaller(void *arg)
{
	int n = *(int *)arg, k;

	while (!atomic_load(&sig_stop)) {
		for (k = 0; k < n; k++) {
			pid_t t = atomic_load(&worker_tid[k]);

			if (t)
				syscall(SYS_tgkill, getpid(), t, SIGUSR1);
		}
		usleep(300);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void setup_ops(void)
{
	int k, i;

	for (k = 0; k < NOPS; k++) {
		ops[k].func = cb;
		ops[k].private = (void *)(intptr_t)k;
	}
	ops[2].flags = FTRACE_OPS_FL_SAVE_REGS;
	ops[3].flags = FTRACE_OPS_FL_RECURSION;
	if (ftrace_set_filter(&ops[1], pat1[0], (int)strlen(pat1[0]), 1) ||
	    ftrace_set_filter(&ops[2], "stress_fn_*5 stress_fn_1*", 25, 1) ||
	    ftrace_set_notrace(&ops[3], "stress_fn_*7", 12, 1))
		FAIL("setting filters");
	for (i = 0; i < NFUNC; i++) {
		mmask[0][i] = match_mask(i, 0);
		mmask[1][i] = match_mask(i, 1);
		for (k = 0; k < NOPS; k++)
			if (ftrace_ops_test(&ops[k], (unsigned long)stress_fns[i]) !=
			    (int)((mmask[0][i] >> k) & 1))
				FAIL("runtime and test disagree whether ops %d matches stress_fn_%d",
				     k, i);
	}
}

static int not_nop(const struct ftrace_func_info *info, void *data)
{
	(void)data;
	return info->state != FTRACE_SITE_NOP;
}

/* Built with -DCALLOPS (stress_funcs.S too): how many sites called a CALL_OPS caller at most. */
static unsigned long callops_seen;

static int count_callops(const struct ftrace_func_info *info, void *data)
{
	if (info->state == FTRACE_SITE_CALLOPS)
		++*(unsigned long *)data;
	return 0;
}

/* In a child forked while the parent's threads run and switch: one thread, stable config c. */
static void fork_child(unsigned c)
{
	int i, k;

	for (i = 0; i < NFUNC; i++) {
		fired = 0;
		if (stress_fns[i]() != i || fired != allowed(i, c))
			FAIL("child: stress_fn_%d: callbacks %#x, want %#x", i, fired, allowed(i, c));
	}
	for (k = 0; k < NOPS; k++)
		if ((c >> k) & 1 && unregister_ftrace_function(&ops[k]))
			FAIL("child: unregister %d", k);
	if (register_ftrace_function(&ops[0]))
		FAIL("child: register 0");
	for (i = 0; i < NFUNC; i++) {
		fired = 0;
		if (stress_fns[i]() != i || fired != 1u)
			FAIL("child: after re-registering: stress_fn_%d callbacks %#x", i, fired);
	}
	_exit(0);
}

/*
 * Switch ops k once (register <-> unregister, or for ops 1 with refilter, change its filter);
 * n[k] counts its states.  Returns the new state.
 */
static unsigned switch_ops(int k, int refilter, unsigned long *n)
{
	unsigned cur = pcfg[k][*n], nv = refilter ? cur ^ 2 : cur ^ 1;
	int err;

	if (*n + 1 >= MAXCFG)
		FAIL("too many switches");
	pcfg[k][*n + 1] = (unsigned char)nv;
	atomic_store(&ep[k], 2 * *n + 1);
	if (refilter)
		err = ftrace_set_filter(&ops[k], pat1[(nv >> 1) & 1], (int)strlen(pat1[(nv >> 1) & 1]), 1);
	else
		err = (nv & 1) ? register_ftrace_function(&ops[k]) : unregister_ftrace_function(&ops[k]);
	if (err)
		FAIL("ops %d: state %#x -> %#x: %d", k, cur, nv, err);
	++*n;
	atomic_store(&ep[k], 2 * *n);
	return nv;
}

/* "api" mode: one thread per ops switches it, all at once (the API serialises them). */
struct switcher_arg {
	int k;
	long max, done;
	double secs;
};

static void *switcher(void *arg)
{
	struct switcher_arg *a = arg;
	unsigned long n = 0;
	unsigned r = (unsigned)a->k * 7919u + 1;
	double t0 = now_s();

	while (a->done < a->max && now_s() - t0 < a->secs) {
		r = r * 1103515245u + 12345u;
		switch_ops(a->k, a->k == 1 && (r >> 8) % 3 == 0, &n);
		a->done++;
	}
	if (pcfg[a->k][n] & 1)
		switch_ops(a->k, 0, &n);	/* leave it unregistered */
	return NULL;
}

static void run_stress(int nthreads, long max_switches, double seconds, int with_signals,
		       int with_fork, int concurrent)
{
	pthread_t th[64], sig_thread;
	long forks = 0;
	struct wstats ws[64];
	unsigned long tot[NOPS] = { 0 }, calls = 0, stable = 0, overlapped = 0, sig_calls = 0;
	unsigned c = 0;
	unsigned r = 7;
	long n;
	double t0;
	int k, i;

	double sw_time[3] = { 0 }, t_prev;
	unsigned long nk[NOPS] = { 0 };
	long sw_count[3] = { 0 };

	setup_ops();
	memset(ws, 0, sizeof(ws));
	wstats_base = ws;
	if (with_signals) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, &ws[i]);
	if (with_signals)
		pthread_create(&sig_thread, NULL, signaller, &nthreads);
	t0 = t_prev = now_s();
	n = 0;
	if (concurrent) {
		pthread_t sw[NOPS];
		struct switcher_arg sa[NOPS];

		for (k = 0; k < NOPS; k++) {
			sa[k] = (struct switcher_arg){ k, max_switches / NOPS, 0, seconds };
			pthread_create(&sw[k], NULL, switcher, &sa[k]);
		}
		for (k = 0; k < NOPS; k++) {
			pthread_join(sw[k], NULL);
			n += sa[k].done;
		}
		printf("ok stress: switches per ops %ld/%ld/%ld/%ld\n", sa[0].done, sa[1].done,
		       sa[2].done, sa[3].done);
		max_switches = 0;	/* skip the single-switcher loop */
	}
	for (; n < max_switches && n + 1 < MAXCFG && now_s() - t0 < seconds; n++) {
		unsigned nc;

		r = r * 1103515245u + 12345u;
		k = (int)(r >> 8) % (NOPS + 1);
		if (k == NOPS) {	/* re-filter ops 1 (registered or not) */
			nc = c ^ 0x10;
			switch_ops(1, 1, &nk[1]);
		} else {
			nc = c ^ (1u << k);
			switch_ops(k, 0, &nk[k]);
		}
		if (with_fork && n % 10 == 0) {
			pid_t pid = fork();
			int st;

			if (pid < 0)
				FAIL("fork: %s", strerror(errno));
			if (pid == 0)
				fork_child(nc);
			if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
				FAIL("fork child: status %#x", st);
			forks++;
		}
		{
			int kind = k == NOPS ? 2 : ((nc >> k) & 1) ? 0 : 1;
			double t = now_s();

			sw_time[kind] += t - t_prev;
			sw_count[kind]++;
			t_prev = t;
		}
		c = nc;
		if (n % 64 == 0) {
			unsigned long nco = 0;

			ftrace_for_each_function(count_callops, &nco);
			if (nco > callops_seen)
				callops_seen = nco;
		}
	}
	if (with_signals) {
		atomic_store(&sig_stop, 1);
		pthread_join(sig_thread, NULL);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (k = 0; k < NOPS; k++)
		if ((c >> k) & 1 && unregister_ftrace_function(&ops[k]))
			FAIL("final unregister %d", k);
	for (i = 0; i < nthreads; i++) {
		sig_calls += ws[i].sig_calls;
		calls += ws[i].calls;
		stable += ws[i].stable;
		overlapped += ws[i].overlapped;
		for (k = 0; k < NOPS; k++)
			tot[k] += ws[i].fired[k];
	}
	for (k = 0; k < NOPS; k++)
		if (tot[k] != atomic_load(&cb_count[k]))
			FAIL("ops %d: callbacks counted %lu, callers saw %lu", k,
			     atomic_load(&cb_count[k]), tot[k]);
	if (atomic_load(&regs_missing))
		FAIL("a SAVE_REGS callback got no register frame");
	{
		struct ftrace_stats st;

		ftrace_get_stats(&st);
		/* what may stay: the shared caller and regs caller cloned near the code (and
		 * the CALL_OPS callers) */
#ifdef CALLOPS
		if (st.nr_trampolines > 4)
#else
		if (st.nr_trampolines > 2)
#endif
			FAIL("%lu trampolines left after unregistering everything",
			     st.nr_trampolines);
		if (ftrace_for_each_function(not_nop, NULL))
			FAIL("a site is still patched after unregistering everything");
		if (st.nr_sites < NFUNC)
			FAIL("only %lu sites known", st.nr_sites);
	}
	printf("ok stress: threads=%d switches=%ld in %.1f s, calls=%lu (stable %lu, overlapping a switch %lu), callbacks %lu/%lu/%lu/%lu\n",
	       nthreads, n, now_s() - t0, calls, stable, overlapped, tot[0], tot[1], tot[2], tot[3]);
	if (with_signals && !sig_calls)
		FAIL("no call from a signal handler");
	printf("ok stress: %lu calls from signal handlers, %ld forks\n", sig_calls, forks);
#ifdef CALLOPS
	if (!concurrent) {
		if (!callops_seen && n >= 64)
			FAIL("no site called a CALL_OPS caller");
		printf("ok stress: up to %lu CALL_OPS sites\n", callops_seen);
	}
#endif
	printf("ok stress: mean ms per register %.2f, unregister %.2f, filter change %.2f\n",
	       sw_count[0] ? 1e3 * sw_time[0] / sw_count[0] : 0,
	       sw_count[1] ? 1e3 * sw_time[1] / sw_count[1] : 0,
	       sw_count[2] ? 1e3 * sw_time[2] / sw_count[2] : 0);
}

/* ---- park: unregister waits for a thread inside the callback --------------------------- */

/* Is the page holding a mapped with execute permission (/proc/self/maps)? */
static int page_exec(unsigned long a)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], perm[8];
	int x = 0;

	if (!f)
		FAIL("/proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx %7s", &s, &e, perm) == 3 && a >= s && a < e) {
			x = perm[2] == 'x';
			break;
		}
	}
	fclose(f);
	return x;
}

static atomic_int parked, release_cb, inner_ret = 1;

static void park_cb(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		    struct ftrace_regs *fregs)
{
	(void)ip;
	(void)parent_ip;
	(void)fregs;
	atomic_store(&inner_ret, unregister_ftrace_function(op));
	atomic_store(&parked, 1);
	while (!atomic_load(&release_cb))
		usleep(200);
}

static struct ftrace_ops park_ops = { .func = park_cb };
static atomic_int unreg_done, unreg_ret = 1;

static void *park_caller(void *arg)
{
	(void)arg;
	stress_fns[0]();
	return NULL;
}

static void *unregisterer(void *arg)
{
	(void)arg;
	atomic_store(&unreg_ret, unregister_ftrace_function(&park_ops));
	atomic_store(&unreg_done, 1);
	return NULL;
}

static void run_park(void)
{
	struct ftrace_stats st;
	struct ftrace_func_info info;
	pthread_t a, b;
	double t0, tr;
	unsigned long tramp;

	if (ftrace_set_filter(&park_ops, "stress_fn_0", 11, 1))
		FAIL("filter");
	if (register_ftrace_function(&park_ops))
		FAIL("register");
	ftrace_get_stats(&st);
	if (ftrace_lookup_function((unsigned long)stress_fns[0], &info) ||
	    info.state != FTRACE_SITE_TRAMP || st.nr_trampolines != 1)
		FAIL("stress_fn_0 should call the ops' own trampoline (state %d, %lu trampolines)",
		     info.state, st.nr_trampolines);
	tramp = info.target;
	pthread_create(&a, NULL, park_caller, NULL);
	while (!atomic_load(&parked))
		usleep(1000);
	if (atomic_load(&inner_ret) != -EBUSY)
		FAIL("unregister from inside the callback returned %d, want -EBUSY",
		     atomic_load(&inner_ret));
	pthread_create(&b, NULL, unregisterer, NULL);
	t0 = now_s();
	while (now_s() - t0 < 0.3)
		usleep(10000);
	if (atomic_load(&unreg_done))
		FAIL("unregister returned while a thread was inside the callback");
	tr = now_s();
	atomic_store(&release_cb, 1);
	pthread_join(b, NULL);
	pthread_join(a, NULL);
	if (atomic_load(&unreg_ret))
		FAIL("unregister: %d", atomic_load(&unreg_ret));
	ftrace_get_stats(&st);
	if (st.nr_trampolines != 0 || st.nr_tramp_retired != 1)
		FAIL("after unregister: %lu trampolines in use (want 0), %lu retired (want 1)",
		     st.nr_trampolines, st.nr_tramp_retired);
	if (ftrace_lookup_function((unsigned long)stress_fns[0], &info) ||
	    info.state != FTRACE_SITE_NOP)
		FAIL("stress_fn_0 not a nop after unregister");
	if (!page_exec(tramp))
		FAIL("retired trampoline %#lx no longer executable before ftrace_synchronize", tramp);
	if (ftrace_synchronize())
		FAIL("ftrace_synchronize");
	ftrace_get_stats(&st);
	if (st.nr_tramp_retired != 0 || st.nr_tramp_released < 1 || page_exec(tramp))
		FAIL("trampoline memory not released by ftrace_synchronize (%lu retired, page %s)",
		     st.nr_tramp_retired, page_exec(tramp) ? "executable" : "gone");
	printf("ok park: unregister waited for the parked callback (released after %.2f s), "
	       "from inside a callback -EBUSY, trampoline released\n", tr - t0);
}

/* ---- nested: a signal handler that interrupted a trampoline's own instructions -------- */

static struct ftrace_ops nest_ops = { .func = cb };
static uintptr_t nest_lo, nest_hi;
static atomic_int nest_mode, nest_caught, nest_release, nest_stop;
static atomic_int nest_unreg = 1, nest_sync = 1, nest_retired = -1;
static atomic_ulong nest_pc;

static void on_usr2(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (pc < nest_lo || pc >= nest_hi || ftrt_cb_depth != 0 || atomic_load(&nest_caught))
		return;
	atomic_store(&nest_pc, pc);
	if (atomic_load(&nest_mode) == 1) {	/* self: the API from this handler */
		struct ftrace_stats st;

		atomic_store(&nest_unreg, unregister_ftrace_function(&nest_ops));
		atomic_store(&nest_sync, ftrace_synchronize());
		ftrace_get_stats(&st);
		atomic_store(&nest_retired, (int)st.nr_tramp_retired);
		atomic_store(&nest_caught, 1);
		return;
	}
	atomic_store(&nest_caught, 1);
	while (!atomic_load(&nest_release))
		;
}

static _Atomic pid_t nest_tid;

static void *nest_worker(void *arg)
{
	(void)arg;
	if (atomic_load(&nest_mode) == 2) {
		stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };

		if (!ss.ss_sp || sigaltstack(&ss, NULL))
			FAIL("sigaltstack");
	}
	atomic_store(&nest_tid, (pid_t)syscall(SYS_gettid));
	while (!atomic_load_explicit(&nest_stop, memory_order_relaxed))
		stress_fns[0]();
	return NULL;
}

static atomic_int nsync_done, nsync_ret = 1;

static void *nest_syncer(void *arg)
{
	(void)arg;
	atomic_store(&nsync_ret, ftrace_synchronize());
	atomic_store(&nsync_done, 1);
	return NULL;
}

static void run_nested(int mode)
{
	int self = mode == 1;
	struct ftrace_func_info info;
	struct ftrace_stats st;
	struct sigaction sa;
	pthread_t w, sy;
	long sent = 0;
	double t0;

	if (ftrace_set_filter(&nest_ops, "stress_fn_0", 11, 1) || register_ftrace_function(&nest_ops))
		FAIL("register");
	if (ftrace_lookup_function((unsigned long)stress_fns[0], &info) ||
	    info.state != FTRACE_SITE_TRAMP)
		FAIL("stress_fn_0 should call its own trampoline");
	nest_lo = info.target;		/* the trampoline's page holds nothing else */
	nest_hi = (info.target | 4095) + 1;
	atomic_store(&nest_mode, mode);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | (mode == 2 ? SA_ONSTACK : 0);
	sigaction(SIGUSR2, &sa, NULL);
	pthread_create(&w, NULL, nest_worker, NULL);
	while (!atomic_load(&nest_tid))
		usleep(100);
	t0 = now_s();
	while (!atomic_load(&nest_caught)) {
		if (now_s() - t0 > 30)
			FAIL("no signal landed on the trampoline's own instructions in 30 s (%ld sent)",
			     sent);
		syscall(SYS_tgkill, getpid(), atomic_load(&nest_tid), SIGUSR2);
		sent++;
		usleep(50);
	}
	if (self) {
		if (atomic_load(&nest_unreg) || atomic_load(&nest_sync) != -EAGAIN ||
		    atomic_load(&nest_retired) != 1)
			FAIL("from the handler: unregister %d (want 0), ftrace_synchronize %d (want "
			     "-EAGAIN), %d retired (want 1)", atomic_load(&nest_unreg),
			     atomic_load(&nest_sync), atomic_load(&nest_retired));
		usleep(20000);	/* the worker resumes in the retired trampoline and goes on */
	} else {
		if (unregister_ftrace_function(&nest_ops))
			FAIL("unregister while the handler waits");
		pthread_create(&sy, NULL, nest_syncer, NULL);
		t0 = now_s();
		while (now_s() - t0 < 0.3)
			usleep(10000);
		if (atomic_load(&nsync_done))
			FAIL("ftrace_synchronize returned (%d) while a handler had interrupted the "
			     "trampoline at %#lx", atomic_load(&nsync_ret), atomic_load(&nest_pc));
		if (!page_exec(nest_lo))
			FAIL("trampoline released while a handler had interrupted it");
		atomic_store(&nest_release, 1);
		pthread_join(sy, NULL);
		if (atomic_load(&nsync_ret))
			FAIL("ftrace_synchronize: %d", atomic_load(&nsync_ret));
	}
	if (ftrace_synchronize())
		FAIL("ftrace_synchronize after the handler returned");
	ftrace_get_stats(&st);
	if (st.nr_tramp_retired != 0 || page_exec(nest_lo))
		FAIL("trampoline not released after the handler returned");
	atomic_store(&nest_stop, 1);
	pthread_join(w, NULL);
	printf("ok nested %s: handler interrupted the trampoline at +%#lx after %ld signals; "
	       "memory kept until it returned\n", mode == 1 ? "self" : mode == 2 ? "altstack" : "park",
	       atomic_load(&nest_pc) - nest_lo, sent);
}

/* ---- syncfail: a failed wait never frees ---------------------------------------------- */

static void run_syncfail(void)
{
	static struct ftrace_ops fops = { .func = cb };
	struct ftrace_func_info info;
	struct ftrace_stats st;
	unsigned long tramp, before;
	int err;

	if (ftrace_set_filter(&fops, "stress_fn_0", 11, 1) || register_ftrace_function(&fops))
		FAIL("register");
	if (ftrace_lookup_function((unsigned long)stress_fns[0], &info) ||
	    info.state != FTRACE_SITE_TRAMP)
		FAIL("stress_fn_0 should call its own trampoline");
	tramp = info.target;
	stress_fns[0]();
	before = atomic_load(&cb_count[0]);
	if (before != 1)
		FAIL("callback count %lu, want 1", before);
	err = unregister_ftrace_function(&fops);
	if (err != -EIO)
		FAIL("unregister with a failing wait returned %d, want -EIO", err);
	ftrace_get_stats(&st);
	if (st.nr_trampolines != 1 || st.nr_tramp_retired != 0 || st.nr_tramp_released != 0 ||
	    !page_exec(tramp))
		FAIL("trampoline not kept after a failed wait: %lu in use, %lu retired, %lu "
		     "released, page %s", st.nr_trampolines, st.nr_tramp_retired,
		     st.nr_tramp_released, page_exec(tramp) ? "executable" : "gone");
	if (ftrace_lookup_function((unsigned long)stress_fns[0], &info) ||
	    info.state != FTRACE_SITE_NOP)
		FAIL("stress_fn_0 not a nop after unregister");
	stress_fns[0]();
	if (atomic_load(&cb_count[0]) != before)
		FAIL("callback called after unregister");
	if (ftrace_synchronize() != -EIO)
		FAIL("ftrace_synchronize with a failing wait did not fail");
	if (register_ftrace_function(&fops))
		FAIL("register again");
	stress_fns[0]();
	if (atomic_load(&cb_count[0]) != before + 1)
		FAIL("callback not called after registering again");
	printf("ok syncfail: unregister -EIO, trampoline kept (%lu in use)\n", st.nr_trampolines);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "stress";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "stress") || !strcmp(mode, "signals") || !strcmp(mode, "fork") ||
	    !strcmp(mode, "api")) {
		int threads = argc > 2 ? atoi(argv[2]) : 8;
		long max = argc > 3 ? atol(argv[3]) : 10000;
		double secs = argc > 4 ? atof(argv[4]) : 20;

		if (threads < 1 || threads > 64)
			FAIL("threads 1..64");
		run_stress(threads, max, secs, !strcmp(mode, "signals"), !strcmp(mode, "fork"),
			   !strcmp(mode, "api"));
	} else if (!strcmp(mode, "park")) {
		run_park();
	} else if (!strcmp(mode, "syncfail")) {
		run_syncfail();
	} else if (!strcmp(mode, "nested")) {
		const char *m = argc > 2 ? argv[2] : "park";

		run_nested(!strcmp(m, "self") ? 1 : !strcmp(m, "altstack") ? 2 : 0);
	} else {
		FAIL("unknown mode %s", mode);
	}
	return 0;
}
