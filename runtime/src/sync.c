// SPDX-License-Identifier: MIT
/*
 * sync.c - serialising all cores, and quiescence before freeing trampolines.
 *
 * ftrt_sync_cores(): membarrier(PRIVATE_EXPEDITED_SYNC_CORE) where the kernel has it;
 * else PRIVATE_EXPEDITED (an IPI whose return to user mode serialises on x86); else a
 * "signal round" in which every other thread runs a handler (sigreturn uses iret).
 *
 * ftrt_synchronize(): a signal round with a check.  Every other thread of the process is
 * sent a dedicated real-time signal; its handler records whether the thread is "inside"
 * (interrupted PC in a registered range, or ftrt_cb_depth > 0).  A thread seen outside at
 * any moment after the unpatch can never enter the unpatched trampolines again; a thread
 * seen inside is asked again later.  Threads that block the signal are examined through
 * /proc (see blocked_quiescent()).  Design notes: docs/live-patching.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "poke.h"

__thread int ftrt_cb_depth __attribute__((tls_model("initial-exec")));

/* ---- registered ranges (lock-free readers) --------------------------------------------- */

static struct {
	_Atomic uintptr_t start, end;
} ranges[FTRT_SYNC_MAX_RANGES];
static atomic_size_t nranges;		/* high-water mark */

int ftrt_sync_range_add(const void *start, size_t len)
{
	size_t i, n = atomic_load(&nranges);

	if (!start || !len)
		return -EINVAL;
	for (i = 0; i < n && atomic_load(&ranges[i].start); i++)
		;
	if (i == FTRT_SYNC_MAX_RANGES)
		return -ENOSPC;
	/* end first: a reader that sees start sees a valid (or larger old) end */
	atomic_store(&ranges[i].end, (uintptr_t)start + len);
	atomic_store(&ranges[i].start, (uintptr_t)start);
	if (i == n)
		atomic_store(&nranges, n + 1);
	return 0;
}

int ftrt_sync_range_del(const void *start)
{
	size_t i, n = atomic_load(&nranges);

	for (i = 0; i < n; i++) {
		if (atomic_load(&ranges[i].start) == (uintptr_t)start) {
			atomic_store(&ranges[i].start, 0);
			atomic_store(&ranges[i].end, 0);
			return 0;
		}
	}
	return -EINVAL;
}

int ftrt_sync_in_range(uintptr_t pc)
{
	size_t i, n = atomic_load(&nranges);

	for (i = 0; i < n; i++) {
		uintptr_t s = atomic_load(&ranges[i].start);

		if (s && pc >= s && pc < atomic_load(&ranges[i].end))
			return 1;
	}
	return 0;
}

/* ---- signal rounds ---------------------------------------------------------------------- */

enum { SLOT_PENDING, SLOT_INSIDE, SLOT_OUT };

struct slot {
	pid_t tid;
	_Atomic int state;
	int blocked_checks;
	struct timespec since;
};

struct round {
	struct slot *slots;
	size_t n;
	int check;		/* 0: any handler run counts (serialisation only) */
};

static struct round *_Atomic live_round;
static atomic_int round_users;
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static int sync_sig;		/* 0 until chosen */

static struct slot *find_slot(const struct round *r, pid_t tid)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->slots[mid].tid == tid)
			return &r->slots[mid];
		if (r->slots[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void sync_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct round *r;

	(void)sig;
	if (si->si_code != SI_TKILL || si->si_pid != getpid())
		goto out;	/* not from us: ignored (the signal was unused when chosen) */
	atomic_fetch_add(&round_users, 1);
	r = atomic_load(&live_round);
	if (r) {
		struct slot *s = find_slot(r, (pid_t)syscall(SYS_gettid));

		if (s) {
			int inside = r->check &&
				     (ftrt_cb_depth > 0 || ftrt_sync_in_range(ftrt_arch_pc(uc)));

			atomic_store(&s->state, inside ? SLOT_INSIDE : SLOT_OUT);
		}
	}
	atomic_fetch_sub(&round_users, 1);
out:
	errno = saved_errno;
}

/* Pick a real-time signal nobody uses (FTRT_SYNC_SIGNAL=n overrides), install the handler. */
static int sig_init(void)
{
	const char *env = getenv("FTRT_SYNC_SIGNAL");
	struct sigaction sa;
	int s;

	if (sync_sig)
		return 0;
	s = env ? atoi(env) : 0;
	if (!s) {
		for (s = SIGRTMAX; s > SIGRTMIN + 2; s--) {
			struct sigaction cur;

			if (!sigaction(s, NULL, &cur) && !(cur.sa_flags & SA_SIGINFO) &&
			    cur.sa_handler == SIG_DFL)
				break;
		}
		if (s == SIGRTMIN + 2)
			return -EBUSY;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sync_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(s, &sa, NULL))
		return -errno;
	sync_sig = s;
	return 0;
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct slot *)a)->tid, y = ((const struct slot *)b)->tid;

	return x < y ? -1 : x > y;
}

/* All threads of the process but the caller, sorted by tid. */
static int list_threads(struct slot **out, size_t *n)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct slot *v = NULL;
	size_t cap = 0, k = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || tid == self)
			continue;
		if (k == cap) {
			struct slot *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		memset(&v[k], 0, sizeof(v[k]));
		v[k++].tid = tid;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), tid_cmp);
	*out = v;
	*n = k;
	return 0;
}

static int send_sig(pid_t tid, int sig)
{
	return syscall(SYS_tgkill, getpid(), tid, sig) ? -errno : 0;
}

static long elapsed_us(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000000L + (now.tv_nsec - since->tv_nsec) / 1000;
}

/* Read a small /proc file into buf (NUL-terminated). */
static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, buf, size - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = 0;
	return 0;
}

static int signal_blocked(pid_t tid, int sig, unsigned long *switches)
{
	char path[64], buf[4096], *p;
	unsigned long long mask;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	if (read_small(path, buf, sizeof(buf)))
		return 0;
	*switches = 0;
	if ((p = strstr(buf, "voluntary_ctxt_switches:")))
		*switches += strtoul(p + 24, NULL, 10);
	if ((p = strstr(buf, "nonvoluntary_ctxt_switches:")))
		*switches += strtoul(p + 27, NULL, 10) << 32;
	p = strstr(buf, "SigBlk:");
	if (!p)
		return 0;
	mask = strtoull(p + 7, NULL, 16);
	return (mask >> (sig - 1)) & 1;
}

/*
 * Fallback for a thread that blocks the signal: if /proc shows it blocked in a system call
 * at a PC outside every range, with no word of its stack (sp .. end of the stack mapping)
 * pointing into a range, and it did not run while we looked, it cannot be inside: a thread
 * inside a callback has the return address into its trampoline on its stack.  Conservative
 * (stale words only make us wait longer).
 */
static int blocked_quiescent(pid_t tid)
{
	char path[64], buf[512], *p;
	unsigned long sw1 = 0, sw2 = 0;
	uintptr_t sp, pc, end = 0;
	int fd, ok = 1;

	if (!signal_blocked(tid, sync_sig, &sw1))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	if (read_small(path, buf, sizeof(buf)) || !strncmp(buf, "running", 7))
		return 0;
	/* "nr arg1 .. arg6 sp pc" (or "-1 sp pc"): the last two fields */
	p = buf + strlen(buf);
	while (p > buf && (p[-1] == '\n' || p[-1] == ' '))
		*--p = 0;
	{
		char *last = strrchr(buf, ' '), *prev;

		if (!last)
			return 0;
		*last = 0;
		prev = strrchr(buf, ' ');
		pc = strtoul(last + 1, NULL, 16);
		sp = strtoul(prev ? prev + 1 : buf, NULL, 16);
	}
	if (!sp || ftrt_sync_in_range(pc))
		return 0;
	/* end of the mapping that holds sp */
	{
		FILE *f = fopen("/proc/self/maps", "re");
		char line[512];

		if (!f)
			return 0;
		while (fgets(line, sizeof(line), f)) {
			unsigned long s, e;

			if (sscanf(line, "%lx-%lx", &s, &e) == 2 && sp >= s && sp < e) {
				end = e;
				break;
			}
		}
		fclose(f);
	}
	if (!end)
		return 0;
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (uintptr_t a = sp & ~(uintptr_t)7; a < end && ok;) {
		uintptr_t words[1024];
		size_t want = end - a < sizeof(words) ? end - a : sizeof(words);
		ssize_t r = pread(fd, words, want, (off_t)a);
		size_t k;

		if (r <= 0) {
			ok = 0;
			break;
		}
		for (k = 0; k < (size_t)r / sizeof(uintptr_t); k++)
			if (ftrt_sync_in_range(words[k]))
				ok = 0;
		a += r;
	}
	close(fd);
	if (!ok || !signal_blocked(tid, sync_sig, &sw2) || sw1 != sw2)
		return 0;
	return 1;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* Wait until every other thread has run the handler (and, with check, was seen outside). */
static int round_run(int check)
{
	struct round r = { NULL, 0, check };
	long backoff = 20;
	size_t i;
	int err;

	if ((err = sig_init()))
		return err;
	if ((err = list_threads(&r.slots, &r.n)))
		return err;
	if (!r.n) {
		free(r.slots);
		return 0;
	}
	atomic_store(&live_round, &r);
	for (i = 0; i < r.n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &r.slots[i].since);
		if (send_sig(r.slots[i].tid, sync_sig))
			atomic_store(&r.slots[i].state, SLOT_OUT);	/* gone */
	}
	for (;;) {
		int done = 1;

		for (i = 0; i < r.n; i++) {
			struct slot *s = &r.slots[i];
			int st = atomic_load(&s->state);

			if (st == SLOT_OUT)
				continue;
			done = 0;
			if (st == SLOT_INSIDE) {
				/* Seen inside: look again later (it costs the thread a wake-up). */
				atomic_store(&s->state, SLOT_PENDING);
				clock_gettime(CLOCK_MONOTONIC, &s->since);
				if (send_sig(s->tid, sync_sig))
					atomic_store(&s->state, SLOT_OUT);
				continue;
			}
			/* Pending: exited meanwhile?  Blocking the signal? */
			if (send_sig(s->tid, 0)) {
				atomic_store(&s->state, SLOT_OUT);
				continue;
			}
			if (elapsed_us(&s->since) > 5000 * (s->blocked_checks + 1)) {
				s->blocked_checks++;
				if (check && blocked_quiescent(s->tid))
					atomic_store(&s->state, SLOT_OUT);
			}
		}
		if (done)
			break;
		sleep_us(backoff);
		if (backoff < 2000)
			backoff *= 2;
	}
	atomic_store(&live_round, NULL);
	while (atomic_load(&round_users))
		sched_yield();
	free(r.slots);
	return 0;
}

int ftrt_synchronize(void)
{
	int err;

	if (ftrt_cb_depth > 0)
		return -EDEADLK;
	pthread_mutex_lock(&sync_lock);
	err = round_run(1);
	pthread_mutex_unlock(&sync_lock);
	return err;
}

/* ---- serialising cores ---------------------------------------------------------------- */

enum { CORES_UNSET, CORES_SYNC_CORE, CORES_EXPEDITED, CORES_SIGNALS };
static int cores;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

static void cores_init(void)
{
	const char *env = getenv("FTRT_SYNC_CORES");
	long q = membarrier(MEMBARRIER_CMD_QUERY);

	if (q < 0)
		q = 0;
	if ((!env || !strcmp(env, "membarrier-sync-core")) &&
	    (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
	    !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE)) {
		cores = CORES_SYNC_CORE;
		return;
	}
	if ((!env || !strcmp(env, "membarrier")) && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    !membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) {
		cores = CORES_EXPEDITED;
		return;
	}
	cores = CORES_SIGNALS;
}

const char *ftrt_sync_cores_method(void)
{
	if (cores == CORES_UNSET)
		cores_init();
	return cores == CORES_SYNC_CORE ? "membarrier-sync-core" :
	       cores == CORES_EXPEDITED ? "membarrier" : "signals";
}

int ftrt_sync_cores(void)
{
	int err;

	if (cores == CORES_UNSET)
		cores_init();
	switch (cores) {
	case CORES_SYNC_CORE:
		if (!membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
			return 0;
		break;
	case CORES_EXPEDITED:
		if (!membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
			return 0;
		break;
	}
	/* Signals (or membarrier failed unexpectedly): a round where any handler run counts. */
	pthread_mutex_lock(&sync_lock);
	err = round_run(0);
	pthread_mutex_unlock(&sync_lock);
	return err;
}

void ftrt_sync_atfork_child(void)
{
	/* membarrier registration belongs to the parent's address space */
	cores = CORES_UNSET;
	atomic_store(&live_round, NULL);
	atomic_store(&round_users, 0);
	pthread_mutex_init(&sync_lock, NULL);
}
