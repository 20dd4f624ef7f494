// SPDX-License-Identifier: Apache-2.0
/*
 * poke_test.c - tests of the live-patching engine (runtime/src/core/poke*.c, sync.c).
 *
 *   poke_test toggle BATCHES THREADS   threads call every function of poke_funcs.S while
 *                                      one thread switches their sites call <-> nop
 *   poke_test signals BATCHES THREADS  the same, and the callers are interrupted by signals
 *                                      whose handler calls the functions too
 *   poke_test blocked BATCHES THREADS  the same, one caller blocks every signal (SIGTRAP too)
 *   poke_test rawtrap BATCHES THREADS  the same, one caller blocks SIGTRAP by a raw system
 *                                      call (the runtime's wrappers do not see it)
 *   poke_test fork BATCHES THREADS     the same, and the main thread forks; each child checks
 *                                      its code and patches it itself
 *   poke_test spawn BATCHES THREADS    the same, and one more thread creates short-lived
 *                                      threads that call every function (with FTRT_PRECOW=test
 *                                      every batch parks the threads: one being created as
 *                                      they are listed must not run sites being written)
 *   poke_test refuse                   wrong old bytes / unsafe transitions change nothing
 *   poke_test rules                    x86-64: the instruction check's shortcuts give the
 *                                      verdicts of its rules, on every pairing of site forms
 *                                      and on random byte strings
 *   poke_test chain                    breakpoints that are not ours reach the program's
 *                                      handler, or kill by default
 *   poke_test chain-live BATCHES THREADS  the toggle test while one more thread executes
 *                                      foreign int3s in a loop: every one reaches the
 *                                      program's handler, also while a batch is live
 *   poke_test sync                     ftrt_synchronize() waits for a parked callback,
 *                                      a thread spinning in a trampoline, and a thread that
 *                                      blocks every signal; refuses from a callback
 *
 * Counting cannot miss calls: every function counts its calls after the site (pk_calls),
 * the site's target counts hits (pk_hits); hits <= calls always, and in quiet periods
 * hits grow exactly with calls while enabled and not at all while disabled.
 * Prints "ok ..." lines; exits non-zero with "FAIL: ..." on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/core/poke.h"

#ifndef NFUNC
#define NFUNC 256
#endif

extern unsigned char pk_base[], pk_end[], pk_park_fn[], pk_tramp[], pk_tramp_end[];
extern void pk_stub(void);
extern void *pk_stub_ptr;
extern volatile int pk_tramp_hold, pk_tramp_in;
extern volatile uint64_t pk_calls[NFUNC], pk_hits[NFUNC];

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static const unsigned offs[4] = { 0, 61, 59, 62 };
static const unsigned char NOP5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const unsigned char NOP6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static unsigned char *site(int i) { return pk_base + 128 * i + offs[i % 4]; }
typedef void (*fn_t)(void);
static fn_t fn(int i) { return (fn_t)(void *)site(i); }

static void put_rel(unsigned char *b, uintptr_t from_end, uintptr_t to)
{
	int32_t rel = (int32_t)(to - from_end);

	memcpy(b, &rel, 4);
}

/* The instructions a site can hold. */
enum form { F_NOP5, F_CALL5, F_NOP6, F_CALL5_90, F_NOP5_90, F_CALL67, F_CALLFF, F_BAD };

static void encode(int i, enum form f, unsigned char out[8], unsigned *len)
{
	uintptr_t s = (uintptr_t)site(i);

	memset(out, 0, 8);
	switch (f) {
	case F_NOP5: memcpy(out, NOP5, 5); *len = 5; break;
	case F_CALL5: out[0] = 0xe8; put_rel(out + 1, s + 5, (uintptr_t)pk_stub); *len = 5; break;
	case F_NOP6: memcpy(out, NOP6, 6); *len = 6; break;
	case F_CALL5_90: encode(i, F_CALL5, out, len); out[5] = 0x90; *len = 6; break;
	case F_NOP5_90: memcpy(out, NOP5, 5); out[5] = 0x90; *len = 6; break;
	case F_CALL67: out[0] = 0x67; out[1] = 0xe8; put_rel(out + 2, s + 6, (uintptr_t)pk_stub);
		*len = 6; break;
	case F_CALLFF: out[0] = 0xff; out[1] = 0x15; put_rel(out + 2, s + 6, (uintptr_t)&pk_stub_ptr);
		*len = 6; break;
	default: *len = 0;
	}
}

/* What a site holds now (reads the code). */
static enum form current(int i)
{
	static const enum form cand[] = { F_CALL5_90, F_NOP5_90, F_NOP6, F_CALL67, F_CALLFF,
					  F_NOP5, F_CALL5 };
	unsigned char b[8];
	unsigned len, k;

	for (k = 0; k < sizeof(cand) / sizeof(cand[0]); k++) {
		encode(i, cand[k], b, &len);
		if ((i % 4 < 2) != (len == 5))
			continue;
		if (!memcmp(site(i), b, len))
			return cand[k];
	}
	return F_BAD;
}

static int enabled_form(enum form f)
{
	return f == F_CALL5 || f == F_CALL5_90 || f == F_CALL67 || f == F_CALLFF;
}

static unsigned rnd(unsigned *s) { *s = *s * 1103515245u + 12345u; return *s >> 8; }

/*
 * Next form for site i, enabling or disabling it.  Types 0/1 toggle 5 bytes; type 2 is
 * converted once nop6 -> e8 rel32 90, then toggles with len 5 or 6; type 3 alternates
 * nop6 <-> 67 e8 / ff 15.
 */
static int make(int i, int enable, struct ftrt_poke *p, unsigned *r)
{
	enum form cur = current(i), next;
	unsigned l1, l2;

	if (cur == F_BAD)
		FAIL("site %d holds unknown bytes", i);
	if (enabled_form(cur) == enable)
		return 0;
	switch (i % 4) {
	case 0: case 1: next = enable ? F_CALL5 : F_NOP5; break;
	case 2:
		if (cur == F_NOP6) { next = F_CALL5_90; break; }
		if (rnd(r) & 1) {	/* the 5-byte view of the converted site */
			encode(i, cur, p->old, &l1);
			encode(i, enable ? F_CALL5_90 : F_NOP5_90, p->new, &l2);
			p->addr = site(i);
			p->len = 5;
			return 1;
		}
		next = enable ? F_CALL5_90 : F_NOP5_90;
		break;
	default: next = enable ? ((rnd(r) & 1) ? F_CALL67 : F_CALLFF) : F_NOP6; break;
	}
	encode(i, cur, p->old, &l1);
	encode(i, next, p->new, &l2);
	if (l1 != l2)
		FAIL("internal: length mismatch");
	p->addr = site(i);
	p->len = (unsigned char)l1;
	return 1;
}

/* Switch the given sites (mask NULL: all) on or off in one batch. */
static void switch_sites(const unsigned char *mask, int enable, unsigned *r)
{
	static struct ftrt_poke p[NFUNC];
	size_t n = 0, bad = 0;
	int i, err;

	for (i = 0; i < NFUNC; i++)
		if ((!mask || mask[i]) && make(i, enable, &p[n], r))
			n++;
	if (n > 1 && (rnd(r) & 3) == 0) {	/* any order is accepted */
		size_t k;

		for (k = n - 1; k > 0; k--) {
			size_t j = rnd(r) % (k + 1);
			struct ftrt_poke t = p[k];

			p[k] = p[j];
			p[j] = t;
		}
	}
	err = ftrt_text_poke_batch(p, n, &bad);
	if (err)
		FAIL("ftrt_text_poke_batch(%zu sites): %d (bad %zu)", n, err, bad);
}

/* ---- threads calling the functions ------------------------------------------------- */

static atomic_int stop;
static atomic_long total_calls;
static int block_all_in_worker0;
static int rawtrap_in_worker0;
static atomic_int workers_ready;	/* masks set: batches may begin */
static int with_signals;
static pthread_t workers[64];
static _Atomic pid_t worker_tid[64];
static int nworkers;
static int with_int3;
static atomic_long int3_done, int3_live;

static void call_all(unsigned start)
{
	int i;

	for (i = 0; i < NFUNC; i++)
		fn((start + i) % NFUNC)();
}

static void *worker(void *arg)
{
	long id = (long)arg;
	long calls = 0;

	worker_tid[id] = (pid_t)syscall(SYS_gettid);
	if (id == 0 && block_all_in_worker0) {
		/* a worker that blocks every signal (a common thread-pool pattern) */
		sigset_t all;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}
	if (id == 0 && rawtrap_in_worker0) {
		/* past the runtime's sigprocmask wrappers: SIGTRAP really blocked */
		unsigned long trap = 1UL << (SIGTRAP - 1);

		if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &trap, NULL, sizeof(trap)))
			FAIL("rt_sigprocmask: %s", strerror(errno));
	}
	atomic_fetch_add(&workers_ready, 1);
	while (!atomic_load(&stop)) {
		call_all((unsigned)id * 7);
		calls += NFUNC;
	}
	atomic_fetch_add(&total_calls, calls);
	return NULL;
}

static atomic_long sig_calls;
static int with_spawn;
static atomic_long spawned;

static void *spawned_caller(void *arg)
{
	(void)arg;
	call_all(0);
	atomic_fetch_add(&total_calls, NFUNC);
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t;
		int e = pthread_create(&t, NULL, spawned_caller, NULL);

		if (e)
			FAIL("pthread_create: %s", strerror(e));
		pthread_join(t, NULL);
		atomic_fetch_add(&spawned, 1);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	int i;

	(void)sig;
	for (i = 0; i < 16; i++)
		fn((i * 37) % NFUNC)();
	atomic_fetch_add(&sig_calls, 16);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int k;

		for (k = 0; k < nworkers; k++)
			if (worker_tid[k])
				syscall(SYS_tgkill, getpid(), worker_tid[k], SIGUSR1);
		usleep(200);
	}
	return NULL;
}

/*
 * Foreign breakpoints in a loop.  Site 0 holding 0xcc before and after one means it ran
 * while a batch was in its breakpoint phase (counted in int3_live).
 */
static void *int3er(void *arg)
{
	volatile unsigned char *s0 = site(0);

	(void)arg;
	while (!atomic_load(&stop)) {
		int live = *s0 == 0xcc;

		__asm__ __volatile__("int3");
		atomic_fetch_add(&int3_done, 1);
		if (live && *s0 == 0xcc)
			atomic_fetch_add(&int3_live, 1);
	}
	return NULL;
}

static atomic_int prog_traps;
static atomic_int prog_trap_code;

static void prog_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	atomic_store(&prog_trap_code, si->si_code);
	atomic_fetch_add(&prog_traps, 1);
}

static void check_sum(const char *when)
{
	int i;

	for (i = 0; i < NFUNC; i++)
		if (pk_hits[i] > pk_calls[i])
			FAIL("%s: function %d hit %lu times but called %lu times", when, i,
			     (unsigned long)pk_hits[i], (unsigned long)pk_calls[i]);
}

/* Quiet period: only this thread calls; enabled sites count exactly, disabled not at all. */
static void check_exact(const char *when)
{
	uint64_t h0[NFUNC], c0[NFUNC];
	int i, k;

	for (i = 0; i < NFUNC; i++) {
		h0[i] = pk_hits[i];
		c0[i] = pk_calls[i];
	}
	for (k = 0; k < 3; k++)
		call_all(0);
	for (i = 0; i < NFUNC; i++) {
		uint64_t dc = pk_calls[i] - c0[i], dh = pk_hits[i] - h0[i];
		int en = enabled_form(current(i));

		if (dc != 3 || dh != (en ? 3u : 0u))
			FAIL("%s: function %d (%s) calls +%lu hits +%lu", when, i,
			     en ? "enabled" : "disabled", (unsigned long)dc, (unsigned long)dh);
	}
}

static void fork_child_check(unsigned r)
{
	int i;

	/* The parent's patch lock was held across fork: every site is whole. */
	for (i = 0; i < NFUNC; i++)
		if (current(i) == F_BAD)
			FAIL("child: site %d torn", i);
	check_exact("child before patching");
	switch_sites(NULL, 1, &r);	/* through the child's own /proc/self/mem */
	check_exact("child after enabling");
	switch_sites(NULL, 0, &r);
	check_exact("child after disabling");
	_exit(0);
}

static void run_toggle(int batches, int nthreads, int mode_signals, int mode_fork)
{
	unsigned char mask[NFUNC];
	pthread_t sig_thread, int3_thread, spawn_thread;
	unsigned r = 12345;
	long b;
	int i, forks = 0;

	nworkers = nthreads;
	with_signals = mode_signals;
	if (mode_signals) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&workers[i], NULL, worker, (void *)(long)i);
	while (atomic_load(&workers_ready) < nthreads)
		sched_yield();	/* a mask set during a batch is not seen by it */
	if (mode_signals)
		pthread_create(&sig_thread, NULL, signaller, NULL);
	if (with_spawn)
		pthread_create(&spawn_thread, NULL, spawner, NULL);
	if (with_int3) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = prog_trap;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGTRAP, &sa, NULL);
		pthread_create(&int3_thread, NULL, int3er, NULL);
	}

	for (b = 0; b < batches; b++) {
		int en = (int)(b & 1), k;

		switch (b % 3) {
		case 0:		/* every site */
			switch_sites(NULL, en, &r);
			break;
		case 1:		/* a random subset */
			for (k = 0; k < NFUNC; k++)
				mask[k] = rnd(&r) & 1;
			switch_sites(mask, en, &r);
			break;
		default:	/* one site */
			memset(mask, 0, sizeof(mask));
			mask[rnd(&r) % NFUNC] = 1;
			switch_sites(mask, en, &r);
			break;
		}
		if (mode_fork && b % (batches / 40 + 1) == 0) {
			pid_t pid = fork();
			int st;

			if (pid < 0)
				FAIL("fork: %s", strerror(errno));
			if (pid == 0)
				fork_child_check(r);
			if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
				FAIL("fork child %d: status %#x", (int)pid, st);
			forks++;
		}
	}
	if (with_int3) {
		/* Until a foreign int3 has run during a live batch (bounded: 30 s). */
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			switch_sites(NULL, 1, &r);
			switch_sites(NULL, 0, &r);
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (!atomic_load(&int3_live) && t1.tv_sec - t0.tv_sec < 30);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i], NULL);
	if (mode_signals)
		pthread_join(sig_thread, NULL);
	if (with_spawn) {
		pthread_join(spawn_thread, NULL);
		if (!atomic_load(&spawned))
			FAIL("spawn: no thread was created during the batches");
		printf("ok spawn: %ld threads created during the batches\n", atomic_load(&spawned));
	}
	if (with_int3) {
		pthread_join(int3_thread, NULL);
		if (atomic_load(&prog_traps) != atomic_load(&int3_done))
			FAIL("chain-live: %ld foreign int3 executed, the program's handler saw %d",
			     atomic_load(&int3_done), atomic_load(&prog_traps));
		if (!atomic_load(&int3_live))
			FAIL("chain-live: no foreign int3 ran while a batch was live");
		if (atomic_load(&prog_trap_code) != SI_KERNEL)
			FAIL("chain-live: si_code %d", atomic_load(&prog_trap_code));
		printf("ok chain-live: %ld foreign int3 reached the program's handler, %ld during a live batch\n",
		       atomic_load(&int3_done), atomic_load(&int3_live));
	}
	check_sum("after toggling");
	for (i = 0; i < NFUNC; i++)
		if (current(i) == F_BAD)
			FAIL("site %d torn at the end", i);
	check_exact("final state");
	switch_sites(NULL, 1, &r);
	check_exact("all enabled");
	switch_sites(NULL, 0, &r);
	check_exact("all disabled");
	printf("ok toggle: batches=%ld threads=%d calls=%ld signal-calls=%ld forks=%d method=%s cores=%s\n",
	       b, nthreads, atomic_load(&total_calls), atomic_load(&sig_calls), forks,
	       ftrt_poke_method(), ftrt_sync_cores_method());
}

/* ---- the instruction check's shortcuts (x86-64) -------------------------------------- */

#if defined(__x86_64__)
int ftrt_arch_check(const unsigned char *old, const unsigned char *new, unsigned len,
		    unsigned *early, const char **why);
int ftrt_arch_check_rules(const unsigned char *old, const unsigned char *new, unsigned len,
			  unsigned *early, const char **why);

static long rules_compared;

static void rules_same(const unsigned char *o, const unsigned char *n, unsigned len)
{
	const char *w1 = NULL, *w2 = NULL;
	unsigned e1 = 99, e2 = 98;
	int r1 = ftrt_arch_check(o, n, len, &e1, &w1);
	int r2 = ftrt_arch_check_rules(o, n, len, &e2, &w2);

	if (r1 != r2 || (!r1 && e1 != e2) || (r1 && w1 != w2)) {
		char a[32], b[32];

		for (unsigned k = 0; k < len; k++) {
			snprintf(a + 2 * k, 3, "%02x", o[k]);
			snprintf(b + 2 * k, 3, "%02x", n[k]);
		}
		FAIL("check %s -> %s (len %u): %d early %u, rules %d early %u", a, b, len, r1, e1, r2, e2);
	}
	rules_compared++;
}

static void run_rules(void)
{
	/* the forms a site takes, 5 and 6 bytes (rel32 and free bytes varied) */
	static const unsigned char f5[][5] = {
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x0f, 0x1f, 0x44, 0x00, 0x90 },
		{ 0xe8, 0x10, 0x20, 0x30, 0x40 }, { 0xe8, 0xf0, 0xff, 0xff, 0xff },
		{ 0xe9, 0x10, 0x20, 0x30, 0x40 }, { 0x90, 0x90, 0x90, 0x90, 0x90 },
		{ 0xc3, 0x90, 0x90, 0x90, 0x90 }, { 0x90, 0xe8, 0x01, 0x02, 0x03 },
	};
	static const unsigned char f6[][6] = {
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x90 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x5a }, { 0x67, 0xe8, 0x10, 0x20, 0x30, 0x40 },
		{ 0xff, 0x15, 0x10, 0x20, 0x30, 0x40 }, { 0xe8, 0x10, 0x20, 0x30, 0x40, 0x90 },
		{ 0xe9, 0x10, 0x20, 0x30, 0x40, 0x90 }, { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x90 },
		{ 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 }, { 0x90, 0xe8, 0x10, 0x20, 0x30, 0x40 },
		{ 0xe8, 0x10, 0x20, 0x30, 0x40, 0xc3 },
	};
	static const unsigned char alphabet[] = { 0x90, 0xe8, 0xe9, 0x67, 0xff, 0x15, 0x0f,
						  0x1f, 0x44, 0x00, 0x66, 0xc3, 0x5a };
	unsigned char o[8], n[8];
	unsigned seed = 12345;

	for (size_t i = 0; i < sizeof(f5) / sizeof(f5[0]); i++)
		for (size_t j = 0; j < sizeof(f5) / sizeof(f5[0]); j++)
			rules_same(f5[i], f5[j], 5);
	for (size_t i = 0; i < sizeof(f6) / sizeof(f6[0]); i++)
		for (size_t j = 0; j < sizeof(f6) / sizeof(f6[0]); j++)
			rules_same(f6[i], f6[j], 6);
	/* strings of the site forms' bytes, every length, often valid */
	for (long it = 0; it < 2000000; it++) {
		unsigned len = 1 + (seed = seed * 1103515245u + 12345u) % 8;

		for (unsigned k = 0; k < 8; k++) {
			seed = seed * 1103515245u + 12345u;
			o[k] = alphabet[(seed >> 16) % sizeof(alphabet)];
			seed = seed * 1103515245u + 12345u;
			n[k] = alphabet[(seed >> 16) % sizeof(alphabet)];
		}
		if (it & 1)	/* start both from a site form: the shortcuts' cases */
			memcpy(o, len == 6 ? f6[it / 2 % 3] : f5[it / 2 % 2], len == 6 ? 6 : len < 5 ? len : 5);
		rules_same(o, n, len);
		if (it % 3 == 0)
			rules_same(n, o, len);
	}
	printf("ok rules: %ld transitions\n", rules_compared);
}
#else
static void run_rules(void)
{
	printf("ok rules: not this architecture\n");
}
#endif

/* ---- refusals ------------------------------------------------------------------------ */

static void run_refuse(void)
{
	struct ftrt_poke p[3];
	unsigned char before[3][8];
	unsigned r = 1, len;
	size_t bad = 99;
	int err, k;

	for (k = 0; k < 3; k++)
		if (!make(k, 1, &p[k], &r))
			FAIL("site %d not disabled at start", k);
	for (k = 0; k < 3; k++)
		memcpy(before[k], site(k), 8);
	p[1].old[4] ^= 0x01;		/* wrong expectation (a nop5 with another displacement) */
	err = ftrt_text_poke_batch(p, 3, &bad);
	if (err != -EINVAL || bad != 1)
		FAIL("mismatch: got %d bad %zu, want -EINVAL bad 1", err, bad);
	for (k = 0; k < 3; k++)
		if (memcmp(before[k], site(k), 8))
			FAIL("mismatch: site %d changed although the batch was refused", k);

	/* Convert site 2 (type 2) once, then the unsafe way back must be refused. */
	make(2, 1, &p[0], &r);
	if (ftrt_text_poke_batch(p, 1, &bad))
		FAIL("converting nop6 -> e8 rel32 90");
	encode(2, F_CALL5_90, p[0].old, &len);
	encode(2, F_NOP6, p[0].new, &len);
	p[0].addr = site(2);
	p[0].len = 6;
	err = ftrt_text_poke_batch(p, 1, &bad);
	if (err != -EINVAL || bad != 0 || current(2) != F_CALL5_90)
		FAIL("e8 rel32 90 -> nop6 must be refused (got %d)", err);

	/* Unknown instructions and overlapping entries are refused. */
	memcpy(p[0].old, site(0), 5);
	memset(p[0].new, 0x90, 5);
	p[0].new[0] = 0xc3;
	p[0].addr = site(0);
	p[0].len = 5;
	if (ftrt_text_poke_batch(p, 1, &bad) != -EINVAL)
		FAIL("ret as new instruction must be refused");
	make(0, 1, &p[0], &r);
	p[1] = p[0];
	p[1].addr = site(0) + 2;
	if (ftrt_text_poke_batch(p, 2, &bad) != -EINVAL)
		FAIL("overlapping sites must be refused");
	if (current(0) != F_NOP5)
		FAIL("site 0 changed by a refused batch");
	/* Unmapped address: reported, not a crash. */
	make(0, 1, &p[0], &r);
	p[0].addr = (void *)16;
	bad = 99;
	if (ftrt_text_poke_batch(p, 1, &bad) != -EINVAL || bad != 0)
		FAIL("unmapped site must be refused");
	/* Back to the start state. */
	make(2, 0, &p[0], &r);
	if (ftrt_text_poke_batch(p, 1, &bad))
		FAIL("disabling site 2");
	printf("ok refuse\n");
}

/* ---- quiescence ------------------------------------------------------------------------ */

static atomic_int cb_parked, cb_release, cb_edeadlk = 1;

void pk_wrapper(void);
void pk_wrapper(void)
{
	ftrt_cb_enter();
	if (ftrt_synchronize() != -EDEADLK)
		atomic_store(&cb_edeadlk, 0);
	atomic_store(&cb_parked, 1);
	while (!atomic_load(&cb_release))
		usleep(100);	/* a syscall: the thread sleeps inside the callback */
	ftrt_cb_exit();
}

static void set_park(int enable)
{
	struct ftrt_poke p;
	size_t bad;

	p.addr = pk_park_fn;
	p.len = 5;
	memcpy(enable ? p.old : p.new, NOP5, 5);
	(enable ? p.new : p.old)[0] = 0xe8;
	put_rel((enable ? p.new : p.old) + 1, (uintptr_t)pk_park_fn + 5, (uintptr_t)pk_tramp);
	if (ftrt_text_poke_batch(&p, 1, &bad))
		FAIL("patching pk_park_fn");
}

static atomic_int sync_done;
static struct timespec sync_end;

static void *syncer(void *arg)
{
	int err;

	(void)arg;
	err = ftrt_synchronize();
	clock_gettime(CLOCK_MONOTONIC, &sync_end);
	if (err)
		FAIL("ftrt_synchronize: %d", err);
	atomic_store(&sync_done, 1);
	return NULL;
}

static void *parker(void *arg)
{
	if (arg) {		/* block every signal: only the /proc fallback can see us */
		sigset_t all;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}
	((fn_t)(void *)pk_park_fn)();
	return NULL;
}

static double ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < ms)
		usleep(1000);
}

/* Park a thread (in a callback or in the trampoline), unpatch, check synchronize waits. */
static void sync_case(const char *name, int in_tramp, int block_signals)
{
	pthread_t t, s;
	struct timespec released;
	double waited;

	atomic_store(&cb_parked, 0);
	atomic_store(&cb_release, 0);
	atomic_store(&sync_done, 0);
	pk_tramp_in = 0;
	pk_tramp_hold = in_tramp;
	set_park(1);
	pthread_create(&t, NULL, parker, block_signals ? (void *)1 : NULL);
	while (in_tramp ? !pk_tramp_in : !atomic_load(&cb_parked))
		usleep(100);
	set_park(0);		/* no new thread can enter now */
	pthread_create(&s, NULL, syncer, NULL);
	sleep_ms(200);		/* the sync signal interrupts sleeps: loop on the clock */
	if (atomic_load(&sync_done))
		FAIL("sync %s: ftrt_synchronize returned while a thread was inside", name);
	clock_gettime(CLOCK_MONOTONIC, &released);
	pk_tramp_hold = 0;
	atomic_store(&cb_release, 1);
	pthread_join(s, NULL);
	pthread_join(t, NULL);
	waited = ms_since(&released) - ms_since(&sync_end);
	if (!atomic_load(&sync_done) || waited < 0)
		FAIL("sync %s: returned before the release", name);
	printf("ok sync %s: waited while inside, returned %.2f ms after the release\n", name,
	       waited);
}

static void *blocked_idle(void *arg)
{
	sigset_t all;
	int *fds = arg;
	char c;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (read(fds[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static atomic_int program_rt_hits;

static void program_rt_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&program_rt_hits, 1);
}

static atomic_int churn_stop;
static atomic_long churned;

static void *short_lived(void *arg)
{
	return arg;
}

static void *churner(void *arg)
{
	(void)arg;
	while (!atomic_load(&churn_stop)) {
		pthread_t t;

		if (pthread_create(&t, NULL, short_lived, NULL) == 0) {
			pthread_join(t, NULL);
			atomic_fetch_add(&churned, 1);
		}
	}
	return NULL;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static atomic_int idle_tid;

static void *idle_tid_thread(void *arg)
{
	(void)arg;
	atomic_store(&idle_tid, (int)syscall(SYS_gettid));
	for (;;)
		pause();
	return NULL;
}

/*
 * A thread stopped by a debugger never runs the handler and does not block the signal:
 * ftrt_synchronize() must judge it from /proc (it would wait forever).  A child process
 * ptrace-stops one idle thread (PTRACE_SEIZE + PTRACE_INTERRUPT) while we synchronize.
 */
static void sync_stopped(void)
{
	int go[2], done[2], st;
	struct timespec t0;
	pthread_t t;
	pid_t tracer, tid;
	char c;

	atomic_store(&idle_tid, 0);
	pthread_create(&t, NULL, idle_tid_thread, NULL);
	while (!(tid = atomic_load(&idle_tid)))
		usleep(100);
	if (pipe(go) || pipe(done))
		FAIL("pipe");
	tracer = fork();
	if (tracer < 0)
		FAIL("fork");
	if (!tracer) {
		char r = 'x';

		if (!ptrace(PTRACE_SEIZE, tid, NULL, NULL) && !ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) &&
		    waitpid(tid, &st, __WALL) == tid && WIFSTOPPED(st))
			r = 's';
		if (write(go[1], &r, 1) != 1 || read(done[0], &r, 1) < 0)
			_exit(1);
		_exit(0);	/* the tracee is detached (and resumed) as we exit */
	}
	prctl(PR_SET_PTRACER, tracer, 0, 0, 0);	/* Yama: let our child trace us */
	if (read(go[0], &c, 1) != 1)
		FAIL("tracer");
	if (c != 's') {
		printf("skip sync stopped: ptrace not allowed here\n");
	} else {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (ftrt_synchronize())
			FAIL("ftrt_synchronize with a stopped thread");
		printf("ok sync stopped: a thread stopped by a tracer, took %.2f ms\n", ms_since(&t0));
	}
	if (write(done[1], "x", 1) != 1)
		FAIL("write");
	waitpid(tracer, &st, 0);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	pthread_cancel(t);
	pthread_join(t, NULL);
}

static void run_sync(void)
{
	struct timespec t0;
	pthread_t idle[4], bl;
	int fds[2], i;

	if (ftrt_sync_range_add(pk_tramp, (size_t)(pk_tramp_end - pk_tramp)))
		FAIL("ftrt_sync_range_add");
	/* No thread inside: returns promptly even with idle threads (blocked in syscalls). */
	for (i = 0; i < 4; i++)
		pthread_create(&idle[i], NULL, idle_thread, NULL);
	if (pipe(fds))
		FAIL("pipe");
	pthread_create(&bl, NULL, blocked_idle, fds);
	sleep_ms(20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ftrt_synchronize())
		FAIL("ftrt_synchronize with idle threads");
	printf("ok sync idle: 5 idle threads (one blocking all signals) took %.2f ms\n",
	       ms_since(&t0));

	/* The program takes our signal for itself: the next round moves to another one. */
	{
		int sig, taken = 0;

		for (sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
			struct sigaction cur;

			if (!sigaction(sig, NULL, &cur) && (cur.sa_flags & SA_SIGINFO)) {
				struct sigaction mine;

				memset(&mine, 0, sizeof(mine));
				mine.sa_handler = program_rt_handler;
				sigaction(sig, &mine, NULL);
				taken = sig;
			}
		}
		if (!taken)
			FAIL("no real-time signal handler of the runtime found");
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (ftrt_synchronize())
			FAIL("ftrt_synchronize after the program took signal %d", taken);
		if (atomic_load(&program_rt_hits))
			FAIL("the program's handler of signal %d got our signals", taken);
		printf("ok sync signal taken: the program took signal %d, next call %.2f ms\n",
		       taken, ms_since(&t0));
	}

	/* Threads being created and exiting all the time do not hold it up. */
	{
		pthread_t ch;
		double worst = 0;
		int k;

		atomic_store(&churn_stop, 0);
		pthread_create(&ch, NULL, churner, NULL);
		for (k = 0; k < 50; k++) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			if (ftrt_synchronize())
				FAIL("ftrt_synchronize with thread churn");
			if (ms_since(&t0) > worst)
				worst = ms_since(&t0);
		}
		atomic_store(&churn_stop, 1);
		pthread_join(ch, NULL);
		printf("ok sync churn: 50 calls while %ld threads came and went, worst %.2f ms\n",
		       atomic_load(&churned), worst);
	}

	sync_stopped();

	sync_case("callback", 0, 0);
	if (!atomic_load(&cb_edeadlk))
		FAIL("ftrt_synchronize inside a callback did not return -EDEADLK");
	printf("ok sync from a callback: -EDEADLK\n");
	sync_case("trampoline", 1, 0);
	sync_case("callback-signals-blocked", 0, 1);

	if (write(fds[1], "x", 1) != 1)
		FAIL("write");
	pthread_join(bl, NULL);
	for (i = 0; i < 4; i++)
		pthread_cancel(idle[i]);
	for (i = 0; i < 4; i++)
		pthread_join(idle[i], NULL);
	if (ftrt_sync_range_del(pk_tramp))
		FAIL("ftrt_sync_range_del");
}

/* ---- chaining to the program's SIGTRAP handling ------------------------------------- */

static void one_batch(void)
{
	unsigned r = 3;

	switch_sites(NULL, 1, &r);
	switch_sites(NULL, 0, &r);
}

static void run_chain(void)
{
	struct sigaction sa;
	pid_t pid;
	int st;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	one_batch();		/* installs the runtime's handler in front of ours */
	__asm__ __volatile__("int3");
	if (atomic_load(&prog_traps) != 1 || atomic_load(&prog_trap_code) != SI_KERNEL)
		FAIL("chain: the program's handler did not get the foreign int3 (%d)",
		     atomic_load(&prog_traps));
	__asm__ __volatile__(".byte 0xcd, 0x03");	/* int $3 */
	if (atomic_load(&prog_traps) != 2)
		FAIL("chain: the program's handler did not get int $3");
	raise(SIGTRAP);
	if (atomic_load(&prog_traps) != 3 || atomic_load(&prog_trap_code) != SI_TKILL)
		FAIL("chain: the program's handler did not get raise(SIGTRAP)");

	/* The program replaces the handler after us: the next batch puts ours in front again. */
	sigaction(SIGTRAP, &sa, NULL);
	one_batch();
	__asm__ __volatile__("int3");
	if (atomic_load(&prog_traps) != 4)
		FAIL("chain: after re-installation");

	/* Default disposition: a foreign int3 still kills with SIGTRAP. */
	pid = fork();
	if (pid == 0) {
		signal(SIGTRAP, SIG_DFL);
		one_batch();
		__asm__ __volatile__("int3");
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFSIGNALED(st) || WTERMSIG(st) != SIGTRAP)
		FAIL("chain: a foreign int3 with the default disposition: status %#x", st);
	printf("ok chain: foreign int3, int $3 and raise reach the program's handler; default kills\n");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "toggle";
	int batches = argc > 2 ? atoi(argv[2]) : 2000;
	int threads = argc > 3 ? atoi(argv[3]) : 4;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (threads < 1 || threads > 64)
		FAIL("threads must be 1..64");
	if (!strcmp(mode, "toggle"))
		run_toggle(batches, threads, 0, 0);
	else if (!strcmp(mode, "blocked")) {
		block_all_in_worker0 = 1;
		run_toggle(batches, threads, 0, 0);
	} else if (!strcmp(mode, "rawtrap")) {
		rawtrap_in_worker0 = 1;
		run_toggle(batches, threads, 0, 0);
	} else if (!strcmp(mode, "signals"))
		run_toggle(batches, threads, 1, 0);
	else if (!strcmp(mode, "fork"))
		run_toggle(batches, threads, 0, 1);
	else if (!strcmp(mode, "spawn")) {
		with_spawn = 1;
		run_toggle(batches, threads, 0, 0);
	}
	else if (!strcmp(mode, "refuse"))
		run_refuse();
	else if (!strcmp(mode, "rules"))
		run_rules();
	else if (!strcmp(mode, "chain"))
		run_chain();
	else if (!strcmp(mode, "chain-live")) {
		with_int3 = 1;
		run_toggle(batches, threads, 0, 0);
	}
	else if (!strcmp(mode, "sync"))
		run_sync();
	else
		FAIL("unknown mode %s", mode);
	return 0;
}
