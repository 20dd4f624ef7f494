// SPDX-License-Identifier: Apache-2.0
/*
 * poke.c - batched cross-modification of code under running threads.
 *
 * For a batch of sites (docs/live-patching.md has the full argument):
 *   0. bytes of new that a thread may run after the first new instruction and that lie in
 *      the free displacement byte of an old nop (nop6 -> "e8 rel32 90") are written;
 *   1. an int3 is written on the first byte of every site; all cores are serialised;
 *   2. the tails (bytes 1..len-1) are written; all cores are serialised;
 *   3. the first bytes are written; all cores are serialised.
 * A thread that reaches a site meanwhile traps; the SIGTRAP handler finds the site in the
 * published batch (lock-free binary search) and emulates its new instruction.  A trap that
 * is handled only after the batch is over finds no int3 any more and re-executes the site.
 * Other breakpoints are passed to the previous SIGTRAP disposition.
 *
 * Architectures whose sites are one instruction word (FTRT_ARCH_SITE_ATOMIC: arm64) skip the
 * breakpoint: each site is replaced by one single-copy-atomic store (apply_atomic()).
 *
 * Code is written through /proc/self/mem (pages stay r-x throughout: the kernel writes
 * through its own mapping of the page, breaking copy-on-write as a debugger's poke does), or,
 * where that is not allowed, by making the pages rwx for the duration of the batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "fdutil.h"
#include "poke.h"

/* ---- reporting ------------------------------------------------------------------------ */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, n) < 0)
		return;
}

/* "xx xx …" of b[0, len) into out (size bytes; bytes that do not fit are left out) */
static void hex(char *out, size_t size, const unsigned char *b, unsigned len)
{
	static const char d[] = "0123456789abcdef";
	unsigned i;

	if (len > size / 3)
		len = (unsigned)(size / 3);
	for (i = 0; i < len; i++) {
		*out++ = d[b[i] >> 4];
		*out++ = d[b[i] & 15];
		*out++ = i + 1 < len ? ' ' : 0;
	}
	if (!len && size)
		*out = 0;
}

/* ---- locks and fork ------------------------------------------------------------------- */

/*
 * The API lock is a ticket lock (FIFO): with a plain mutex a thread that registers and
 * unregisters in a loop re-takes it before a waiter wakes, and other threads starve.
 * Waiters sleep on a futex.
 */
static atomic_uint api_next, api_serving;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static int fork_held_api;

static void futex_wait(atomic_uint *addr, unsigned val)
{
	syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *addr)
{
	syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static int api_trylock(void)
{
	unsigned t = atomic_load(&api_next);

	if (atomic_load(&api_serving) != t ||
	    !atomic_compare_exchange_strong(&api_next, &t, t + 1))
		return -EBUSY;
	return 0;
}

int ftrt_lock(void)
{
	unsigned t, cur;

	if (ftrt_cb_depth > 0)
		return api_trylock();
	t = atomic_fetch_add(&api_next, 1);
	while ((cur = atomic_load(&api_serving)) != t)
		futex_wait(&api_serving, cur);
	return 0;
}

void ftrt_unlock(void)
{
	atomic_fetch_add(&api_serving, 1);
	futex_wake_all(&api_serving);
}

/* ---- the published batch (read by the SIGTRAP handler) ------------------------------- */

struct batch {
	const struct ftrt_poke_site *sites;
	size_t n;
};

static struct batch the_batch;
static struct batch *_Atomic live_batch;
static atomic_uint batch_seq;		/* odd while a batch is live */
static atomic_int trap_users;		/* handlers currently looking at live_batch */

static const struct ftrt_poke_site *find_site(const struct batch *b, uintptr_t addr)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->sites[mid].addr == addr)
			return &b->sites[mid];
		if (b->sites[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- SIGTRAP ------------------------------------------------------------------------ */

static struct sigaction prev_trap[2];
static atomic_int prev_trap_idx;
static atomic_int trap_installed;
static void (*_Atomic trap_fatal)(int sig);	/* ftrt_trap_on_fatal */

static void trap_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = &prev_trap[atomic_load(&prev_trap_idx)];

	if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
		prev->sa_sigaction(sig, si, uc);
		return;
	}
	if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL &&
	    prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
		return;
	}
	if (prev->sa_handler == SIG_IGN && si->si_code != SI_KERNEL)
		return;
	/*
	 * Default action (an int3 cannot be ignored either).  Re-execute the breakpoint with the
	 * default disposition so the core dump / parent sees the original state.
	 */
	void (*fatal)(int) = atomic_load(&trap_fatal);

	if (fatal)
		fatal(sig);
	signal(SIGTRAP, SIG_DFL);
	if (si->si_code == SI_KERNEL &&
	    *(volatile unsigned char *)(ftrt_arch_pc(uc) - 1) == FTRT_ARCH_BREAKPOINT) {
		ftrt_arch_set_pc(uc, ftrt_arch_pc(uc) - 1);
		return;
	}
	raise(SIGTRAP);
}

static void trap_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;

	if (si->si_code == SI_KERNEL) {
		uintptr_t addr = ftrt_arch_pc(uc) - 1;

		for (;;) {
			unsigned seq = atomic_load(&batch_seq);
			const struct ftrt_poke_site *s = NULL;
			struct batch *b;
			unsigned char byte;

			atomic_fetch_add(&trap_users, 1);
			b = atomic_load(&live_batch);
			if (b)
				s = find_site(b, addr);
			if (s) {
				ftrt_arch_emulate(s, uc);
				atomic_fetch_sub(&trap_users, 1);
				errno = saved_errno;
				return;
			}
			atomic_fetch_sub(&trap_users, 1);
			byte = __atomic_load_n((unsigned char *)addr, __ATOMIC_SEQ_CST);
			if (byte != FTRT_ARCH_BREAKPOINT &&
			    ftrt_arch_site_insn((const unsigned char *)addr)) {
				/* Our int3, replaced since by the finished instruction: run that.
				 * (Not an "int $3" or other trap: there no site instruction starts
				 * at pc - 1.) */
				ftrt_arch_set_pc(uc, addr);
				errno = saved_errno;
				return;
			}
			if (byte != FTRT_ARCH_BREAKPOINT || atomic_load(&batch_seq) == seq)
				break;	/* not ours (or no batch came or went) */
		}
	}
	errno = saved_errno;
	trap_chain(sig, si, uc);
}

/* Install (or re-install, if the program replaced it) the SIGTRAP handler. */
static int trap_install(void)
{
	struct sigaction cur, sa;
	int idx;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
		return 0;
	idx = !atomic_load(&prev_trap_idx);
	prev_trap[idx] = cur;
	atomic_store(&prev_trap_idx, idx);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL))
		return -errno;
	atomic_store(&trap_installed, 1);
	return 0;
}

int ftrt_trap_on_fatal(void (*fn)(int sig))
{
	int err = 0;

	atomic_store(&trap_fatal, fn);
	if (fn) {
		pthread_mutex_lock(&patch_lock);	/* a batch installs it too */
		err = trap_install();
		pthread_mutex_unlock(&patch_lock);
	}
	return err;
}

/* ---- writing code ---------------------------------------------------------------------- */

enum method { M_UNSET, M_PROCMEM, M_MPROTECT };
static enum method method;		/* of the batch being applied */
static enum method preferred;		/* chosen once (method_init) */
/* open during a batch only: the program's descriptors are its own between batches */
static int mem_fd = -1;
static pid_t mem_pid;
static struct ft_fdid mem_id;

const char *ftrt_poke_method(void)
{
	return method == M_PROCMEM ? "procmem" : method == M_MPROTECT ? "mprotect" : "unset";
}

/* mem_fd still names the file opened (the program may have closed it and taken the number) */
static int mem_same(void)
{
	struct stat st;

	return fstat(mem_fd, &st) == 0 && st.st_dev == mem_id.dev && st.st_ino == mem_id.ino;
}

static int mem_open(void)
{
	pid_t pid = getpid();

	/* The descriptor names the address space it was opened in: reopen after fork/clone. */
	if (mem_fd >= 0 && mem_pid == pid) {
		if (mem_same())
			return 0;
		mem_fd = -1;	/* the number is the program's now: leave it alone */
	}
	if (mem_fd >= 0)
		ft_fd_close_same(mem_fd, &mem_id);	/* unless the program reused the number */
	mem_fd = ft_fd_high(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
	if (mem_fd < 0)
		return -errno;
	ft_fd_remember(mem_fd, &mem_id);
	mem_pid = pid;
	return 0;
}

/*
 * The descriptor could not be had (descriptors exhausted): this batch's code is written the
 * mprotect way.  Said once.
 */
static void mem_lost(int err)
{
	static int said;

	method = M_MPROTECT;
	if (said++)
		return;
	report("ftkit: cannot open /proc/self/mem (%s); code is written through mprotect while "
	       "it cannot be", strerror(-err));
}

/* After a batch: the descriptor is not kept (one fewer of the program's descriptors). */
static void mem_close(void)
{
	if (mem_fd >= 0 && mem_pid == getpid())
		ft_fd_close_same(mem_fd, &mem_id);	/* unless the program reused the number */
	mem_fd = -1;
}

static int mem_pwrite(const void *buf, size_t len, uintptr_t addr)
{
	while (len) {
		ssize_t w = pwrite(mem_fd, buf, len, (off_t)addr);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf = (const char *)buf + w;
		addr += w;
		len -= w;
	}
	return 0;
}

static int mem_pread(void *buf, size_t len, uintptr_t addr)
{
	while (len) {
		ssize_t r = pread(mem_fd, buf, len, (off_t)addr);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		buf = (char *)buf + r;
		addr += r;
		len -= r;
	}
	return 0;
}

/*
 * Is code written through /proc/self/mem what runs?  Not under qemu-user: it keeps its
 * translations of code it has run, and sees only writes made through its own mappings
 * (it write-protects translated pages and catches the fault).  So a function of ours is
 * run, then written through the descriptor, then run again.
 */
static int procmem_runs(void)
{
	static const unsigned char b = FTRT_ARCH_PROBE_BYTE;
	int (*volatile probe)(void) = ftrt_arch_probe_code;
	uintptr_t at = (uintptr_t)ftrt_arch_probe_code + FTRT_ARCH_PROBE_OFF;

	if (probe() != 0)
		return 1;	/* written before (a method chosen again): nothing to learn */
	if (mem_pwrite(&b, 1, at))
		return 0;
	__builtin___clear_cache((char *)at, (char *)at + 1);
	ftrt_arch_sync_core();
	return probe() == 1;
}

/*
 * Choose the method once: FTRT_POKE=procmem|mprotect, else procmem if it works and what
 * it writes is what runs.
 */
static int method_init(void)
{
	const char *env = secure_getenv("FTRT_POKE");
	unsigned char probe;
	uintptr_t at = (uintptr_t)&ftrt_arch_pc;

	if (preferred == M_PROCMEM) {
		int err = mem_open();

		method = M_PROCMEM;
		if (err)
			mem_lost(err);
		return 0;
	}
	if (preferred != M_UNSET)
		return 0;
	if (env && !strcmp(env, "mprotect")) {
		method = preferred = M_MPROTECT;
		return 0;
	}
	/* Probe: rewrite one byte of our own (r-x) text with its current value. */
	if (mem_open() == 0 && mem_pread(&probe, 1, at) == 0 && mem_pwrite(&probe, 1, at) == 0 &&
	    ((env && !strcmp(env, "procmem")) || procmem_runs())) {
		method = preferred = M_PROCMEM;
		return 0;
	}
	if (env && !strcmp(env, "procmem")) {
		report("ftkit: cannot write code through /proc/self/mem: %s", strerror(errno));
		mem_close();
		return -EPERM;
	}
	mem_close();
	method = preferred = M_MPROTECT;
	return 0;
}

/* --- mprotect method: which pages are r-x and must be made writable for the batch */

struct mapping {
	uintptr_t start, end;
	int prot;
};

static struct mapping *maps;
static size_t nmaps, capmaps;

static int maps_read(void)
{
	static char *buf;
	static size_t cap;
	size_t len = 0;
	char *line;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (cap - len < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			close(fd);
			return -errno;
		}
		if (!r)
			break;
		len += r;
	}
	close(fd);
	buf[len] = 0;
	nmaps = 0;
	for (line = buf; *line; ) {
		char *nl = strchr(line, '\n'), *p;
		struct mapping m;

		if (nl)
			*nl = 0;
		m.start = strtoul(line, &p, 16);
		m.end = strtoul(p + 1, &p, 16);
		p++;
		m.prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
			 (p[2] == 'x' ? PROT_EXEC : 0);
		if (nmaps == capmaps) {
			struct mapping *nm = realloc(maps, (capmaps ? capmaps * 2 : 256) * sizeof(*nm));

			if (!nm)
				return -ENOMEM;
			maps = nm;
			capmaps = capmaps ? capmaps * 2 : 256;
		}
		maps[nmaps++] = m;
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

/* ---- the batch ------------------------------------------------------------------------- */

struct work {
	struct ftrt_poke_site s;
	const unsigned char *old;
	size_t idx;
	int change;
	uint32_t span;		/* spans[] holding it (read_spans) */
};

struct span {
	uintptr_t start;
	size_t len, off;
	int dirty;
};

/* Page runs made writable by the mprotect method, to be restored to r-x. */
struct run {
	uintptr_t start, end;
	int prot;	/* ftrt_arch_code_prot() of its mapping: given back with each mprotect */
};

static struct work *work;
static size_t capwork;
static struct ftrt_poke_site *sites;
static size_t capsites;
static struct span *spans;
static size_t nspans, capspans;
static unsigned char *img;
static size_t capimg;
static struct run *runs;
static size_t nruns, capruns;

#define SPAN_GAP 1024		/* merge sites closer than this into one write */
#define SPAN_MAX (1u << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define BIG_BYTES	(256ul << 10)
#define HUGE_BYTES	(2ul << 20)

/*
 * Grow a buffer that is kept between batches from old to new bytes (contents kept).  From
 * BIG_BYTES on it is mapped on its own, 2 MiB-aligned and reserved to the next 2 MiB, and
 * its pages are populated with one call: the first batch of a big program (300k sites:
 * 25 MB of work arrays) took 6,000 page faults otherwise, the bulk of a cold first enable
 * on this VM (bench/RESULTS.md).  Only a buffer of 2 MiB or more is asked for transparent
 * huge pages: a huge page is cleared whole at its first touch, 2 MiB for a buffer of a few
 * hundred KiB, which cost more than the faults saved.  Growing within the reserve maps
 * nothing new.  Below BIG_BYTES it is malloc'ed; a buffer only grows, so old tells which
 * kind it is.
 */
static size_t big_reserve(size_t bytes)
{
	return (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
}

static void big_populate(uintptr_t from, uintptr_t to)
{
	from &= ~(uintptr_t)4095;
	if (to > from)
		madvise((void *)from, to - from, MADV_POPULATE_WRITE);	/* best effort */
}

void *ftrt_big_grow(void *p, size_t old, size_t new)
{
	uintptr_t m, a;
	size_t len;

	if (new <= old)
		return p;
	if (new < BIG_BYTES)
		return realloc(p, new);
	if (p && old >= BIG_BYTES && new <= big_reserve(old)) {
		big_populate((uintptr_t)p + old, (uintptr_t)p + new);
		return p;
	}
	len = big_reserve(new);
	m = (uintptr_t)mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((void *)m == MAP_FAILED)
		return NULL;
	a = (m + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
	if (a > m)
		munmap((void *)m, a - m);
	munmap((void *)(a + len), m + len + HUGE_BYTES - (a + len));
	if (new >= HUGE_BYTES)
		madvise((void *)a, len, MADV_HUGEPAGE);
	big_populate(a, a + new);
	if (p && old)
		memcpy((void *)a, p, old);
	if (p && old < BIG_BYTES)
		free(p);
	else if (p)
		munmap(p, big_reserve(old));
	return (void *)a;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t nc = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	np = ftrt_big_grow(*p, *cap * size, nc * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static int work_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct work *)a)->s.addr, y = ((const struct work *)b)->s.addr;

	return x < y ? -1 : x > y;
}

static void refuse(const struct work *w, const char *why, const unsigned char *found)
{
	char o[32], n[32], f[32];

	hex(o, sizeof(o), w->old, w->s.len);
	hex(n, sizeof(n), w->s.new, w->s.len);
	if (found) {
		hex(f, sizeof(f), found, w->s.len);
		report("ftkit: refusing to patch site %#lx: found bytes [%s], expected [%s] (new [%s])",
		       (unsigned long)w->s.addr, f, o, n);
	} else {
		report("ftkit: refusing to patch site %#lx: %s (old [%s], new [%s])",
		       (unsigned long)w->s.addr, why, o, n);
	}
}

/* Split sorted work into spans and read their current contents into img. */
static int read_spans(size_t n, size_t *bad)
{
	size_t i, total = 0;
	int err;

	nspans = 0;
	for (i = 0; i < n; i++) {
		uintptr_t a = work[i].s.addr, e = a + work[i].s.len;
		struct span *sp = nspans ? &spans[nspans - 1] : NULL;

		if (sp && a <= sp->start + sp->len + SPAN_GAP && e - sp->start <= SPAN_MAX) {
			total += e - (sp->start + sp->len);
			sp->len = e - sp->start;
			work[i].span = (uint32_t)(nspans - 1);
			continue;
		}
		if ((err = grow((void **)&spans, &capspans, nspans + 1, sizeof(*spans))))
			return err;
		work[i].span = (uint32_t)nspans;
		spans[nspans++] = (struct span){ a, e - a, total, 0 };
		total += e - a;
	}
	if ((err = grow((void **)&img, &capimg, total, 1)))
		return err;
	for (i = 0; i < nspans; i++) {
		struct span *sp = &spans[i];

		if (method == M_PROCMEM) {
			err = mem_pread(img + sp->off, sp->len, sp->start);
			if (err) {
				size_t j;

				/* Name the first unreadable site. */
				for (j = 0; j < n; j++) {
					unsigned char tmp[8];

					if (work[j].s.addr < sp->start ||
					    work[j].s.addr >= sp->start + sp->len)
						continue;
					if (mem_pread(tmp, work[j].s.len, work[j].s.addr)) {
						*bad = work[j].idx;
						refuse(&work[j], "site is not mapped", NULL);
						return -EINVAL;
					}
				}
				return err;
			}
		} else {
			memcpy(img + sp->off, (const void *)sp->start, sp->len);
		}
	}
	return 0;
}

/* mprotect method: check every span lies in executable memory; collect r-x page runs. */
static int prepare_mprotect(size_t n, size_t *bad)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t i, m = 0, prot_of = (size_t)-1;
	int err, prot = 0;

	if ((err = maps_read()))
		return err;
	nruns = 0;
	for (i = 0; i < n; i++) {
		uintptr_t a = work[i].s.addr & ~(pg - 1);
		uintptr_t e = (work[i].s.addr + work[i].s.len + pg - 1) & ~(pg - 1);

		while (a < e) {
			uintptr_t pe;

			while (m < nmaps && maps[m].end <= a)
				m++;
			if (m == nmaps || maps[m].start > a || !(maps[m].prot & PROT_EXEC) ||
			    !(maps[m].prot & PROT_READ)) {
				*bad = work[i].idx;
				refuse(&work[i], "site is not in readable executable memory", NULL);
				return -EINVAL;
			}
			pe = maps[m].end < e ? maps[m].end : e;
			if (!(maps[m].prot & PROT_WRITE)) {
				if (prot_of != m) {
					prot = ftrt_arch_code_prot(a);
					prot_of = m;
				}
				if (nruns && runs[nruns - 1].end >= a && runs[nruns - 1].prot == prot) {
					if (runs[nruns - 1].end < pe)
						runs[nruns - 1].end = pe;
				} else {
					if ((err = grow((void **)&runs, &capruns, nruns + 1,
							sizeof(*runs))))
						return err;
					runs[nruns++] = (struct run){ a, pe, prot };
				}
			}
			a = pe;
		}
	}
	return 0;
}

static int protect_runs(int prot)
{
	size_t i;

	for (i = 0; i < nruns; i++) {
		if (mprotect((void *)runs[i].start, runs[i].end - runs[i].start, prot | runs[i].prot)) {
			int err = -errno;

			if (prot & PROT_WRITE) {
				report("ftkit: cannot make code writable (mprotect rwx %#lx-%#lx: %s)%s",
				       (unsigned long)runs[i].start, (unsigned long)runs[i].end,
				       strerror(-err),
				       err == -EACCES ? "; the system forbids writable executable "
				       "memory (SELinux execmem/execmod, PaX MPROTECT?)" : "");
				while (i--)
					mprotect((void *)runs[i].start,
						 runs[i].end - runs[i].start,
						 PROT_READ | PROT_EXEC | runs[i].prot);
			}
			return err;
		}
	}
	return 0;
}

/* Find the span holding addr (spans are sorted). */
static struct span *span_of(uintptr_t addr)
{
	size_t lo = 0, hi = nspans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < spans[mid].start)
			hi = mid;
		else if (addr >= spans[mid].start + spans[mid].len)
			lo = mid + 1;
		else
			return &spans[mid];
	}
	return NULL;	/* unreachable: every site is in a span */
}

/* Do len (at most 8) bytes differ?  Inline: it runs for every site in every phase. */
static inline int bytes_differ(const unsigned char *a, const unsigned char *b, size_t len)
{
	if (len >= 4) {
		/* two 4-byte loads, overlapping below 8, cover the bytes (no byte beyond them) */
		uint32_t a0, a1, b0, b1;

		memcpy(&a0, a, 4);
		memcpy(&b0, b, 4);
		memcpy(&a1, a + len - 4, 4);
		memcpy(&b1, b + len - 4, 4);
		return ((a0 ^ b0) | (a1 ^ b1)) != 0;
	}
	for (size_t k = 0; k < len; k++)
		if (a[k] != b[k])
			return 1;
	return 0;
}

/* The bytes at addr, of w's span, become b in the image (the span is written if they change). */
static void put(const struct work *w, uintptr_t addr, const unsigned char *b, size_t len)
{
	struct span *sp = &spans[w->span];
	unsigned char *dst = img + sp->off + (addr - sp->start);

	if (bytes_differ(dst, b, len)) {
		memcpy(dst, b, len);
		sp->dirty = 1;
	}
}

static size_t batch_n;	/* sites of the batch being applied */

/*
 * Text pages this process has written already (sorted): their first write was the copy
 * on write of the program's file mapping.  Each such copy makes the kernel shoot down the
 * page's TLB entries on every other CPU running the process — an IPI, a VM exit on a
 * virtual machine: about 25 µs a page, half of a cold enable of 300k sites.  With the other
 * threads parked in a futex their CPUs run something else (lazily), and need none.
 */
static uintptr_t *cow_pages;
static size_t ncow, capcow;
static uintptr_t *fresh;	/* a site byte on each page not written yet (sorted) */
static size_t capfresh;
#define PRECOW_MIN	64	/* fewer fresh pages: the IPIs cost less than parking */
static int precow_on = -1;

static int only_thread(void);

/* FTRT_PRECOW=0: never park for fresh pages (to compare); =test: every batch parks. */
static int precow_mode(void)
{
	if (precow_on < 0) {
		const char *e = secure_getenv("FTRT_PRECOW");

		precow_on = !e || strcmp(e, "0") ? 1 : 0;
		if (e && !strcmp(e, "test"))
			precow_on = 2;
	}
	return precow_on;
}

/*
 * The pages the batch's changing sites lie on that this process has not written yet:
 * fresh[], one site byte on each (sorted).  Their number.
 */
static size_t fresh_pages(size_t n)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t i, nf = 0, c = 0;

	if (precow_mode() == 2)
		ncow = 0;	/* every batch parks the threads, whatever it touches */
	for (i = 0; i < n; i++) {
		uintptr_t p0 = work[i].s.addr & ~(pg - 1);
		uintptr_t p1 = (work[i].s.addr + work[i].s.len - 1) & ~(pg - 1);

		if (!work[i].change)
			continue;
		for (uintptr_t p = p0; p <= p1; p += pg) {
			/* work and cow_pages are sorted: one walk along both */
			while (c < ncow && cow_pages[c] < p)
				c++;
			if ((nf && (fresh[nf - 1] & ~(pg - 1)) >= p) || (c < ncow && cow_pages[c] == p))
				continue;
			if (grow((void **)&fresh, &capfresh, nf + 1, sizeof(*fresh)))
				return 0;
			/* the site's first byte on page p */
			fresh[nf++] = p < work[i].s.addr ? work[i].s.addr : p;
		}
	}
	return nf;
}

/*
 * A park that failed (a thread blocks the runtime's signal, or did not run within 2 ms)
 * is not tried again for PARK_BACKOFF_MS: each try costs the batch its 2 ms of asking.
 */
#define PARK_BACKOFF_MS	1000
static struct timespec park_failed;

static int park_backoff(void)
{
	struct timespec now;

	if (!park_failed.tv_sec && !park_failed.tv_nsec)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - park_failed.tv_sec) * 1000 +
	       (now.tv_nsec - park_failed.tv_nsec) / 1000000 < PARK_BACKOFF_MS;
}

static void park_failed_now(void)
{
	clock_gettime(CLOCK_MONOTONIC, &park_failed);
}

/*
 * Parking the others pays for nf fresh pages.  Not for a big batch on pages written
 * before, though it would go faster in one pass (a warm enable of 300k sites: 21 ms
 * against 32): parking signals every thread, and a thread waiting in poll, epoll_wait or
 * nanosleep gets EINTR (docs/live-patching.md), where the breakpoint protocol signals none.
 * For the same reason a thread waiting in such a call is never parked: the batch is then
 * written by the breakpoint protocol, after a precow() that parks only the others.
 */
static int park_pays(size_t nf)
{
	int mode = precow_mode();

	return method == M_PROCMEM && mode && nf >= (mode == 2 ? 1 : PRECOW_MIN) && mem_same() &&
	       (mode == 2 || !park_backoff());
}

/* The fresh pages (written now) join cow_pages. */
static void cow_merge(size_t nf)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t a, b;

	if (!nf || grow((void **)&cow_pages, &capcow, ncow + nf, sizeof(*cow_pages)))
		return;
	a = ncow;
	b = nf;
	ncow += nf;
	while (b) {
		uintptr_t fp = fresh[b - 1] & ~(pg - 1);

		if (a && cow_pages[a - 1] > fp)
			cow_pages[a + b - 1] = cow_pages[a - 1], a--;
		else
			cow_pages[a + b - 1] = fp, b--;
	}
}

/*
 * Where a batch is not written parked (FTRT_ARCH_SITE_ATOMIC: one store a site, or a
 * thread waits in a call parking would cut short): park the other threads that run, make
 * each fresh page's copy by writing one of its current bytes back, unpark.  Best effort: a
 * thread that does not park, or a write that fails, only costs the IPIs (the batch writes
 * the page anyway).
 */
static void precow(size_t nf)
{
	size_t i;
	int err;

	if (!park_pays(nf) || only_thread())
		return;
	err = ftrt_sync_park_running(2000);
	if (err)
		park_failed_now();
	if (!err || err == -EAGAIN) {
		for (i = 0; i < nf; i++) {
			/* the byte as it is (img holds every site's bytes) */
			const struct span *sp = span_of(fresh[i]);

			if (mem_pwrite(img + sp->off + (fresh[i] - sp->start), 1, fresh[i]))
				break;
		}
	}
	ftrt_sync_unpark();
}

/*
 * Before writing through mem_fd: another thread of the program may have closed it and
 * taken the number since the batch began.  Reopen, else go on the mprotect way.
 */
static int mem_check(void)
{
	size_t bad;
	int err;

	if (mem_same())
		return 0;
	if (!(err = mem_open()))
		return 0;
	if (prepare_mprotect(batch_n, &bad) || protect_runs(PROT_READ | PROT_WRITE | PROT_EXEC))
		return err;	/* nothing writes code: the batch fails */
	mem_lost(err);
	return 0;
}

static int flush(void)
{
	size_t i;
	int err;

	if (method == M_PROCMEM && (err = mem_check()))
		return err;
	for (i = 0; i < nspans; i++) {
		struct span *sp = &spans[i];

		if (!sp->dirty)
			continue;
		sp->dirty = 0;
		if (method == M_PROCMEM) {
			if ((err = mem_pwrite(img + sp->off, sp->len, sp->start)))
				return err;
		} else {
			/* Only the changed bytes need storing, but equal bytes are harmless. */
			unsigned char *dst = (unsigned char *)sp->start;
			size_t k;

			for (k = 0; k < sp->len; k++)
				if (dst[k] != img[sp->off + k])
					__atomic_store_n(&dst[k], img[sp->off + k],
							 __ATOMIC_RELAXED);
		}
	}
	return 0;
}

enum phase { PH_EARLY, PH_INT3, PH_TAIL, PH_HEAD, PH_UNDO_TAIL, PH_UNDO_HEAD, PH_WHOLE,
	     PH_UNDO_WHOLE };

static int phase(size_t nw, enum phase ph)
{
	static const unsigned char bp = FTRT_ARCH_BREAKPOINT;
	size_t i;

	for (i = 0; i < nw; i++) {
		const struct work *w = &work[i];

		if (!w->change)
			continue;
		switch (ph) {
		case PH_EARLY:
			if (w->s.early)
				put(w, w->s.addr + w->s.early, w->s.new + w->s.early,
				    w->s.len - w->s.early);
			break;
		case PH_INT3:
			put(w, w->s.addr, &bp, 1);
			break;
		case PH_TAIL:
			put(w, w->s.addr + 1, w->s.new + 1, w->s.len - 1);
			break;
		case PH_HEAD:
			put(w, w->s.addr, w->s.new, 1);
			break;
		case PH_UNDO_TAIL:
			put(w, w->s.addr + 1, w->old + 1, w->s.len - 1);
			break;
		case PH_UNDO_HEAD:
			put(w, w->s.addr, w->old, 1);
			break;
		case PH_WHOLE:
			put(w, w->s.addr, w->s.new, w->s.len);
			break;
		case PH_UNDO_WHOLE:
			put(w, w->s.addr, w->old, w->s.len);
			break;
		}
	}
	return flush();
}

static int any_dirty_after(size_t nw, enum phase ph)
{
	size_t i;

	for (i = 0; i < nw; i++)
		if (work[i].change && ph == PH_TAIL && work[i].s.len > 1 &&
		    memcmp(work[i].old + 1, work[i].s.new + 1, work[i].s.len - 1))
			return 1;
	return 0;
}

/* Runs with patch_lock held and the batch published. */
/*
 * Is the calling thread the process's only one (the task count of /proc/self/stat)?  Then
 * no other thread can run a site while it changes, and the thread itself sees each write
 * whole (a signal is handled between system calls, and a site never spans two writes):
 * the final bytes can go in one pass.  This is the common case of the start-up patching,
 * in a constructor.  Any doubt answers no.
 */
static int only_thread(void)
{
	char buf[1024], *p;
	ssize_t n;
	int fd, field;

	if (!__libc_single_threaded)	/* glibc created a thread: no need to ask the kernel */
		return 0;
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);	/* threads made by raw clone too */
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the command name may hold anything */
	if (!p)
		return 0;
	/* after "pid (comm)": state is field 3, num_threads field 20 */
	for (field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	return p && strtol(p + 1, NULL, 10) == 1;
}

/*
 * The batch with every other thread parked (waiting in the runtime's signal handler, off
 * any site): the sites are written whole, no int3, so a thread blocking SIGTRAP meets only
 * old or new instructions.  The parked threads run on after a context switch, which
 * serialises their cores with membarrier SYNC_CORE registered, then ftrt_sync_cores() for
 * the others.  1, nothing written, when some thread did not park within limit_us (it
 * blocks the runtime's signal too, or did not run meanwhile), 2 when there is no signal to
 * park them with (the program took them all).
 */
static int apply_parked(size_t nw, long limit_us)
{
	sigset_t all, old;
	int err;

	if (method == M_PROCMEM && (err = mem_check()))
		return err;	/* it may allocate: not while the threads are parked */
	if ((err = ftrt_sync_park(limit_us))) {
		ftrt_sync_unpark();
		return err == -EAGAIN ? 1 : 2;
	}
	/* nor may a handler on this thread run a site half written (mprotect: byte stores) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if ((err = phase(nw, PH_WHOLE)) && phase(nw, PH_UNDO_WHOLE)) {
		report("ftkit: cannot restore code after a failed write; aborting");
		abort();
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ftrt_sync_unpark();
	if (err)
		report("ftkit: writing code failed (%s); the old instructions are kept",
		       strerror(-err));
	return err ? err : ftrt_sync_cores();
}

/* 200 ms; FTRT_TEST_PARK_US sets it (the test that has it run out to see the retries). */
static long first_park_us(void)
{
	static long us;

	if (!us) {
		const char *e = secure_getenv("FTRT_TEST_PARK_US");

		us = e && *e ? strtol(e, NULL, 10) : 0;
		if (us <= 0)
			us = 200 * 1000;
	}
	return us;
}

/*
 * parked: the batch changes many pages this process has not written yet (park_pays).
 * Their first writes are copies of the pages, each shooting down the TLB of the CPUs that
 * run the other threads (an IPI, a VM exit on a virtual machine) unless those threads are
 * parked.  Parked, the sites are also written whole: one pass and one serialisation where
 * the breakpoint protocol takes three (a first enable of 300k sites: bench/RESULTS.md).
 * A thread that does not park within 2 ms leaves the batch to the breakpoint protocol
 * (and parking is not tried again for a while).  Alone in the process, nothing is parked.
 */
static int apply(size_t nw, int parked)
{
	static int said;
	static pid_t unparked;	/* did not park last time: not waited for again */
	char name[16] = "";
	int err, early = 0;
	pid_t blocker;
	size_t i;

	if (only_thread()) {
		if ((err = phase(nw, PH_WHOLE)))
			goto undo;
		return ftrt_sync_cores();
	}
	if (parked) {
		if ((err = apply_parked(nw, 2000)) <= 0)
			return err;
		park_failed_now();
	}
	/* a thread that blocks SIGTRAP would be killed by an int3 (poke_sigmask.c cannot see
	   every mask): the batch then parks the others and writes whole sites */
	if ((blocker = ftrt_sync_trap_blocker(name)) && blocker != unparked) {
		/*
		 * A thread that takes the runtime's signal parks unless it does not run in
		 * time (an overloaded machine: 200 ms was seen to pass): asked again for
		 * longer, as an int3 would kill the process.  /proc cannot tell one that
		 * blocks the signal too (threads in the runtime's handler show every signal
		 * blocked): that waits 5 s, once (unparked).
		 */
		long limits_us[] = { first_park_us(), 1000 * 1000, 4000 * 1000 };

		for (size_t k = 0; k < sizeof(limits_us) / sizeof(limits_us[0]); k++) {
			if ((err = apply_parked(nw, limits_us[k])) <= 0)
				return err;
			if (err == 2)
				break;	/* no signal to park them with */
		}
		/* glibc blocks every signal for a moment (a thread being created or ending,
		   fork, posix_spawn): ask again, a little later, before saying anything */
		for (int k = 0; k < 3 && (blocker = ftrt_sync_trap_blocker(name)); k++)
			nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
		unparked = blocker;
	}
	if (blocker) {
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			report("ftkit: thread %d (%s) blocks SIGTRAP and the runtime's signal: should "
			       "it run a site while the code changes, the process dies",
			       (int)blocker, name);
	}
	for (i = 0; i < nw; i++)
		early |= work[i].change && work[i].s.early;
	/*
	 * Early bytes need no serialisation of their own: an old nop reads the same with either
	 * value, and a thread can only run them after trapping on the int3 written later by
	 * this thread (stores are seen in order, the trap serialises).
	 */
	if (early && (err = phase(nw, PH_EARLY)))
		goto undo;
	if ((err = phase(nw, PH_INT3)))
		goto undo;
	if ((err = ftrt_sync_cores()))
		goto undo;
	if (any_dirty_after(nw, PH_TAIL)) {
		if ((err = phase(nw, PH_TAIL)))
			goto undo;
		if ((err = ftrt_sync_cores()))
			goto undo;
	}
	if ((err = phase(nw, PH_HEAD)))
		goto undo;
	return ftrt_sync_cores();
undo:
	/* Put the old instructions back (an int3 stays until its tail is old again). */
	report("ftkit: writing code failed (%s); restoring the old instructions", strerror(-err));
	if (phase(nw, PH_UNDO_TAIL) || ftrt_sync_cores() || phase(nw, PH_UNDO_HEAD) ||
	    ftrt_sync_cores()) {
		report("ftkit: cannot restore code after a failed write; aborting");
		abort();
	}
	return err;
}

/*
 * FTRT_ARCH_SITE_ATOMIC: each site is one naturally aligned instruction word, which one
 * store replaces whole (single-copy atomic): a thread sees the old or the new instruction,
 * never a mix, so no breakpoint is needed.  Each changed site is stored on its own (procmem:
 * a pwrite of exactly its bytes, which the kernel copies with one aligned access and after
 * which it makes the instruction cache coherent; mprotect: one aligned store), its cache
 * lines are cleaned and invalidated to the point of unification (__builtin___clear_cache),
 * and all threads are context-synchronised once at the end (ftrt_sync_cores: membarrier
 * SYNC_CORE, else a signal round, whose return from the handler is a context
 * synchronisation event).  A thread that still runs the old instruction meanwhile does
 * what it did before the batch, which is allowed: the old and the new state are both valid
 * at any time.  On a write error the sites already changed get their old word back.
 */
static int store_site(const struct work *w, const unsigned char *b)
{
	uintptr_t a = w->s.addr;
	int err = 0;

	if (method == M_PROCMEM) {
		err = mem_pwrite(b, w->s.len, a);
	} else if (w->s.len == 8) {
		uint64_t v;

		memcpy(&v, b, 8);
		__atomic_store_n((uint64_t *)a, v, __ATOMIC_RELAXED);
	} else {
		uint32_t v;

		memcpy(&v, b, 4);
		__atomic_store_n((uint32_t *)a, v, __ATOMIC_RELAXED);
	}
	if (!err)
		__builtin___clear_cache((char *)a, (char *)a + w->s.len);
	return err;
}

static int apply_atomic(size_t nw)
{
	size_t i, j;
	int err;

	if (method == M_PROCMEM && (err = mem_check()))
		return err;
	for (i = 0; i < nw; i++) {
		if (!work[i].change)
			continue;
		if ((err = store_site(&work[i], work[i].s.new))) {
			report("ftkit: writing code failed (%s); restoring the old instructions",
			       strerror(-err));
			for (j = 0; j < i; j++)
				if (work[j].change && store_site(&work[j], work[j].old)) {
					report("ftkit: cannot restore code after a failed write; aborting");
					abort();
				}
			ftrt_sync_cores();
			return err;
		}
	}
	return ftrt_sync_cores();
}

static int poke_batch(struct ftrt_poke *p, size_t n, size_t *bad, int data);

int ftrt_text_poke_batch(struct ftrt_poke *p, size_t n, size_t *bad)
{
	return poke_batch(p, n, bad, 0);
}

int ftrt_text_write_data(struct ftrt_poke *p, size_t n, size_t *bad)
{
	return poke_batch(p, n, bad, 1);
}

/*
 * data: the bytes are no instruction and no thread reads them while they change (the
 * CALL_OPS slots before functions): no instruction rules, no breakpoint, one write.
 */
static int poke_batch(struct ftrt_poke *p, size_t n, size_t *bad, int data)
{
	size_t i, nchange = 0, dummy, nfresh = 0;
	int err, sorted = 1;

	if (!bad)
		bad = &dummy;
	*bad = 0;
	if (n && !p)
		return -EINVAL;
	pthread_mutex_lock(&patch_lock);
	if ((err = method_init()))
		goto out;
	if ((err = grow((void **)&work, &capwork, n, sizeof(*work))))
		goto out;
	for (i = 0; i < n; i++) {
		struct work *w = &work[i];
		const char *why = NULL;
		unsigned early = 0;

		w->s.addr = (uintptr_t)p[i].addr;
		w->s.len = p[i].len;
		w->s.early = 0;
		w->old = p[i].old;
		w->idx = i;
		w->change = 0;
		w->span = 0;
		memcpy(w->s.new, p[i].new, sizeof(w->s.new));	/* both 8 bytes: no length to trust */
		if (data && (p[i].len < 1 || p[i].len > 8))
			why = "bad length";
		else if (!data && ftrt_arch_check(p[i].old, p[i].new, p[i].len, &early, &why) &&
			 !why)
			why = "not a supported transition";
		else if (!data && FTRT_ARCH_SITE_ATOMIC && (w->s.addr % p[i].len ||
							   (p[i].len != 4 && p[i].len != 8)))
			why = "not one aligned instruction word";
		if (why) {
			*bad = i;
			refuse(w, why, NULL);
			err = -EINVAL;
			goto out;
		}
		w->s.early = early;
		w->change = bytes_differ(p[i].old, p[i].new, p[i].len);
		nchange += w->change;
		if (i && w->s.addr < work[i - 1].s.addr)
			sorted = 0;
	}
	if (!sorted)
		qsort(work, n, sizeof(*work), work_cmp);
	for (i = 1; i < n; i++) {	/* sorted: a site overlaps the one before it, if any */
		if (work[i - 1].s.addr + work[i - 1].s.len > work[i].s.addr) {
			*bad = work[i].idx;
			refuse(&work[i], "overlaps another site of the batch", NULL);
			err = -EINVAL;
			goto out;
		}
	}
	batch_n = n;
	if (method == M_MPROTECT && (err = prepare_mprotect(n, bad)))
		goto out;
	if ((err = read_spans(n, bad)))
		goto out;
	for (i = 0; i < n; i++) {
		const struct span *sp = &spans[work[i].span];
		const unsigned char *cur = img + sp->off + (work[i].s.addr - sp->start);

		if (bytes_differ(cur, work[i].old, work[i].s.len)) {
			*bad = work[i].idx;
			refuse(&work[i], NULL, cur);
			err = -EINVAL;
			goto out;
		}
	}
	if (!nchange)
		goto out;
	if (data) {
		/* nobody reads them: no breakpoint, no trap handler, no serialisation */
		if (method == M_MPROTECT)
			err = protect_runs(PROT_READ | PROT_WRITE | PROT_EXEC);
		if (!err) {
			err = phase(n, PH_WHOLE);
			if (method == M_MPROTECT && protect_runs(PROT_READ | PROT_EXEC)) {
				report("ftkit: cannot make code read-only again: %s; aborting",
				       strerror(errno));
				abort();
			}
		}
		goto out;
	}

	nfresh = method == M_PROCMEM ? fresh_pages(n) : 0;
	if (FTRT_ARCH_SITE_ATOMIC) {
		precow(nfresh);
		/* one store per site: no breakpoint, no trap handler */
		if (method == M_MPROTECT)
			err = protect_runs(PROT_READ | PROT_WRITE | PROT_EXEC);
		if (!err) {
			err = apply_atomic(n);
			if (method == M_MPROTECT && protect_runs(PROT_READ | PROT_EXEC)) {
				report("ftkit: cannot make code read-only again: %s; aborting",
				       strerror(errno));
				abort();
			}
		}
		goto out;
	}

	/* Publish the changing sites for the trap handler, sorted by address. */
	if ((err = grow((void **)&sites, &capsites, nchange, sizeof(*sites))))
		goto out;
	nchange = 0;
	for (i = 0; i < n; i++)
		if (work[i].change)
			sites[nchange++] = work[i].s;
	if ((err = trap_install()))
		goto out;
	the_batch.sites = sites;
	the_batch.n = nchange;
	atomic_fetch_add(&batch_seq, 1);
	atomic_store(&live_batch, &the_batch);

	if (method == M_MPROTECT)
		err = protect_runs(PROT_READ | PROT_WRITE | PROT_EXEC);
	if (!err) {
		int parked = park_pays(nfresh);

		if (parked && ftrt_sync_sleeper()) {
			precow(nfresh);	/* parks the others only: no site written whole */
			parked = 0;
		}
		err = apply(n, parked);
		if (method == M_MPROTECT && protect_runs(PROT_READ | PROT_EXEC)) {
			report("ftkit: cannot make code read-only again: %s; aborting",
			       strerror(errno));
			abort();
		}
	}

	/* Unpublish, then wait until no handler still reads the batch. */
	atomic_store(&live_batch, NULL);
	atomic_fetch_add(&batch_seq, 1);
	while (atomic_load(&trap_users))
		sched_yield();
out:
	if (!err)
		cow_merge(nfresh);	/* written: their copies are made */
	mem_close();
	pthread_mutex_unlock(&patch_lock);
	return err;
}

/* ---- fork -------------------------------------------------------------------------- */

static void fork_prepare(void)
{
	fork_held_api = ftrt_lock() == 0;
	pthread_mutex_lock(&patch_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&patch_lock);
	if (fork_held_api)
		ftrt_unlock();
}

static void fork_child(void)
{
	/* The child has one thread: nobody else can be inside a handler or a batch. */
	atomic_store(&trap_users, 0);
	atomic_store(&live_batch, NULL);
	if (mem_fd >= 0) {
		ft_fd_close_same(mem_fd, &mem_id);	/* unless the program reused the number */
		mem_fd = -1;
	}
	ftrt_sync_atfork_child();
	ncow = 0;	/* the child's text pages are shared with the parent's again */
	pthread_mutex_unlock(&patch_lock);
	/* Free, with no waiters (they are threads the child lacks). */
	atomic_store(&api_serving, atomic_load(&api_next));
}

__attribute__((constructor)) static void poke_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	ft_fd_table_reserve();	/* each batch opens /proc/self/mem up there */
}
