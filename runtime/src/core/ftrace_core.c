// SPDX-License-Identifier: Apache-2.0
/*
 * ftrace_core.c - the runtime core: call-site records of every loaded object, struct
 * ftrace_ops with filter hashes, the list function, and the dispatch that decides what
 * each site calls (docs/runtime.md).
 *
 * What a site calls (kernel rules): with no matching ops, nothing (a nop); with exactly
 * one, that ops' own trampoline (a clone of the template near the site); with several, the
 * shared regs caller if any of them wants registers, else the shared caller; both shared
 * callers run the list function, which tests each registered ops' hashes.
 *
 * Every change of site bytes goes through ftrt_text_poke_batch() (poke.c), one batch per
 * update, with the bytes the site must hold now; a site holding anything else is refused
 * and never touched again.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fnmatch.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "ftrt_core.h"
#include "poke.h"

_Static_assert(sizeof(struct ftrt_rec) == 16, "record size");

/* Runtime-internal ops flags. */
#define FL_REMOVING	(1UL << 30)
#define FL_REGS		(FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED)
/* At most one of these per site: they decide where the traced function goes on. */
#define FL_EXCL		(FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_DIRECT)

static struct ftrt_object *objects;
static struct ftrace_ops *_Atomic ops_list;
static int initialized;
static unsigned long long seen_adds, seen_subs;
static unsigned long objects_added;	/* rescans that added objects with call sites */
static unsigned long nr_refused;

/* The ops the shared callers pass (their slot); never registered. */
struct ftrace_ops ftrt_list_ops = { .func = ftrt_list_func };

void ftrt_warn(const char *fmt, ...)
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
	if (write(2, buf, (size_t)n) < 0)
		return;
}

/* ---- hashes of site addresses ---------------------------------------------------------- */

struct ftrt_hash {
	size_t count, mask;
	unsigned long e[];
};

static inline size_t hash_slot(const struct ftrt_hash *h, unsigned long ip)
{
	return (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20) & h->mask;
}

static inline int hash_has(const struct ftrt_hash *h, unsigned long ip)
{
	size_t i;

	if (!h || !h->count)
		return 0;
	for (i = hash_slot(h, ip); h->e[i]; i = (i + 1) & h->mask)
		if (h->e[i] == ip)
			return 1;
	return 0;
}

static struct ftrt_hash *hash_alloc(size_t want)
{
	size_t cap = 16;
	struct ftrt_hash *h;

	while (cap < want * 2)
		cap *= 2;
	h = calloc(1, sizeof(*h) + cap * sizeof(unsigned long));
	if (h)
		h->mask = cap - 1;
	return h;
}

static void hash_put(struct ftrt_hash *h, unsigned long ip)
{
	size_t i;

	for (i = hash_slot(h, ip); h->e[i]; i = (i + 1) & h->mask)
		if (h->e[i] == ip)
			return;
	h->e[i] = ip;
	h->count++;
}

static int hash_add(struct ftrt_hash **hp, unsigned long ip)
{
	struct ftrt_hash *h = *hp, *n;
	size_t i;

	if ((h->count + 1) * 2 > h->mask + 1) {
		n = hash_alloc(h->count + 1);
		if (!n)
			return -ENOMEM;
		for (i = 0; i <= h->mask; i++)
			if (h->e[i])
				hash_put(n, h->e[i]);
		free(h);
		*hp = h = n;
	}
	hash_put(h, ip);
	return 0;
}

static void hash_del(struct ftrt_hash *h, unsigned long ip)
{
	size_t i, j;

	for (i = hash_slot(h, ip); h->e[i]; i = (i + 1) & h->mask)
		if (h->e[i] == ip)
			break;
	if (!h->e[i])
		return;
	h->e[i] = 0;
	h->count--;
	/* Re-insert the rest of the cluster. */
	for (j = (i + 1) & h->mask; h->e[j]; j = (j + 1) & h->mask) {
		unsigned long v = h->e[j];

		h->e[j] = 0;
		h->count--;
		hash_put(h, v);
	}
}

static struct ftrt_hash *hash_copy(const struct ftrt_hash *o)
{
	struct ftrt_hash *h = hash_alloc(o ? o->count : 0);
	size_t i;

	if (h && o)
		for (i = 0; i <= o->mask; i++)
			if (o->e[i])
				hash_put(h, o->e[i]);
	return h;
}

/* The kernel's rule: (filter empty or has ip) and (notrace empty or lacks ip). */
static inline int hash_match(const struct ftrt_hash *f, const struct ftrt_hash *n,
			     unsigned long ip)
{
	if (f && f->count && !hash_has(f, ip))
		return 0;
	if (n && n->count && hash_has(n, ip))
		return 0;
	return 1;
}

static inline int ops_match(struct ftrace_ops *op, unsigned long ip)
{
	const struct ftrt_hash *f = __atomic_load_n(&op->filter_hash, __ATOMIC_ACQUIRE);
	const struct ftrt_hash *n = __atomic_load_n(&op->notrace_hash, __ATOMIC_ACQUIRE);

	return hash_match(f, n, ip);
}

int ftrt_ops_match(struct ftrace_ops *ops, unsigned long ip)
{
	return ops_match(ops, ip);
}

/* ---- the hot path ---------------------------------------------------------------------- */

/*
 * Called by a trampoline of an ops with FTRACE_OPS_FL_RECURSION.  The trampoline has
 * already raised ftrt_cb_depth, so a depth above one means this thread is already inside
 * a callback: the nested call is not reported to RECURSION ops.
 */
void ftrt_recursion_assist(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			   struct ftrace_regs *fregs)
{
	if (__builtin_expect(ftrt_cb_depth > 1, 0))
		return;
	op->func(ip, parent_ip, op, fregs);
}

/*
 * The callback of a direct ops (the kernel's call_direct_funcs): when the site is shared
 * with other ops, the regs trampoline runs it with the others and then enters the direct
 * trampoline it names.  Read once per call: a concurrent modify_ftrace_direct gives old or
 * new, never neither.
 */
void ftrt_call_direct_funcs(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	(void)ip;
	(void)parent_ip;
	ftrace_regs_set_direct(fregs, __atomic_load_n(&op->direct_call, __ATOMIC_ACQUIRE));
}

#define BARRIER() __asm__ __volatile__("" ::: "memory")

/*
 * Called by the shared callers: every registered ops whose hashes match ip.
 *
 * The walk publishes where it is in ftrt_cb_node, before each read that can yield an ops:
 * "op | 1" while reading op->next (1 alone: reading the list head), then the ops it holds.
 * An unregister of X (which unlinks X, issues membarrier and reads this) then only waits
 * for threads showing X, X|1 or pred(X)|1 (see cb_busy).  Saved and put back, so a nested
 * walk leaves the outer one's value.
 */
void ftrt_list_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *unused,
		    struct ftrace_regs *fregs)
{
	struct ftrace_ops *op, *next;
	int nested = ftrt_cb_depth > 1;
	uintptr_t saved = ftrt_cb_node;

	(void)unused;
	ftrt_cb_node = 1;
	BARRIER();
	for (op = atomic_load_explicit(&ops_list, memory_order_acquire); op; op = next) {
		ftrt_cb_node = (uintptr_t)op;
		BARRIER();
		if (!((op->flags & FTRACE_OPS_FL_RECURSION) && nested) &&
		    /* kernel semantics: a SAVE_REGS ops is not called without a full frame (a
		     * thread in the plain caller while the site moves to the regs caller) */
		    !((op->flags & FL_REGS) && !ftrace_get_regs(fregs)) &&
		    ops_match(op, ip))
			op->func(ip, parent_ip, op, fregs);
		BARRIER();
		ftrt_cb_node = (uintptr_t)op | 1;
		BARRIER();
		next = __atomic_load_n(&op->next, __ATOMIC_ACQUIRE);
	}
	BARRIER();
	ftrt_cb_node = saved;
}

/* ---- records ----------------------------------------------------------------------------- */

static int rec_cmp(const void *a, const void *b)
{
	const struct ftrt_rec *x = a, *y = b;

	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static struct ftrt_rec *obj_lookup(struct ftrt_object *o, uintptr_t ip)
{
	size_t lo = 0, hi = o->nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->recs[mid].ip < ip)
			lo = mid + 1;
		else if (o->recs[mid].ip > ip)
			hi = mid;
		else
			return &o->recs[mid];
	}
	return NULL;
}

/* First record with ip >= addr. */
static size_t obj_lower_bound(struct ftrt_object *o, uintptr_t addr)
{
	size_t lo = 0, hi = o->nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->recs[mid].ip < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ftrt_rec *rec_lookup(uintptr_t ip, struct ftrt_object **op)
{
	struct ftrt_object *o;
	struct ftrt_rec *r;

	for (o = objects; o; o = o->next) {
		if (!o->nrecs || ip < o->recs[0].ip || ip > o->recs[o->nrecs - 1].ip)
			continue;
		r = obj_lookup(o, ip);
		if (r) {
			if (op)
				*op = o;
			return r;
		}
	}
	return NULL;
}

static int in_exec(const struct ftrt_object *o, uintptr_t a, size_t len);

/* Is [a, a+len) executable code of a known object (so safe to read)? */
static int known_code(uintptr_t a, size_t len)
{
	struct ftrt_object *o;

	for (o = objects; o; o = o->next)
		if (a >= o->lo && a < o->hi && in_exec(o, a, len))
			return 1;
	return 0;
}

/*
 * The record of the site at ip, as the record's address or as the table's site address
 * (arm64: the record is the site's last nop, ftrt_arch_rec_ip).
 */
static struct ftrt_rec *rec_lookup_site(uintptr_t ip, struct ftrt_object **op)
{
	struct ftrt_rec *r = rec_lookup(ip, op);
	uintptr_t rip = ftrt_arch_rec_ip(ip, FTRT_ARCH_SITE_MAX);

	return r || rip == ip ? r : rec_lookup(rip, op);
}

/*
 * A site address, or a function's address: its entry (the site follows an endbr64 or
 * bti c), or a PLT entry (a non-PIE program's canonical address of a library function),
 * followed once.
 */
static struct ftrt_rec *rec_find(uintptr_t ip, struct ftrt_object **op)
{
	struct ftrt_rec *r = rec_lookup_site(ip, op);
	const unsigned char *b = (const unsigned char *)ip;
	int hops;

	for (hops = 0; !r && hops < 2 && known_code(ip, 16); hops++) {
		uintptr_t slot;

		b = ftrt_arch_skip_entry_marker((const unsigned char *)ip);
		if (b != (const unsigned char *)ip && (r = rec_lookup_site((uintptr_t)b, op)))
			break;
		if (!ftrt_arch_plt_slot(b, &slot))
			break;
		memcpy(&ip, (const void *)slot, sizeof(ip));	/* the GOT entry */
		r = rec_lookup_site(ip, op);
	}
	return r;
}

/* ---- loading the tables ------------------------------------------------------------------ */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define BIG_RECS	(64u << 10)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define HUGE_SZ		(2ul << 20)

/*
 * Record arrays of big objects are mapped apart, 2 MiB-aligned, asked for transparent huge
 * pages and populated with one call: 300k sites are 4.8 MB, which page faults one 4 KiB page
 * at a time would make the bulk of start-up.
 */
static struct ftrt_rec *recs_alloc(size_t n)
{
	size_t bytes = n * sizeof(struct ftrt_rec), len;
	uintptr_t p, a;

	if (bytes < BIG_RECS)
		return malloc(bytes ? bytes : 1);
	len = (bytes + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
	p = (uintptr_t)mmap(NULL, len + HUGE_SZ, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((void *)p == MAP_FAILED)
		return NULL;
	a = (p + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
	if (a > p)
		munmap((void *)p, a - p);
	munmap((void *)(a + len), p + len + HUGE_SZ - (a + len));
	madvise((void *)a, len, MADV_HUGEPAGE);
	if (madvise((void *)a, len, MADV_POPULATE_WRITE))
		madvise((void *)a, len, MADV_WILLNEED);
	return (struct ftrt_rec *)a;
}

static void recs_free(struct ftrt_rec *r, size_t cap)
{
	size_t bytes = cap * sizeof(struct ftrt_rec);

	if (!r)
		return;
	if (bytes < BIG_RECS)
		free(r);
	else
		munmap(r, (bytes + HUGE_SZ - 1) & ~(HUGE_SZ - 1));
}

/* Fault the table in with one call (file pages already in the page cache). */
static void prefault(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;

	if (len >= BIG_RECS)
		madvise((void *)a, len + ((uintptr_t)p - a), MADV_POPULATE_READ);
}

struct seg { uintptr_t lo, hi; };

static int in_exec(const struct ftrt_object *o, uintptr_t a, size_t len)
{
	const ElfW(Phdr) *ph = o->phdr;
	unsigned i;

	for (i = 0; i < o->phnum; i++) {
		uintptr_t lo = o->bias + ph[i].p_vaddr;

		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && a >= lo &&
		    a + len <= lo + ph[i].p_filesz)
			return 1;
	}
	return 0;
}

/* The executable segment holding [a, a+len): 1 and its range, or 0. */
static int exec_range(const struct ftrt_object *o, uintptr_t a, size_t len, uintptr_t *lo,
		      uintptr_t *hi)
{
	const ElfW(Phdr) *ph = o->phdr;
	unsigned i;

	for (i = 0; i < o->phnum; i++) {
		uintptr_t s = o->bias + ph[i].p_vaddr;

		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && a >= s &&
		    a + len <= s + ph[i].p_filesz) {
			*lo = s;
			*hi = s + ph[i].p_filesz;
			return 1;
		}
	}
	return 0;
}

static int in_load(const struct ftrt_object *o, uintptr_t a, size_t len)
{
	const ElfW(Phdr) *ph = o->phdr;
	unsigned i;

	for (i = 0; i < o->phnum; i++) {
		uintptr_t lo = o->bias + ph[i].p_vaddr;

		if (ph[i].p_type == PT_LOAD && a >= lo && a + len >= a &&
		    a + len <= lo + ph[i].p_memsz)
			return 1;
	}
	return 0;
}

static void refuse_site(struct ftrt_object *o, uintptr_t ip, const char *why)
{
	const unsigned char *b = (const unsigned char *)ip;

	nr_refused++;
	if (in_exec(o, ip, 6))
		ftrt_warn("ftkit: %s: site %#lx refused (%s): bytes %02x %02x %02x %02x %02x %02x",
			  o->path, (unsigned long)ip, why, b[0], b[1], b[2], b[3], b[4], b[5]);
	else
		ftrt_warn("ftkit: %s: site %#lx refused (%s)", o->path, (unsigned long)ip, why);
}

extern void __fentry__(void);

/*
 * Does the call at b (len bytes) go to __fentry__ (the runtime's or the C library's),
 * directly, through a GOT slot or through a plt stub?  A table entry pointing at a call to anything
 * else must not be nopped: that would silently change the program.
 */
static int calls_fentry(const struct ftrt_object *o, const unsigned char *b, unsigned len)
{
	static uintptr_t libc_fentry;
	uintptr_t t;
	int via_got;

	if (!libc_fentry)
		libc_fentry = (uintptr_t)dlsym(RTLD_NEXT, "__fentry__");
	t = ftrt_arch_site_call_dest(b, len, &via_got);
	if (via_got) {	/* through a GOT slot, resolved by the loader */
		if (!in_load(o, t, sizeof(t)))
			return 0;
		memcpy(&t, (const void *)t, sizeof(t));
	}
	if (t == (uintptr_t)__fentry__ || (libc_fentry && t == libc_fentry))
		return 1;
	return !via_got && in_exec(o, t, 8) && ftrt_arch_plt_stub((const unsigned char *)t);
}

/*
 * The tracers take the traced function's return address from the top of the stack at the
 * site: not so after some instructions (ftrt_arch_site_not_at_entry()).  ftlink drops such
 * entries (it knows where each function starts); an unprocessed table is checked here by
 * the bytes just before the site.  Why the site is refused, or NULL.
 */
static const char *site_not_at_entry(const struct ftrt_object *o, uintptr_t ip)
{
	unsigned before = FTRT_ARCH_SITE_LOOKBACK;

	while (before && !in_exec(o, ip - before, before))
		before--;
	return ftrt_arch_site_not_at_entry((const unsigned char *)ip, before);
}

/*
 * A table not processed by ftlink (recordmcount's 0xF7CA entries, or gcc -mrecord-mcount
 * absolute addresses): the sites may still be calls to __fentry__; check each and turn the
 * calls into nops of the same length, then sort.
 */
static void rec_callops(const struct ftrt_object *o, struct ftrt_rec *r, uintptr_t site,
			unsigned kind);

static int load_unlinked(struct ftrt_object *o, const unsigned char *tab, size_t n)
{
	struct ftrt_poke *pk;
	struct ftrt_rec **pr;
	size_t i, np = 0, nr = 0, bad, w;
	int ret = 0;

	pk = malloc(n * sizeof(*pk));
	pr = malloc(n * sizeof(*pr));
	if (!pk || !pr) {
		free(pk);
		free(pr);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const unsigned char *e = tab + 8 * i;
		uint64_t v;
		uint16_t magic;
		int32_t rel;
		uintptr_t ip;
		unsigned kind = 0, len;
		int isnop;
		const unsigned char *b;
		const char *why;
		struct ftrt_rec *r;

		memcpy(&v, e, 8);
		if (!v)
			continue;
		memcpy(&magic, e + 6, 2);
		if (magic == 0xF7CA || magic == 0xF7CB) {
			memcpy(&rel, e, 4);
			ip = (uintptr_t)e + (intptr_t)rel;
			kind = e[5];
		} else if (!(v >> 48)) {
			ip = (uintptr_t)v;	/* gcc: absolute, relocated by the loader */
		} else {
			ftrt_warn("ftkit: %s: __mcount_loc entry %zu is not a known format", o->path, i);
			nr_refused++;
			continue;
		}
		if (!in_exec(o, ip, 6)) {
			refuse_site(o, ip, "not in executable code");
			continue;
		}
		/* recordmcount's length is the one in the object file (kind set) */
		b = (const unsigned char *)ip;
		len = ftrt_arch_fentry_site(b, kind ? e[4] : -1, &isnop);
		if ((why = site_not_at_entry(o, ip))) {
			refuse_site(o, ip, why);
			continue;
		}
		if (!len || (!isnop && !calls_fentry(o, b, len))) {
			refuse_site(o, ip, "not a call to __fentry__ nor a nop");
			continue;
		}
		r = &o->recs[nr++];
		r->ip = ftrt_arch_rec_ip(ip, len);
		r->rel = 0;
		r->flags = len == 6 ? REC_LEN6 | REC_NOP6 : 0;
		if (kind & 0xf0)
			rec_callops(o, r, ip, kind);
		if (isnop)
			continue;
		pk[np].addr = (void *)ip;
		memcpy(pk[np].old, b, len);
		memcpy(pk[np].new, ftrt_arch_nop(len), len);
		pk[np].len = (unsigned char)len;
		pr[np] = r;
		np++;
	}
	while (np) {
		ret = ftrt_text_poke_batch(pk, np, &bad);
		if (ret != -EINVAL || bad >= np)
			break;
		pr[bad]->flags |= REC_REFUSED;
		nr_refused++;
		memmove(pk + bad, pk + bad + 1, (np - bad - 1) * sizeof(*pk));
		memmove(pr + bad, pr + bad + 1, (np - bad - 1) * sizeof(*pr));
		np--;
	}
	if (ret) {
		ftrt_warn("ftkit: %s: cannot nop the call sites (%s): tracing disabled for it",
			  o->path, strerror(-ret));
		nr = 0;
	}
	free(pk);
	free(pr);
	qsort(o->recs, nr, sizeof(*o->recs), rec_cmp);
	for (i = 0, w = 0; i < nr; i++)
		if (!w || o->recs[w - 1].ip != o->recs[i].ip)
			o->recs[w++] = o->recs[i];
	o->nrecs = w;
	return 0;
}

/*
 * The one-time preparation of the sites of a freshly loaded object (ftrt_arch_site_prepare:
 * arm64's mov x9, x30 before each bl site), in one batch; a site whose bytes are not what
 * the architecture expects is refused, the others prepared.
 */
static int prepare_sites(struct ftrt_object *o)
{
	struct ftrt_poke *pk;
	struct ftrt_rec **pr;
	size_t i, np = 0, bad;
	int ret = 0;

	if (!FTRT_ARCH_SITE_PREPARE || !o->nrecs)
		return 0;
	pk = malloc(o->nrecs * sizeof(*pk));
	pr = malloc(o->nrecs * sizeof(*pr));
	if (!pk || !pr) {
		free(pk);
		free(pr);
		return -ENOMEM;
	}
	for (i = 0; i < o->nrecs; i++) {
		if (o->recs[i].flags & REC_REFUSED)
			continue;
		if (ftrt_arch_site_prepare(o->recs[i].ip, &pk[np]))
			pr[np++] = &o->recs[i];
	}
	while (np) {
		ret = ftrt_text_poke_batch(pk, np, &bad);
		if (ret != -EINVAL || bad >= np)
			break;
		pr[bad]->flags |= REC_REFUSED;
		nr_refused++;
		memmove(pk + bad, pk + bad + 1, (np - bad - 1) * sizeof(*pk));
		memmove(pr + bad, pr + bad + 1, (np - bad - 1) * sizeof(*pr));
		np--;
	}
	if (ret) {
		ftrt_warn("ftkit: %s: cannot prepare the call sites (%s): tracing disabled for it",
			  o->path, strerror(-ret));
		o->nrecs = 0;
	}
	free(pk);
	free(pr);
	return 0;
}

static int load_table_sites(struct ftrt_object *o);

static int load_table(struct ftrt_object *o)
{
	int ret = load_table_sites(o);

	return ret ? ret : prepare_sites(o);
}

static int load_table_sites(struct ftrt_object *o)
{
	const ElfW(Phdr) *ph = o->phdr;
	const unsigned char *tab;
	uintptr_t addr;
	size_t size, n, i, nr = 0;
	unsigned j;
	uint16_t magic = 0;
	int ret, sorted = 1;

	o->lo = ~(uintptr_t)0;
	o->hi = 0;
	for (j = 0; j < o->phnum; j++) {
		if (ph[j].p_type != PT_LOAD)
			continue;
		if (o->bias + ph[j].p_vaddr < o->lo)
			o->lo = o->bias + ph[j].p_vaddr;
		if (o->bias + ph[j].p_vaddr + ph[j].p_memsz > o->hi)
			o->hi = o->bias + ph[j].p_vaddr + ph[j].p_memsz;
	}
	ret = ftrt_elf_find_table(o->path, &addr, &size);
	if (ret)
		return ret == -ENOENT ? 0 : ret;
	tab = (const unsigned char *)(o->bias + addr);
	if (size < 8)
		return 0;
	if (!in_load(o, (uintptr_t)tab, size)) {
		ftrt_warn("ftkit: %s: __mcount_loc is not inside a loaded segment: ignored", o->path);
		return -EINVAL;
	}
	n = size / 8;
	o->recs = recs_alloc(n);
	if (!o->recs)
		return -ENOMEM;
	o->recs_cap = n;
	prefault(tab, size);
	for (i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, tab + 8 * i, 8);
		if (v) {
			memcpy(&magic, tab + 8 * i + 6, 2);
			break;
		}
	}
	if (magic != 0xF7CB) {
		o->table_format = magic == 0xF7CA ? FTRT_TABLE_RECORDED : FTRT_TABLE_GCC;
		return load_unlinked(o, tab, n);
	}
	/* ftlink'ed: sorted, unique, nops; read the records straight through. */
	o->table_format = FTRT_TABLE_LINKED;
	{
		uintptr_t xlo = 0, xhi = 0;	/* the executable segment of the last site */
		uintptr_t prev = 0;

		for (i = 0; i < n; i++) {
			const unsigned char *e = tab + 8 * i;
			uint64_t v;
			unsigned len;
			uintptr_t ip;
			struct ftrt_rec *r;

			if (!(i & 7))
				__builtin_prefetch(e + 2048);	/* the hardware does not, here */
			memcpy(&v, e, 8);
			if ((uint16_t)(v >> 48) != 0xF7CB)
				continue;	/* empty slot */
			len = (unsigned)(v >> 32) & 0xff;
			ip = (uintptr_t)e + (intptr_t)(int32_t)(uint32_t)v;
			if (ip < xlo || ip + len > xhi) {
				if (!ftrt_arch_site_len_ok(len) || !exec_range(o, ip, len, &xlo, &xhi)) {
					refuse_site(o, ip, "bad table entry");
					continue;
				}
			}
			if (!ftrt_arch_site_len_ok(len)) {
				refuse_site(o, ip, "bad table entry");
				continue;
			}
			if (ip <= prev)
				sorted = 0;
			prev = ip;
			r = &o->recs[nr++];
			r->ip = ftrt_arch_rec_ip(ip, len);
			r->rel = 0;
			r->flags = len == 6 ? REC_LEN6 | REC_NOP6 : 0;
			if ((v >> 44) & 0xf)
				rec_callops(o, r, ip, (unsigned)(v >> 40) & 0xff);
		}
	}
	o->nrecs = nr;
	if (!sorted) {
		size_t w = 0;

		qsort(o->recs, nr, sizeof(*o->recs), rec_cmp);
		for (i = 0; i < nr; i++)
			if (!w || o->recs[w - 1].ip != o->recs[i].ip)
				o->recs[w++] = o->recs[i];
		o->nrecs = w;
	}
	return 0;
}

/* ---- trampolines of an ops, shared callers ---------------------------------------------- */

static ftrace_func_t ops_func(struct ftrace_ops *op);

static struct ftrt_tramp *ops_tramp(struct ftrace_ops *op, struct ftrt_arena *a)
{
	struct ftrt_tramp *t;
	ftrace_func_t fn;

	for (t = op->trampolines; t; t = t->next)
		if (t->arena == a)
			return t;
	fn = ops_func(op);
	t = ftrt_tramp_create(a, op, fn, (op->flags & FL_REGS) ? FTRT_TMPL_REGS :
				  ftrt_tramp_novec_ok(fn, op->flags) ? FTRT_TMPL_NOVEC : FTRT_TMPL_CALLER);
	if (t) {
		t->next = op->trampolines;
		op->trampolines = t;
	}
	return t;
}

static struct ftrt_tramp *shared_caller(struct ftrt_arena *a, int regs)
{
	struct ftrt_tramp **tp = regs ? &a->regs_caller : &a->caller;

	if (!*tp)
		*tp = ftrt_tramp_create(a, &ftrt_list_ops, ftrt_list_func,
					regs ? FTRT_TMPL_REGS : FTRT_TMPL_CALLER);
	return *tp;
}

/* ---- updates ---------------------------------------------------------------------------- */

static ftrace_func_t ops_func(struct ftrace_ops *op)
{
	return (op->flags & FTRACE_OPS_FL_RECURSION) ? ftrt_recursion_assist : op->func;
}

int ftrt_env_on(const char *name, int *cache)
{
	if (*cache < 0) {
		const char *e = secure_getenv(name);

		*cache = !(e && !strcmp(e, "0"));
	}
	return *cache;
}

/* FTRT_MULTI=0 sends every shared site to the list function (to compare; ignored setuid). */
static int multi_enabled(void)
{
	static int enabled = -1;

	return ftrt_env_on("FTRT_MULTI", &enabled);
}

/* A multi-ops trampoline in this arena for the set vec is kept at most per this many sets. */
#define MULTIS_PER_ARENA	64

/*
 * The trampoline running exactly the n ops of vec (in list order), made on first use and
 * shared by every site of the arena with that set; NULL to fall back on the shared caller
 * (set too big, arena full of sets, out of memory).
 */
static struct ftrt_tramp *multi_tramp(struct ftrt_arena *a, struct ftrace_ops **vec, unsigned n,
				      int regs)
{
	ftrace_func_t funcs[FTRT_MULTI_MAX];
	struct ftrt_tramp *t, *fb;
	unsigned i;
	int kind, novec = 1;

	if (n > FTRT_MULTI_MAX || !multi_enabled())
		return NULL;
	for (t = a->multis; t; t = t->next)
		if (t->nvec == n && t->regs == regs && !memcmp(t->vec, vec, n * sizeof(*vec)))
			return t;
	if (a->nmultis >= MULTIS_PER_ARENA)
		return NULL;
	for (i = 0; i < n; i++) {
		funcs[i] = ops_func(vec[i]);
		if (novec && !ftrt_tramp_novec_ok(funcs[i], vec[i]->flags))
			novec = 0;
	}
	kind = regs ? FTRT_MULTI_REGS : novec ? FTRT_MULTI_NOVEC : FTRT_MULTI_PLAIN;
	/* where a thread goes once the set is killed: the list function of the same frame */
	fb = shared_caller(a, regs);
	if (!fb)
		return NULL;
	t = ftrt_tramp_create_multi(a, vec, funcs, n, kind, (uintptr_t)fb->code);
	if (t) {
		t->next = a->multis;
		a->multis = t;
		a->nmultis++;
	}
	return t;
}

/* ---- per-call-site ops (CALL_OPS) -------------------------------------------------------- */

/*
 * A CALL_OPS site calls the arena's ftrace_callops_caller, which finds the 8-byte slot
 * before the site's function, reads the address of the site's *cell* from it and the ops
 * from the cell, and calls ops->func.  The slot is in the text: it is written once (through
 * ftrt_text_write_data), while no thread can read it (the site has never called the CALL_OPS
 * caller); from then on the site's ops changes with one aligned 8-byte store to its cell,
 * in writable memory, which the caller reads with one load: old or new, never torn.  A cell
 * holds a registered ops (the site's only one), a set (struct ftrt_callops: several ops, or
 * one RECURSION ops) or the stub (no ops: a thread that called just before the site became a
 * nop runs nothing).  What a cell held is freed as other callback memory: after a grace
 * period (the caller raises ftrt_cb_depth before it reads the slot).
 */
struct ftrt_callops {
	struct ftrace_ops	ops;		/* what a cell points at: ops.func runs the set */
	struct ftrt_callops	*next;		/* in callops_sets */
	unsigned long		refs;		/* cells holding it */
	unsigned		n;
	int			lean;		/* run by ftrace_callops_set_novec */
	struct ftrace_ops	*vec[];		/* in list order, NULL-terminated (ops.private) */
};

static struct ftrt_callops *callops_sets;

/* The ops of a set, in list order; a RECURSION ops is left out of nested calls. */
void ftrt_callops_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		       struct ftrace_regs *fregs)
{
	const struct ftrt_callops *c = (const struct ftrt_callops *)op;
	int nested = ftrt_cb_depth > 1;
	unsigned i;

	for (i = 0; i < c->n; i++) {
		struct ftrace_ops *x = c->vec[i];

		if (!((x->flags & FTRACE_OPS_FL_RECURSION) && nested))
			x->func(ip, parent_ip, x, fregs);
	}
}

static void callops_nothing(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs)
{
	(void)ip;
	(void)parent_ip;
	(void)op;
	(void)fregs;
}

struct ftrace_ops ftrt_callops_stub = { .func = callops_nothing };

/* FTRT_CALLOPS=0: CALL_OPS sites are served as the others (to compare; ignored setuid). */
static int callops_enabled(void)
{
	static int enabled = -1;

	return ftrt_env_on("FTRT_CALLOPS", &enabled);
}

/*
 * Cells: 8-byte words in chunks, one per CALL_OPS site used, owned by the site's object and
 * released when its code is unmapped (dlclose: no site can read them any more; unloading
 * code a thread runs is the program's error).  Chunks of objects the tables were reloaded
 * for while mapped (ftrt_debug_reload) stay: their slots still point there.
 */
#define CELLS_PER_CHUNK	509
struct cell_chunk {
	struct cell_chunk	*next;		/* every chunk (cell_owned) */
	struct cell_chunk	*onext;		/* its object's */
	size_t			used;
	uintptr_t		cell[CELLS_PER_CHUNK];
};
static struct cell_chunk *cell_chunks;
static long cells_live;

static uintptr_t *cell_alloc(struct ftrt_object *o)
{
	struct cell_chunk *c = o->cells;

	if (!c || c->used == CELLS_PER_CHUNK) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->next = cell_chunks;
		cell_chunks = c;
		c->onext = o->cells;
		o->cells = c;
	}
	c->cell[c->used] = (uintptr_t)&ftrt_callops_stub;
	cells_live++;
	return &c->cell[c->used++];
}

static void cell_put(uintptr_t *cell, uintptr_t v);

/* o's code is gone: its cells let go of their sets (swept at the next update) and are freed. */
static void cells_release(struct ftrt_object *o)
{
	struct cell_chunk *c, *n, **pp;

	for (c = o->cells; c; c = n) {
		n = c->onext;
		for (size_t i = 0; i < c->used; i++)
			cell_put(&c->cell[i], 0);
		cells_live -= (long)c->used;
		for (pp = &cell_chunks; *pp; pp = &(*pp)->next)
			if (*pp == c) {
				*pp = c->next;
				break;
			}
		free(c);
	}
	o->cells = NULL;
}

/* Is p one of our cells (a slot written before a reload of the tables)? */
static int cell_owned(uintptr_t p)
{
	struct cell_chunk *c;

	for (c = cell_chunks; c; c = c->next)
		if (p >= (uintptr_t)c->cell && p < (uintptr_t)(c->cell + c->used) && !(p & 7))
			return 1;
	return 0;
}

static uintptr_t *rec_cell(const struct ftrt_rec *r)
{
	return *(uintptr_t *const *)ftrt_arch_callops_slot(r->ip);
}

static struct ftrt_callops *as_set(uintptr_t v)
{
	const struct ftrace_ops *op = (const struct ftrace_ops *)v;

	return op && (op->func == ftrt_callops_func || op->func == ftrace_callops_set_novec) ?
		(struct ftrt_callops *)v : NULL;
}

/* Switch a cell (the one store a CALL_OPS site's callers see), counting the sets' users. */
static void cell_put(uintptr_t *cell, uintptr_t v)
{
	struct ftrt_callops *old = as_set(*cell), *new = as_set(v);

	if (new)
		new->refs++;
	if (old)
		old->refs--;
	__atomic_store_n(cell, v, __ATOMIC_RELEASE);
}

/*
 * The table says the site's function has 8 bytes of nops right before it (x86-64: -pg
 * -mfentry -fpatchable-function-entry=8,8; arm64: -fpatchable-function-entry=4,2; kind's
 * pre and pad): mark the site CALL_OPS if they lie where the CALL_OPS caller looks, or
 * REC_SLOT too if they already point at a cell of ours.  site: the table's site (the
 * function's entry, past its landing pad when kind says it has one).
 */
static void rec_callops(const struct ftrt_object *o, struct ftrt_rec *r, uintptr_t site,
			unsigned kind)
{
	const unsigned char *nops = ftrt_arch_callops_nops();
	uintptr_t entry = site - ((kind & 8) ? 4 : 0), slot = entry - 8, v;

	if (!FTRT_ARCH_CALLOPS || (kind >> 4) * 4 < 8 || slot != ftrt_arch_callops_slot(r->ip) || !in_exec(o, slot, 8))
		return;
	if (!memcmp((const void *)slot, nops, 8)) {
		r->flags |= REC_CALLOPS;
		return;
	}
	memcpy(&v, (const void *)slot, 8);
	if (cell_owned(v))
		r->flags |= REC_CALLOPS | REC_SLOT;
}

/*
 * What the cell of a site served by the n ops of vec holds: the ops itself when alone and
 * not RECURSION, else the set (made on first use, shared by every site with it); 0 when out
 * of memory.  *lean: the lean CALL_OPS caller may run it (every callback proven to need no
 * vector register, %rcx or frame, as for ftrace_caller_novec; no RECURSION ops).
 */
static uintptr_t callops_value(struct ftrace_ops **vec, unsigned n, int *lean)
{
	struct ftrt_callops *c;
	unsigned i;

	*lean = 1;
	for (i = 0; i < n && *lean; i++)
		if ((vec[i]->flags & FTRACE_OPS_FL_RECURSION) || !ftrt_tramp_novec_ok(vec[i]->func, vec[i]->flags))
			*lean = 0;
	if (n == 1 && !(vec[0]->flags & FTRACE_OPS_FL_RECURSION))
		return (uintptr_t)vec[0];
	for (c = callops_sets; c; c = c->next)
		if (c->n == n && c->lean == *lean && !memcmp(c->vec, vec, n * sizeof(*vec)))
			return (uintptr_t)c;
	c = calloc(1, sizeof(*c) + (n + 1) * sizeof(*vec));
	if (!c)
		return 0;
	c->ops.func = *lean ? ftrace_callops_set_novec : ftrt_callops_func;
	c->ops.flags = FTRACE_OPS_FL_RECURSION;	/* recursion is decided per ops inside */
	c->ops.private = c->vec;
	c->n = n;
	c->lean = *lean;
	memcpy(c->vec, vec, n * sizeof(*vec));
	c->next = callops_sets;
	callops_sets = c;
	return (uintptr_t)c;
}

static void defer_free(void *p);

/* Sets no cell holds any more: freed after a grace period (a thread may be running one). */
static void callops_sweep(void)
{
	struct ftrt_callops **pp = &callops_sets, *c;

	while ((c = *pp)) {
		if (c->refs) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		defer_free(c);
	}
}

static struct ftrt_tramp *callops_caller(struct ftrt_arena *a, int lean)
{
	if (!a->callops[lean])
		a->callops[lean] = ftrt_tramp_create_callops(a, lean);
	return a->callops[lean];
}

/* Which CALL_OPS caller does target name in o's arena: 1 the full one, 2 the lean one, or 0. */
static int callops_kind(const struct ftrt_object *o, uintptr_t target)
{
	int lean;

	for (lean = 0; o->arena && lean < 2; lean++)
		if (o->arena->callops[lean] && target == (uintptr_t)o->arena->callops[lean]->code)
			return 1 + lean;
	return 0;
}

/* Does r call a CALL_OPS caller now (as its record says)?  1 the full one, 2 the lean one. */
static int rec_calls_callops(const struct ftrt_object *o, const struct ftrt_rec *r)
{
	return (r->flags & REC_CALL) ? callops_kind(o, ftrt_arch_call_target(r->ip, r->rel)) : 0;
}

/*
 * Where a record should point now (0: nop), or -errno; *cellv: for a CALL_OPS site, what
 * its cell must hold (0: the site does not call the CALL_OPS caller).
 */
static long rec_target(struct ftrt_object *o, struct ftrt_rec *r, uintptr_t *target,
		       uintptr_t *cellv)
{
	unsigned cnt = r->flags & REC_COUNT_MASK, n = 0;
	struct ftrace_ops *op, *one = NULL, *vec[FTRT_MULTI_MAX];
	struct ftrt_tramp *t = NULL;
	int regs = 0, excl = 0;

	*target = 0;
	*cellv = 0;
	if (!cnt)
		return 0;
	if (!o->arena) {
		o->arena = ftrt_arena_for(o->lo, o->hi);
		if (!o->arena)
			return -ENOMEM;
	}
	for (op = atomic_load(&ops_list); op; op = op->next) {
		if ((op->flags & FL_REMOVING) || !ops_match(op, r->ip))
			continue;
		if (n < FTRT_MULTI_MAX)
			vec[n] = op;
		n++;
		one = op;
		if (op->flags & FL_REGS)
			regs = 1;
		if (op->flags & FL_EXCL)
			excl = 1;
	}
	/* CALL_OPS: the ops the plain caller serves (no registers, no IPMODIFY, no direct) */
	if ((r->flags & REC_CALLOPS) && n == cnt && n <= FTRT_MULTI_MAX && !regs && !excl &&
	    callops_enabled()) {
		int lean;
		uintptr_t v = callops_value(vec, n, &lean);

		if (v && (t = callops_caller(o->arena, lean))) {
			*target = (uintptr_t)t->code;
			*cellv = v;
			return 0;
		}
		t = NULL;
	}
	if (cnt == 1 && one && (one->flags & FTRACE_OPS_FL_DIRECT)) {
		/* the site calls the direct trampoline itself, when in reach */
		uintptr_t d = __atomic_load_n(&one->direct_call, __ATOMIC_RELAXED);
		if (ftrt_arch_call_reaches(r->ip, d)) {
			*target = d;
			return 0;
		}
		t = ops_tramp(one, o->arena);	/* regs trampoline: divert */
	} else if (cnt == 1 && one)
		t = ops_tramp(one, o->arena);
	else if (n >= 2 && n == cnt)
		t = multi_tramp(o->arena, vec, n, regs);
	if (!t)
		t = shared_caller(o->arena, regs);
	if (!t)
		return -ENOMEM;
	*target = (uintptr_t)t->code;
	return 0;
}

/*
 * An update visits only the records it marked: each object keeps the index range of its
 * dirty records, so switching one site of a 300k-site program does not walk them all.
 */
static void mark_dirty(struct ftrt_object *o, struct ftrt_rec *r)
{
	size_t i = (size_t)(r - o->recs);

	r->flags |= REC_DIRTY;
	if (!o->dirty_end) {
		o->dirty_lo = i;
		o->dirty_end = i + 1;
		return;
	}
	if (i < o->dirty_lo)
		o->dirty_lo = i;
	if (i >= o->dirty_end)
		o->dirty_end = i + 1;
}

static size_t nr_dirty(void)
{
	struct ftrt_object *o;
	size_t i, n = 0;

	for (o = objects; o; o = o->next)
		for (i = o->dirty_lo; i < o->dirty_end; i++)
			if (o->recs[i].flags & REC_DIRTY)
				n++;
	return n;
}

/*
 * A site found holding unexpected bytes while being patched is never touched again, and no
 * longer counts as matched: the ops that match it give it up (refused sites are never
 * counted, so unregistering them later changes nothing).
 */
static void uncount_refused(struct ftrt_rec *r)
{
	struct ftrace_ops *op;

	for (op = atomic_load(&ops_list); op; op = op->next)
		if (!(op->flags & FL_REMOVING) && op->nr_sites && ops_match(op, r->ip))
			op->nr_sites--;
	r->flags = (r->flags & ~REC_COUNT_MASK) | REC_REFUSED;
}

/*
 * Count the sites calling each multi-ops trampoline (an unused one is freed at a sweep):
 * r, of an object whose arena is a, counts d more on the one it calls, if any.
 */
static void multi_ref(struct ftrt_arena *a, const struct ftrt_rec *r, int d)
{
	struct ftrt_tramp *t;

	if (!(r->flags & REC_CALL) || !a || !a->nmultis)
		return;
	t = ftrt_tramp_at(a, ftrt_arch_call_target(r->ip, r->rel));
	if (t && t->vec)
		t->refs += (unsigned long)(long)d;
}

/*
 * The arrays of patch_dirty, kept between updates: each dirty record's new target, and one
 * chunk's pokes.  An update is patched in chunks of PATCH_CHUNK sites so that the arrays
 * (here and in the patching layer: about 150 bytes per site) stay a few MB and warm: a
 * first enable of all 300k sites of a program touched 45 MB of fresh memory, which on this
 * VM cost more than the patching itself (bench/RESULTS.md, "Cold enable").
 *
 * A record's new (target, cell) pair and a CALL_OPS cell's old value are few distinct
 * values (trampolines, callers, ops vectors): each record keeps a 4-byte index into a
 * table of them (batch_val), not the values.  Three arrays of 8-byte values per record were
 * 12 MB of fresh huge pages, cleared at first touch (a first enable of 300k sites: 14 % of
 * the process's CPU samples in clearing them, 2 % with the indexes).
 */
#define PATCH_CHUNK	32768
struct batch_val {
	uintptr_t tgt, cell;
};
static struct batch_val *batch_val;
static uint32_t *batch_vhash;		/* open addressing: index + 1, 0 empty */
static size_t nval, cap_val, vhash_mask;
static uint32_t *batch_ti, *batch_oi;	/* per dirty record: new pair, old cell (as pairs) */
static struct ftrt_poke *batch_pk;
static struct ftrt_rec **batch_pr;
static size_t cap_ti, cap_oi, cap_pk, cap_pr;

static size_t val_slot(uintptr_t tgt, uintptr_t cell)
{
	uint64_t h = (tgt ^ (cell * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & vhash_mask;
}

/* Enter batch_val[i] in the hash (which has a free slot). */
static void val_hash_put(size_t i)
{
	size_t j = val_slot(batch_val[i].tgt, batch_val[i].cell);

	while (batch_vhash[j])
		j = (j + 1) & vhash_mask;
	batch_vhash[j] = (uint32_t)i + 1;
}

/* The index of (tgt, cell) in batch_val, added if new; -ENOMEM. */
static long val_intern(uintptr_t tgt, uintptr_t cell)
{
	size_t i;

	if (nval && batch_val[nval - 1].tgt == tgt && batch_val[nval - 1].cell == cell)
		return (long)nval - 1;	/* records in a row mostly share one */
	if (batch_vhash)
		for (i = val_slot(tgt, cell); batch_vhash[i]; i = (i + 1) & vhash_mask)
			if (batch_val[batch_vhash[i] - 1].tgt == tgt &&
			    batch_val[batch_vhash[i] - 1].cell == cell)
				return (long)batch_vhash[i] - 1;
	if (nval == UINT32_MAX - 1)
		return -ENOMEM;
	if (nval == cap_val) {
		size_t c = cap_val ? cap_val * 2 : 64;
		struct batch_val *nv = realloc(batch_val, c * sizeof(*nv));
		uint32_t *nh = calloc(c * 2, sizeof(*nh));

		if (!nv || !nh) {
			if (nv)
				batch_val = nv;
			free(nh);
			return -ENOMEM;
		}
		batch_val = nv;
		cap_val = c;
		free(batch_vhash);
		batch_vhash = nh;
		vhash_mask = c * 2 - 1;
		for (i = 0; i < nval; i++)
			val_hash_put(i);
	}
	batch_val[nval] = (struct batch_val){ tgt, cell };
	val_hash_put(nval);
	return (long)nval++;
}

static void vals_reset(void)
{
	if (nval)
		memset(batch_vhash, 0, (vhash_mask + 1) * sizeof(*batch_vhash));
	nval = 0;
}

static inline uintptr_t batch_tgt(size_t k)
{
	return batch_val[batch_ti[k]].tgt;
}

static inline uintptr_t batch_cell(size_t k)
{
	return batch_val[batch_ti[k]].cell;
}

/* Record k's target from rec_target; 0 or -errno. */
static int batch_target(struct ftrt_object *o, struct ftrt_rec *r, size_t k)
{
	uintptr_t t, c;
	long v = rec_target(o, r, &t, &c);

	if (v)
		return (int)v;
	if ((v = val_intern(t, c)) < 0)
		return (int)v;
	batch_ti[k] = (uint32_t)v;
	return 0;
}

/* Make *p hold n elements of size (capacity *cap, in elements). */
static int batch_grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *np;

	if (n <= *cap)
		return 0;
	while (c < n)
		c *= 2;
	/* a big one is mapped with room to grow (ftrt_big_grow): no more than asked is touched */
	if (c * size >= (256u << 10))
		c = n;
	np = ftrt_big_grow(*p, *cap * size, c * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

/* Do r's bytes change to call target (0: nop)?  A call's bytes are its target's alone. */
static int rec_changes(const struct ftrt_rec *r, uintptr_t target)
{
	if (r->flags & REC_NOP6)
		return target != 0;
	return target != ((r->flags & REC_CALL) ? ftrt_arch_call_target(r->ip, r->rel) : 0);
}

/*
 * The poke that takes r from what its record says it holds to target (0: nop); 0 when the
 * site needs no write.  back: the reverse (from target to the record's state).
 */
static int rec_poke(const struct ftrt_rec *r, uintptr_t target, int back, struct ftrt_poke *p)
{
	unsigned char cur[FTRT_ARCH_SITE_MAX], want[FTRT_ARCH_SITE_MAX];
	unsigned len = FTRT_ARCH_CALL_SIZE;

	if (!rec_changes(r, target))
		return 0;
	if (r->flags & REC_NOP6) {
		memcpy(cur, ftrt_arch_nop(6), 6);
		ftrt_arch_make_call(want, r->ip, target, 6);
		len = 6;
	} else {
		if (r->flags & REC_CALL)
			ftrt_arch_make_call(cur, r->ip, ftrt_arch_call_target(r->ip, r->rel), len);
		else
			memcpy(cur, ftrt_arch_nop(len), len);
		if (target)
			ftrt_arch_make_call(want, r->ip, target, len);
		else
			memcpy(want, ftrt_arch_nop(len), len);
	}
	p->addr = (void *)r->ip;
	p->len = (unsigned char)len;
	memcpy(p->old, back ? want : cur, len);
	memcpy(p->new, back ? cur : want, len);
	return 1;
}

/* One chunk of pokes; a refused site is dropped (and never touched again), the rest goes. */
static int poke_chunk(struct ftrt_poke *pk, struct ftrt_rec **pr, size_t *np)
{
	size_t bad;
	int ret = 0;

	while (*np) {
		ret = ftrt_text_poke_batch(pk, *np, &bad);
		if (ret != -EINVAL || bad >= *np)
			break;
		uncount_refused(pr[bad]);
		nr_refused++;
		memmove(pk + bad, pk + bad + 1, (*np - bad - 1) * sizeof(*pk));
		memmove(pr + bad, pr + bad + 1, (*np - bad - 1) * sizeof(*pr));
		(*np)--;
	}
	return ret;
}

/*
 * Patch the first `upto` dirty records (in visiting order) from their recorded state to
 * their target, or back (undoing chunks already written), in chunks.  0 or the error of the
 * first chunk that failed (that chunk left its sites as they were); *done: the records
 * visited by the chunks that went through.
 */
static int patch_chunks(size_t upto, int back, size_t *done)
{
	struct ftrt_object *o;
	size_t k = 0, np = 0, i;
	int ret;

	*done = 0;
	for (o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end && k < upto; i++) {
			struct ftrt_rec *r = &o->recs[i];

			if (!(r->flags & REC_DIRTY))
				continue;
			if (!(r->flags & REC_REFUSED) && rec_poke(r, batch_tgt(k), back, &batch_pk[np]))
				batch_pr[np++] = r;
			k++;
			if (np == PATCH_CHUNK) {
				if ((ret = poke_chunk(batch_pk, batch_pr, &np)))
					return ret;
				*done = k;
				np = 0;
			}
		}
	}
	if (np && (ret = poke_chunk(batch_pk, batch_pr, &np)))
		return ret;
	*done = k;
	return 0;
}

/*
 * Write one chunk of slots; a slot found not to hold the nops any more is dropped and its
 * site is no CALL_OPS site from now on (retargeted by write_slots).
 */
static int slots_chunk(size_t np)
{
	size_t bad, j;
	int ret = 0;

	while (np) {
		ret = ftrt_text_write_data(batch_pk, np, &bad);
		if (ret != -EINVAL || bad >= np)
			break;
		batch_pr[bad]->flags &= ~REC_CALLOPS;
		memmove(batch_pk + bad, batch_pk + bad + 1, (np - bad - 1) * sizeof(*batch_pk));
		memmove(batch_pr + bad, batch_pr + bad + 1, (np - bad - 1) * sizeof(*batch_pr));
		np--;
	}
	if (ret)
		return ret;
	for (j = 0; j < np; j++)
		batch_pr[j]->flags |= REC_SLOT;
	return 0;
}

/*
 * CALL_OPS sites an update sends to the CALL_OPS caller for the first time: point their
 * slots at new cells (holding the stub), in chunks, before any of them can call it.
 */
static int write_slots(size_t n)
{
	const unsigned char *nops = ftrt_arch_callops_nops();
	struct ftrt_object *o;
	size_t k = 0, np = 0, i;
	int ret;

	for (o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end && k < n; i++) {
			struct ftrt_rec *r = &o->recs[i];
			uintptr_t *cell;

			if (!(r->flags & REC_DIRTY))
				continue;
			if (!batch_cell(k++) || (r->flags & (REC_SLOT | REC_REFUSED)))
				continue;
			cell = cell_alloc(o);
			if (!cell)
				return -ENOMEM;
			batch_pk[np].addr = (void *)ftrt_arch_callops_slot(r->ip);
			batch_pk[np].len = 8;
			memcpy(batch_pk[np].old, nops, 8);
			memcpy(batch_pk[np].new, &cell, 8);
			batch_pr[np++] = r;
			if (np == PATCH_CHUNK) {
				if ((ret = slots_chunk(np)))
					return ret;
				np = 0;
			}
		}
	}
	if (np && (ret = slots_chunk(np)))
		return ret;
	/* sites that lost CALL_OPS get the target the other sites get */
	for (k = 0, o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end; i++) {
			struct ftrt_rec *r = &o->recs[i];

			if (!(r->flags & REC_DIRTY))
				continue;
			if (batch_cell(k) && !(r->flags & REC_CALLOPS) &&
			    (ret = batch_target(o, r, k)))
				return ret;
			k++;
		}
	}
	return 0;
}

/*
 * What the cell of a CALL_OPS site holds while the site calls something else (or nothing).
 * A thread may have entered the CALL_OPS caller just before the site moved and read the
 * cell later: it must still run the ops that stay registered on the site (as a thread in an
 * ops' own trampoline does) and no ops being unregistered.  So the cell follows the site's
 * ops: those the caller it last called can run (not SAVE_REGS, IPMODIFY or direct ones, as
 * the list function skips a SAVE_REGS ops without a frame; only lean ones after the lean
 * caller), the list function beyond FTRT_MULTI_MAX of them (full caller), the stub when none.
 */
static uintptr_t callops_fallback(const struct ftrt_rec *r)
{
	struct ftrace_ops *op, *vec[FTRT_MULTI_MAX];
	int lean_only = !!(r->flags & REC_CO_LEAN), lean;
	unsigned n = 0;
	uintptr_t v;

	for (op = atomic_load(&ops_list); op; op = op->next) {
		if ((op->flags & (FL_REMOVING | FL_REGS | FL_EXCL)) || !ops_match(op, r->ip))
			continue;
		if (lean_only && ((op->flags & FTRACE_OPS_FL_RECURSION) ||
				  !ftrt_tramp_novec_ok(op->func, op->flags)))
			continue;
		if (n == FTRT_MULTI_MAX) {
			if (!lean_only)
				return (uintptr_t)&ftrt_list_ops;
			break;	/* the lean caller: the first FTRT_MULTI_MAX */
		}
		vec[n++] = op;
	}
	if (!n)
		return (uintptr_t)&ftrt_callops_stub;
	v = callops_value(vec, n, &lean);
	return v ? v : (uintptr_t)&ftrt_callops_stub;
}

/*
 * A site moving from the lean CALL_OPS caller to the full one: its new ops may need what
 * the lean caller does not save, so its cell changes only once the site calls the full one.
 */
static int cell_after_patch(const struct ftrt_object *o, const struct ftrt_rec *r, uintptr_t t)
{
	return rec_calls_callops(o, r) == 2 && callops_kind(o, t) == 1;
}

/*
 * The cells of the dirty CALL_OPS sites get their new ops before the sites are patched (a
 * site already calling a CALL_OPS caller switches right here), except those moving to the
 * full caller from the lean one (after the patch, in patch_dirty); undo puts the old values
 * back.  After the patch, the sites that no longer call one get the stub (done: a thread
 * that called before the patch then runs nothing or the old ops, whose callbacks the
 * unregister's grace period waits for).  CELLS_SAVE, before any change, keeps the old
 * values for the undo (it may fail: -ENOMEM).
 */
enum { CELLS_SAVE, CELLS_SWITCH, CELLS_UNDO };

static int cells_walk(int mode)
{
	struct ftrt_object *o;
	size_t k = 0, i;
	long v;

	for (o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end; i++) {
			struct ftrt_rec *r = &o->recs[i];

			if (!(r->flags & REC_DIRTY))
				continue;
			if (batch_cell(k) && (r->flags & REC_SLOT) && !(r->flags & REC_REFUSED) &&
			    !cell_after_patch(o, r, batch_tgt(k))) {
				uintptr_t *cell = rec_cell(r);

				if (mode == CELLS_SAVE) {
					if ((v = val_intern(0, *cell)) < 0)
						return (int)v;
					batch_oi[k] = (uint32_t)v;
				} else {
					cell_put(cell, mode == CELLS_UNDO ? batch_val[batch_oi[k]].cell :
									 batch_cell(k));
				}
			}
			k++;
		}
	}
	return 0;
}

/* Patch every dirty record to its target (targets first, so a failure leaves nothing half done). */
static int patch_dirty(void)
{
	size_t n = nr_dirty(), k = 0, done, undone, i;
	struct ftrt_object *o;
	int ret = 0, cells = 0;

	if (!n)
		return 0;
	vals_reset();
	if (batch_grow((void **)&batch_ti, &cap_ti, n, sizeof(*batch_ti)) ||
	    batch_grow((void **)&batch_pk, &cap_pk, n < PATCH_CHUNK ? n : PATCH_CHUNK,
		       sizeof(*batch_pk)) ||
	    batch_grow((void **)&batch_pr, &cap_pr, n < PATCH_CHUNK ? n : PATCH_CHUNK,
		       sizeof(*batch_pr))) {
		ret = -ENOMEM;
		goto out;
	}
	for (o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end; i++) {
			struct ftrt_rec *r = &o->recs[i];

			if (!(r->flags & REC_DIRTY))
				continue;
			if ((ret = batch_target(o, r, k)))
				goto out;
			if (batch_tgt(k) && !ftrt_arch_call_reaches(r->ip, batch_tgt(k))) {
				ret = -ENOMEM;	/* trampoline out of reach: cannot happen */
				goto out;
			}
			cells |= batch_cell(k) != 0;
			k++;
		}
	}
	/* no CALL_OPS site in the update: no slot, no cell (three walks of every record) */
	if (cells && (ret = write_slots(n)))
		goto out;
	if (cells && batch_grow((void **)&batch_oi, &cap_oi, n, sizeof(*batch_oi))) {
		ret = -ENOMEM;
		goto out;
	}
	if (cells && (ret = cells_walk(CELLS_SAVE)))
		goto out;
	if (cells)
		cells_walk(CELLS_SWITCH);
	ret = patch_chunks(n, 0, &done);
	if (ret) {
		/* put the chunks already written back as the records say */
		if (done && patch_chunks(done, 1, &undone))
			ftrt_warn("ftkit: undoing a failed update failed: some sites are left "
				  "calling what the update wanted");
		if (cells)
			cells_walk(CELLS_UNDO);
		goto out;
	}
	/* the records follow the bytes */
	for (k = 0, o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end; i++) {
			struct ftrt_rec *r = &o->recs[i];
			uintptr_t t, cv;

			if (!(r->flags & REC_DIRTY))
				continue;
			cv = batch_cell(k);
			t = batch_tgt(k++);
			/* a CALL_OPS site not calling a CALL_OPS caller: the cell follows its ops */
			if ((r->flags & REC_SLOT) && (r->flags & REC_REFUSED))
				cell_put(rec_cell(r), (uintptr_t)&ftrt_callops_stub);
			else if ((r->flags & REC_SLOT) && !cv)
				cell_put(rec_cell(r), callops_fallback(r));
			else if (cv && (r->flags & REC_SLOT) && cell_after_patch(o, r, t))
				cell_put(rec_cell(r), cv);	/* now calling the full caller */
			if ((r->flags & REC_REFUSED) || !rec_changes(r, t))
				continue;
			multi_ref(o->arena, r, -1);
			r->flags &= ~REC_NOP6;
			if (t) {
				r->flags |= REC_CALL;
				r->rel = ftrt_arch_call_rel(r->ip, t);
				if (cv && callops_kind(o, t) == 2)
					r->flags |= REC_CO_LEAN;
				else if (cv)
					r->flags &= ~REC_CO_LEAN;
			} else {
				r->flags &= ~REC_CALL;
				r->rel = 0;
			}
			multi_ref(o->arena, r, 1);
		}
	}
out:
	for (o = objects; o; o = o->next) {
		for (i = o->dirty_lo; i < o->dirty_end; i++)
			o->recs[i].flags &= ~REC_DIRTY;
		o->dirty_lo = o->dirty_end = 0;
	}
	callops_sweep();
	return ret;
}

static void adjust_rec(struct ftrace_ops *x, struct ftrt_object *o, struct ftrt_rec *r,
		       int om, int nm)
{
	if (om == nm || (r->flags & REC_REFUSED))
		return;
	if (nm) {
		r->flags++;
		x->nr_sites++;
	} else {
		r->flags--;
		x->nr_sites--;
	}
	mark_dirty(o, r);
}

static void adjust_ip(struct ftrace_ops *x, unsigned long ip, int old_en,
		      const struct ftrt_hash *of, const struct ftrt_hash *on, int new_en,
		      const struct ftrt_hash *nf, const struct ftrt_hash *nn)
{
	struct ftrt_object *o;
	struct ftrt_rec *r = rec_lookup(ip, &o);

	if (r)
		adjust_rec(x, o, r, old_en && hash_match(of, on, ip), new_en && hash_match(nf, nn, ip));
}

static size_t hash_count(const struct ftrt_hash *h)
{
	return h ? h->count : 0;
}

static void adjust_counts(struct ftrace_ops *x, int old_en, const struct ftrt_hash *of,
			  const struct ftrt_hash *on, int new_en, const struct ftrt_hash *nf,
			  const struct ftrt_hash *nn)
{
	struct ftrt_object *o;
	size_t i, nrecs = 0;

	for (o = objects; o; o = o->next)
		nrecs += o->nrecs;
	/*
	 * With a filter on both sides (or a side disabled), only the filtered addresses can
	 * change: look those up instead of testing every record, when they are few.
	 */
	if ((!old_en || hash_count(of)) && (!new_en || hash_count(nf)) &&
	    ((old_en ? hash_count(of) : 0) + (new_en ? hash_count(nf) : 0)) * 16 < nrecs) {
		if (old_en)
			for (i = 0; i <= of->mask; i++)
				if (of->e[i])
					adjust_ip(x, of->e[i], old_en, of, on, new_en, nf, nn);
		if (new_en)
			for (i = 0; i <= nf->mask; i++)
				if (nf->e[i] && !(old_en && hash_has(of, nf->e[i])))
					adjust_ip(x, nf->e[i], old_en, of, on, new_en, nf, nn);
		return;
	}
	for (o = objects; o; o = o->next)
		for (i = 0; i < o->nrecs; i++) {
			struct ftrt_rec *r = &o->recs[i];

			adjust_rec(x, o, r, old_en && hash_match(of, on, r->ip),
				   new_en && hash_match(nf, nn, r->ip));
		}
}

/*
 * Is any site that x newly matches already matched by another ops that decides where the
 * function goes on (IPMODIFY or DIRECT, the kernel's rule when the direct ops has no
 * ops_func to share)?  Either kind excludes both kinds.
 */
static int ipmodify_conflict(struct ftrace_ops *x, int old_en, const struct ftrt_hash *of,
			     const struct ftrt_hash *on, const struct ftrt_hash *nf,
			     const struct ftrt_hash *nn)
{
	struct ftrt_object *o;
	struct ftrace_ops *op;
	size_t i;

	if (!(x->flags & FL_EXCL))
		return 0;
	for (op = atomic_load(&ops_list); op; op = op->next) {
		if (op == x || !(op->flags & FL_EXCL) || (op->flags & FL_REMOVING))
			continue;
		for (o = objects; o; o = o->next)
			for (i = 0; i < o->nrecs; i++) {
				uintptr_t ip = o->recs[i].ip;

				if (hash_match(nf, nn, ip) && !(old_en && hash_match(of, on, ip)) &&
				    ops_match(op, ip))
					return 1;
			}
	}
	return 0;
}

/*
 * x changes from (old_en, old hashes) to (new_en, new hashes); the new state is already
 * published (list membership, FL_REMOVING, hash pointers).  Moves the affected sites.
 */
static int update(struct ftrace_ops *x, int old_en, const struct ftrt_hash *of,
		  const struct ftrt_hash *on, int new_en, const struct ftrt_hash *nf,
		  const struct ftrt_hash *nn)
{
	int ret;

	adjust_counts(x, old_en, of, on, new_en, nf, nn);
	ret = patch_dirty();
	if (ret)
		adjust_counts(x, new_en, nf, nn, old_en, of, on);
	return ret;
}

/*
 * Memory the list function may still read (old filter hashes), freed after the next grace
 * period: a filter change does not wait for one itself.
 */
static void **deferred;
static size_t ndeferred, capdeferred;

/* Retire after this many (amortises the signal round of ftrt_sync_retired). */
#define QUARANTINE_MAX	96
/* An unregister that also releases the quarantine gives up waiting after this long. */
#define RELEASE_LIMIT_US 500000

/*
 * A grace period for callbacks: the ops unlinked and the slots cleared before it are no
 * longer used by any thread when it returns 0; then the deferred memory is freed.
 */
static int grace_period(void)
{
	size_t i, n = ndeferred;
	int err = ftrt_sync_callbacks(NULL, NULL);

	if (err) {
		ftrt_warn("ftkit: waiting for callbacks to finish failed (%s); memory they may use "
			  "is kept", strerror(-err));
		return err;
	}
	for (i = 0; i < n; i++)
		free(deferred[i]);
	if (n)
		memmove(deferred, deferred + n, (ndeferred - n) * sizeof(*deferred));
	ndeferred -= n;
	return 0;
}

static void defer_free(void *p)
{
	if (!p)
		return;
	if (ndeferred == capdeferred) {
		size_t cap = capdeferred ? capdeferred * 2 : 16;
		void **n = realloc(deferred, cap * sizeof(*n));

		if (!n) {	/* cannot queue it: wait now (or keep it) */
			if (!grace_period())
				free(p);
			return;
		}
		deferred = n;
		capdeferred = cap;
	}
	deferred[ndeferred++] = p;
	if (ndeferred >= 256)
		grace_period();
}

/* Trampolines whose callbacks could not be shown finished: never freed. */
static struct ftrt_tramp *leaked;

/*
 * Which threads an unregister of ops X must wait for, from what they published (read after
 * the barrier): a thread at depth 1 in a list walk (ftrt_cb_node != 0) only if it holds X
 * or is reading the link to it (X | 1, pred(X) | 1 from list_remove); any other thread
 * whose counter is raised (in a trampoline of some ops: which one is not published, to keep
 * the per-call cost down; nested frames) is waited for.
 */
struct busy_ctx {
	uintptr_t x, pred_tag;
};

static int cb_busy(const struct ftrt_cb_view *v, void *ctxv)
{
	const struct busy_ctx *c = ctxv;

	if (v->depth <= 0)
		return 0;
	if (v->depth > 1 || !v->node)
		return 1;
	return v->node == c->x || v->node == (c->x | 1) || v->node == c->pred_tag;
}

/*
 * No site calls ops' trampolines any more and ops is off the list (pred_tag: from
 * list_remove): stop them calling the callback, wait until no thread still runs it, then
 * quarantine their memory (released in batches, see ftrt_tramp_release).  If the wait
 * fails, the memory is kept for good.
 */
static int retire_trampolines(struct ftrace_ops *ops, uintptr_t pred_tag)
{
	struct busy_ctx c = { (uintptr_t)ops, pred_tag };
	struct ftrt_tramp *t, *n, *multis = ftrt_multis_take(ops);
	int err;

	for (t = ops->trampolines; t; t = t->next)
		ftrt_tramp_kill(t);
	/* the sets with ops (no site calls them now) and the ones no site calls any more */
	for (t = multis; t; t = t->next)
		ftrt_tramp_kill(t);
	err = ftrt_sync_callbacks(cb_busy, &c);
	if (err)
		ftrt_warn("ftkit: waiting for callbacks to finish failed (%s); the trampolines "
			  "are kept", strerror(-err));
	for (t = ops->trampolines; t; t = n) {
		n = t->next;
		if (err) {
			t->next = leaked;
			leaked = t;
		} else {
			ftrt_tramp_retire(t);
		}
	}
	ops->trampolines = NULL;
	for (t = multis; t; t = n) {
		n = t->next;
		if (err) {
			t->next = leaked;
			leaked = t;
		} else {
			ftrt_tramp_retire(t);
		}
	}
	/* amortised: the conservative grace period for the deferred frees, then the release */
	if (!err && (ftrt_nr_quarantined >= QUARANTINE_MAX || ndeferred >= 128) &&
	    !grace_period())
		ftrt_tramp_release(RELEASE_LIMIT_US);	/* on failure: kept, tried again later */
	return err;
}

/*
 * After a filter change: the multi-ops trampolines no site calls any more are killed and,
 * once no thread can be running their callbacks (a full grace period: which ops a thread
 * in a trampoline serves is not published), retired.  Nothing to do in the usual case.
 */
static void sweep_multis(void)
{
	struct ftrt_tramp *t, *n, *multis;
	int err;

	if (!ftrt_multis_unused())
		return;
	multis = ftrt_multis_take(NULL);
	for (t = multis; t; t = t->next)
		ftrt_tramp_kill(t);
	err = ftrt_sync_callbacks(NULL, NULL);
	for (t = multis; t; t = n) {
		n = t->next;
		if (err) {
			t->next = leaked;
			leaked = t;
		} else {
			ftrt_tramp_retire(t);
		}
	}
}

/* Unlink ops; returns what a walk shows while reading the link to it (see ftrt_list_func). */
static uintptr_t list_remove(struct ftrace_ops *ops)
{
	struct ftrace_ops *_Atomic *pp = &ops_list;
	struct ftrace_ops *p, *prev = NULL;

	for (p = atomic_load(pp); p; prev = p, pp = (struct ftrace_ops *_Atomic *)&p->next, p = atomic_load(pp))
		if (p == ops) {
			atomic_store_explicit(pp, ops->next, memory_order_release);
			return (uintptr_t)prev | 1;
		}
	return 0;
}

/* ---- objects ---------------------------------------------------------------------------- */

struct found {
	const char *name;
	uintptr_t bias;
	const void *phdr;
	unsigned phnum;
};

struct scan {
	struct found *v;
	size_t n, cap;
	unsigned long long adds, subs;
	int err;
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *s = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		s->adds = info->dlpi_adds;
		s->subs = info->dlpi_subs;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct found *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->err = -ENOMEM;
			return 1;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].name = info->dlpi_name ? info->dlpi_name : "";
	s->v[s->n].bias = info->dlpi_addr;
	s->v[s->n].phdr = info->dlpi_phdr;
	s->v[s->n].phnum = info->dlpi_phnum;
	s->n++;
	return 0;
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

static void object_free(struct ftrt_object *o)
{
	ftrt_syms_free(o->syms);
	recs_free(o->recs, o->recs_cap);
	free(o->name);
	free(o->path);
	free(o);
}

/* Do the recorded states of o's sites match memory?  (A reloaded object does not.) */
static int object_intact(struct ftrt_object *o)
{
	size_t i;

	for (i = 0; i < o->nrecs; i++) {
		const struct ftrt_rec *r = &o->recs[i];
		const unsigned char *b = (const unsigned char *)r->ip;
		unsigned char call[FTRT_ARCH_SITE_MAX];

		if (r->flags & REC_REFUSED)
			continue;
		if (r->flags & REC_NOP6) {
			if (memcmp(b, ftrt_arch_nop(6), 6))
				return 0;
		} else if (r->flags & REC_CALL) {
			ftrt_arch_make_call(call, r->ip, ftrt_arch_call_target(r->ip, r->rel),
					    FTRT_ARCH_CALL_SIZE);
			if (memcmp(b, call, FTRT_ARCH_CALL_SIZE))
				return 0;
		} else if (memcmp(b, ftrt_arch_nop(FTRT_ARCH_CALL_SIZE), FTRT_ARCH_CALL_SIZE)) {
			return 0;
		}
	}
	return 1;
}

/* Bring the object list up to date with the loader's; enable new objects' sites. */
static int rescan(void)
{
	static int scanned;	/* the first scan is the start-up map, recorded already */
	struct scan s = { 0 };
	struct ftrt_object *o, **pp, *added = NULL, **tail;
	int subs_changed, any_new = 0, gone = 0, added_sites = 0;
	size_t i, j;

	dl_iterate_phdr(scan_cb, &s);
	if (s.err) {
		free(s.v);
		return s.err;
	}
	subs_changed = s.subs != seen_subs;
	for (o = objects; o; o = o->next)
		o->seen = 0;
	for (i = 0; i < s.n; i++) {
		struct found *f = &s.v[i];

		for (o = objects; o; o = o->next)
			if (!o->seen && o->bias == f->bias && o->phdr == f->phdr &&
			    !strcmp(o->name, f->name))
				break;
		if (o && subs_changed && i > 0 && !object_intact(o))
			o = NULL;	/* unloaded and reloaded at the same place */
		if (o) {
			o->seen = 1;
			continue;
		}
		o = calloc(1, sizeof(*o));
		if (!o)
			continue;
		o->name = strdup(f->name);
		o->path = strdup(i == 0 && !f->name[0] ? "/proc/self/exe" : f->name);
		o->bias = f->bias;
		o->phdr = f->phdr;
		o->phnum = f->phnum;
		o->seen = 2;
		if (!o->name || !o->path || (f->name[0] == 0 && i > 0)) {
			object_free(o);
			continue;
		}
		load_table(o);
		added_sites |= o->nrecs != 0;
		o->next = added;
		added = o;
	}
	/* Drop objects that are gone (their code is unmapped: nothing to unpatch). */
	for (pp = &objects; (o = *pp);) {
		if (!o->seen) {
			for (j = 0; j < o->nrecs; j++) {
				struct ftrace_ops *op;

				if (!(o->recs[j].flags & REC_COUNT_MASK))
					continue;
				for (op = atomic_load(&ops_list); op; op = op->next)
					if (!(op->flags & FL_REMOVING) && op->nr_sites &&
					    ops_match(op, o->recs[j].ip))
						op->nr_sites--;
			}
			*pp = o->next;
			cells_release(o);
			object_free(o);
			gone = 1;
		} else {
			pp = &o->next;
		}
	}
	/* Append the new ones in load order. */
	for (tail = &objects; *tail; tail = &(*tail)->next)
		;
	{
		struct ftrt_object *rev = NULL, *n;

		for (o = added; o; o = n) {
			n = o->next;
			o->next = rev;
			rev = o;
		}
		*tail = rev;
	}
	seen_adds = s.adds;
	seen_subs = s.subs;
	free(s.v);
	if ((added || gone) && scanned && ftrt_objects_changed)
		ftrt_objects_changed();
	if (scanned && added_sites)
		objects_added++;
	scanned = 1;
	/* Enable the new objects' sites for the registered ops. */
	for (o = objects; o; o = o->next) {
		if (o->seen != 2)
			continue;
		for (j = 0; j < o->nrecs; j++) {
			struct ftrt_rec *r = &o->recs[j];
			struct ftrace_ops *op;

			if (r->flags & REC_REFUSED)
				continue;
			for (op = atomic_load(&ops_list); op; op = op->next)
				if (!(op->flags & FL_REMOVING) && ops_match(op, r->ip)) {
					r->flags++;
					op->nr_sites++;
				}
			if (r->flags & REC_COUNT_MASK) {
				mark_dirty(o, r);
				any_new = 1;
			}
		}
	}
	return any_new ? patch_dirty() : 0;
}

static void check_objects(void)
{
	unsigned long long c[2] = { seen_adds, seen_subs };

	dl_iterate_phdr(counters_cb, c);
	if (c[0] != seen_adds || c[1] != seen_subs)
		rescan();
}

/* How long the first scan took (ns): the runtime's start-up cost (bench/runtime). */
unsigned long ftrt_init_ns;

static void ensure_init(void)
{
	struct timespec t0, t1;

	if (!initialized) {
		initialized = 1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rescan();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ftrt_init_ns = (unsigned long)((t1.tv_sec - t0.tv_sec) * 1000000000L +
					       (t1.tv_nsec - t0.tv_nsec));
	}
}

static void dl_resolve(void);

__attribute__((constructor(101))) static void ftrt_init(void)
{
	dl_resolve();
	if (ftrt_lock())
		return;
	ensure_init();
	ftrt_unlock();
}

/* Lock the API, load what is missing.  0 or -EBUSY (inside a callback). */
static int api_enter(void)
{
	int ret;

	if (ftrt_cb_depth > 0)
		return -EBUSY;
	ret = ftrt_lock();
	if (ret)
		return ret;
	ensure_init();
	check_objects();
	return 0;
}

/* ---- API: ops ----------------------------------------------------------------------------- */

/* Register ops (API lock held, not registered, checked). */
static int register_locked(struct ftrace_ops *ops)
{
	struct ftrace_ops *p;
	int ret;

	/* registered already, though its flags were overwritten: a second link would loop */
	for (p = atomic_load(&ops_list); p; p = p->next)
		if (p == ops)
			return -EBUSY;
	if (ipmodify_conflict(ops, 0, NULL, NULL, ops->filter_hash, ops->notrace_hash))
		return -EBUSY;
	ops->flags &= ~FL_REMOVING;
	ops->nr_sites = 0;
	ops->next = atomic_load(&ops_list);
	atomic_store_explicit(&ops_list, ops, memory_order_release);
	ops->flags |= FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_ALLOC_TRAMP;
	ret = update(ops, 0, NULL, NULL, 1, ops->filter_hash, ops->notrace_hash);
	if (ret) {
		/* a failed batch may have reached them */
		retire_trampolines(ops, list_remove(ops));
		ops->flags &= ~(FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_ALLOC_TRAMP);
	} else {
		sweep_multis();	/* the sets the sites left */
	}
	return ret;
}

int register_ftrace_function(struct ftrace_ops *ops)
{
	int ret;

	if (!ops || !ops->func || (ops->flags & FTRACE_OPS_FL_DIRECT))
		return -EINVAL;
	if ((ops->flags & FTRACE_OPS_FL_IPMODIFY) && !(ops->flags & FL_REGS))
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	ret = (ops->flags & FTRACE_OPS_FL_ENABLED) ? -EBUSY : register_locked(ops);
	ftrt_unlock();
	return ret;
}

static int unregister_locked(struct ftrace_ops *ops);

int unregister_ftrace_function(struct ftrace_ops *ops)
{
	int ret;

	if (!ops)
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	ret = (ops->flags & FTRACE_OPS_FL_ENABLED) && !(ops->flags & FTRACE_OPS_FL_DIRECT) ?
		unregister_locked(ops) : -EINVAL;
	ftrt_unlock();
	return ret;
}

static int unregister_locked(struct ftrace_ops *ops)
{
	int ret;

	ops->flags |= FL_REMOVING;
	ret = update(ops, 1, ops->filter_hash, ops->notrace_hash, 0, NULL, NULL);
	if (ret) {
		ops->flags &= ~FL_REMOVING;
		return ret;
	}
	/* nobody runs its callback (through its trampolines or the list walk) after this */
	ret = retire_trampolines(ops, list_remove(ops));
	ops->flags &= ~(FTRACE_OPS_FL_ENABLED | FTRACE_OPS_FL_ALLOC_TRAMP | FL_REMOVING);
	return ret;
}

/* ---- API: direct calls -------------------------------------------------------------------- */

int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	int ret;

	if (!ops || !addr || ops->func)
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	if ((ops->flags & FTRACE_OPS_FL_ENABLED) || !hash_count(ops->filter_hash)) {
		ret = -EINVAL;
		goto out;
	}
	ops->func = ftrt_call_direct_funcs;
	ops->flags |= FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS;
	__atomic_store_n(&ops->direct_call, addr, __ATOMIC_RELEASE);
	ret = register_locked(ops);
	if (ret) {
		ops->func = NULL;
		ops->flags &= ~(FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS);
		ops->direct_call = 0;
	}
out:
	ftrt_unlock();
	return ret;
}

int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr, int free_filters)
{
	int ret;

	if (!ops)
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	if (!(ops->flags & FTRACE_OPS_FL_ENABLED) || !(ops->flags & FTRACE_OPS_FL_DIRECT) ||
	    ops->direct_call != addr) {
		ret = -EINVAL;
		goto out;
	}
	ret = unregister_locked(ops);
	if (ret && (ops->flags & FTRACE_OPS_FL_ENABLED))
		goto out;	/* still registered */
	ops->func = NULL;
	ops->flags &= ~(FTRACE_OPS_FL_DIRECT | FTRACE_OPS_FL_SAVE_REGS);
	ops->direct_call = 0;
	if (free_filters)
		ftrace_free_filter(ops);
out:
	ftrt_unlock();
	return ret;
}

/* Mark the sites ops serves alone (they call its direct trampoline, or its own trampoline). */
static void mark_direct_sites(struct ftrace_ops *ops)
{
	const struct ftrt_hash *f = ops->filter_hash;
	size_t i;

	for (i = 0; f && i <= f->mask; i++) {
		struct ftrt_object *o;
		struct ftrt_rec *r;

		if (f->e[i] && (r = rec_lookup(f->e[i], &o)) && !(r->flags & REC_REFUSED) &&
		    (r->flags & REC_COUNT_MASK) == 1 && ops_match(ops, r->ip))
			mark_dirty(o, r);
	}
}

/*
 * Gapless switch: the trampolines that run the direct ops' callback (sites shared with
 * other ops) read direct_call once per call, so one store switches them; the sites calling
 * the old trampoline directly are re-pointed in one batch, each site's call replaced in one
 * step of the patching protocol (a thread meeting the breakpoint meanwhile executes the new
 * call).  Every call therefore enters the old or the new trampoline, once.
 */
static int modify_direct(struct ftrace_ops *ops, unsigned long addr)
{
	unsigned long old = ops->direct_call;
	int ret;

	if (!addr || !(ops->flags & FTRACE_OPS_FL_ENABLED) || !(ops->flags & FTRACE_OPS_FL_DIRECT))
		return -EINVAL;
	if (addr == old)
		return 0;
	__atomic_store_n(&ops->direct_call, addr, __ATOMIC_RELEASE);
	mark_direct_sites(ops);
	ret = patch_dirty();
	if (ret) {
		/* back to the old one everywhere (a failed batch leaves the sites as they were) */
		__atomic_store_n(&ops->direct_call, old, __ATOMIC_RELEASE);
		mark_direct_sites(ops);
		patch_dirty();
	}
	return ret;
}

int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr)
{
	int ret;

	if (!ops)
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	ret = modify_direct(ops, addr);
	ftrt_unlock();
	return ret;
}

int modify_ftrace_direct_nolock(struct ftrace_ops *ops, unsigned long addr)
{
	return modify_ftrace_direct(ops, addr);
}

extern uintptr_t ftrt_exe_lo, ftrt_exe_hi;

/* ftrace_direct_count's table (ftrace_x86_64.S): {site, count} pairs. */
extern unsigned long ftrt_direct_counts[][2], ftrt_direct_count_lost;

unsigned long ftrace_direct_count_read(unsigned long ip)
{
	unsigned long site, i, n;
	struct ftrt_rec *r;

	if (!ip)
		return __atomic_load_n(&ftrt_direct_count_lost, __ATOMIC_RELAXED);
	if (ftrt_lock())
		return 0;
	ensure_init();
	r = rec_find(ip, NULL);
	site = r ? r->ip : ip;
	ftrt_unlock();
	i = ((site * FTRT_DIRECT_COUNT_MULT) >> FTRT_DIRECT_COUNT_SHIFT) &
	    (FTRT_DIRECT_COUNT_SLOTS - 1);
	for (n = 0; n < FTRT_DIRECT_COUNT_PROBES; n++, i = (i + 1) & (FTRT_DIRECT_COUNT_SLOTS - 1)) {
		unsigned long k = __atomic_load_n(&ftrt_direct_counts[i][0], __ATOMIC_ACQUIRE);

		if (k == site)
			return __atomic_load_n(&ftrt_direct_counts[i][1], __ATOMIC_RELAXED);
		if (!k)
			break;
	}
	return 0;
}

unsigned long ftrace_direct_fexit_create(ftrace_direct_entry_t entry, ftrace_direct_exit_t exit,
					 void *data)
{
	struct ftrt_arena *a;
	struct ftrt_tramp *t = NULL;

	if (!entry || !exit) {
		errno = EINVAL;
		return 0;
	}
	if (api_enter()) {
		errno = EBUSY;
		return 0;
	}
	/* near the program: its sites call it directly (others divert into it) */
	a = ftrt_arena_for(ftrt_exe_lo, ftrt_exe_hi);
	if (a)
		t = ftrt_fexit_create(a, entry, exit, data);
	ftrt_unlock();
	if (!t) {
		errno = ENOMEM;
		return 0;
	}
	return (unsigned long)t->code;
}

int ftrace_direct_fexit_free(unsigned long addr)
{
	struct ftrt_tramp *t;
	struct ftrace_ops *op;
	int ret = api_enter();

	if (ret)
		return ret;
	t = ftrt_fexit_find(addr);
	if (!t) {
		ret = -EINVAL;
		goto out;
	}
	for (op = atomic_load(&ops_list); op; op = op->next)
		if ((op->flags & FTRACE_OPS_FL_DIRECT) && op->direct_call == addr)
			ret = -EBUSY;
	if (!ret)
		ret = ftrt_fexit_free(t, RELEASE_LIMIT_US);
out:
	ftrt_unlock();
	return ret;
}

/* ---- API: filters ------------------------------------------------------------------------ */

static struct ftrt_syms *obj_syms(struct ftrt_object *o)
{
	if (!o->syms)
		o->syms = ftrt_elf_load_syms(o->path, o->bias);
	else
		ftrt_syms_demangle(o->syms);	/* a demangler loaded since */
	return o->syms;
}

/*
 * Only a traced function counts: the runtime's own std::rethrow_exception (fgraph's
 * interposition) is C++ in every program, C ones too.
 */
int ftrt_objects_need_demangler(void)
{
	struct ftrt_object *o;
	struct ftrt_syms *s;
	size_t i, k;
	int need = 0;

	if (api_enter())
		return 0;
	for (o = objects; o && !need; o = o->next) {
		if (!o->nrecs || !(s = obj_syms(o)) || s->demangle_done)
			continue;
		for (i = 0; i < s->n && !need; i++) {
			const struct ftrt_sym *y = &s->v[i];

			if (y->demangled || strncmp(y->name, "_Z", 2))
				continue;
			k = obj_lower_bound(o, y->addr);
			need = k < o->nrecs && o->recs[k].ip < y->addr + (y->size ? y->size : 5);
		}
	}
	ftrt_unlock();
	return need;
}

/*
 * Does pat match name (as a glob, or as the very name), or the function name is a
 * compiler's copy of ("f.constprop.0", "_Z1fi.isra.0", "ns::f(int) [clone .isra.0]": the
 * source names them "f", "ns::f(int)")?
 */
static int name_matches(const char *pat, const char *name)
{
	const char *cut;
	char orig[1024];
	size_t n;

	if (!name)
		return 0;
	/* the name itself: its brackets ("f[abi:cxx11](int)") are no classes then */
	if (!fnmatch(pat, name, 0) || !strcmp(pat, name))
		return 1;
	cut = strstr(name, " [clone .");
	if (!cut && !strpbrk(name, "( "))
		cut = strchr(name, '.');
	if (!cut || cut == name || (n = (size_t)(cut - name)) >= sizeof(orig))
		return 0;
	memcpy(orig, name, n);
	orig[n] = 0;
	return !fnmatch(pat, orig, 0);
}

/* Add (or remove) every site of the functions matching pat; number of sites matched. */
static long glob_apply(struct ftrt_hash **hp, const char *pat, int remove)
{
	struct ftrt_object *o;
	long matched = 0;
	size_t i, k;

	for (o = objects; o; o = o->next) {
		struct ftrt_syms *s;

		if (!o->nrecs)
			continue;
		s = obj_syms(o);
		if (!s)
			return errno ? -errno : -ENOMEM;	/* EMFILE: asked again next time */
		for (i = 0; i < s->n; i++) {
			const struct ftrt_sym *y = &s->v[i];
			uintptr_t end = y->addr + (y->size ? y->size : 5);

			if (!name_matches(pat, y->name) && !name_matches(pat, y->demangled) &&
			    !name_matches(pat, y->shortname) &&
			    !ftrt_prefix_matches(pat, y->shortname, y->plen) &&
			    (y->demangled || !ftrt_mangled_plain_matches(pat, y->name)))
				continue;
			for (k = obj_lower_bound(o, y->addr); k < o->nrecs && o->recs[k].ip < end; k++) {
				if (o->recs[k].flags & REC_REFUSED)
					continue;
				matched++;
				if (remove)
					hash_del(*hp, o->recs[k].ip);
				else if (hash_add(hp, o->recs[k].ip))
					return -ENOMEM;
			}
		}
	}
	return matched;
}

/* Install a new filter or notrace hash on ops (and move its sites when registered). */
static int set_hash(struct ftrace_ops *ops, int is_notrace, struct ftrt_hash *nh)
{
	struct ftrt_hash **slot = is_notrace ? &ops->notrace_hash : &ops->filter_hash;
	struct ftrt_hash *old = *slot;
	const struct ftrt_hash *of = ops->filter_hash, *on = ops->notrace_hash;
	int ret;

	if (!(ops->flags & FTRACE_OPS_FL_ENABLED)) {
		__atomic_store_n(slot, nh, __ATOMIC_RELEASE);
		if (ops->flags & FTRT_OPS_FL_LIVE_LISTS)
			defer_free(old);
		else
			free(old);
		return 0;
	}
	if ((ops->flags & FTRACE_OPS_FL_DIRECT) && !is_notrace && !hash_count(nh)) {
		free(nh);
		return -EINVAL;	/* a direct call on every function: refused at register too */
	}
	if (ipmodify_conflict(ops, 1, of, on, is_notrace ? of : nh, is_notrace ? nh : on)) {
		free(nh);
		return -EBUSY;
	}
	__atomic_store_n(slot, nh, __ATOMIC_RELEASE);
	ret = update(ops, 1, of, on, 1, ops->filter_hash, ops->notrace_hash);
	if (ret) {
		__atomic_store_n(slot, old, __ATOMIC_RELEASE);
		defer_free(nh);
		return ret;
	}
	defer_free(old);	/* a list walk may still read it: freed after a grace period */
	sweep_multis();
	return 0;
}

size_t ftrt_glob_item(const char *s, const char *seps)
{
	const char *p, *op;
	int depth = 0;

	for (p = s; *p; p++) {
		if ((op = ftrt_operator_end(s, p))) {
			p = op;		/* its symbol is no bracket nor separator */
			continue;
		}
		if (strchr("<[({", *p))
			depth++;
		else if (strchr(">])}", *p) && depth > 0)
			depth--;
		else if (depth == 0 && strchr(seps, *p))
			break;
	}
	return (size_t)(p - s);
}

/*
 * The next pattern of the list at *pp into buf (room for the whole list), or 0 at the end;
 * *item_end (the list's start at first) is where the current item ends.  Items are
 * separated by commas outside brackets; an item without a parenthesis is a list of
 * patterns separated by whitespace outside brackets, one with a parenthesis a demangled
 * signature, "bool ns::f<int>(char const*, int) const", whole.
 */
static int next_pattern(const char **pp, const char **item_end, char *buf)
{
	const char *p = *pp, *e;
	size_t n;

	while (*p == ',' || isspace((unsigned char)*p))
		p++;
	if (!*p)
		return 0;
	if (p >= *item_end)
		*item_end = p + ftrt_glob_item(p, ",");
	n = (size_t)(*item_end - p);
	if (!memchr(p, '(', n))
		n = ftrt_glob_item(p, " \t\n\v\f\r,");
	for (e = p + n; e > p && isspace((unsigned char)e[-1]); e--)
		;
	memcpy(buf, p, (size_t)(e - p));
	buf[e - p] = 0;
	*pp = p + n;
	return 1;
}

static int set_regex(struct ftrace_ops *ops, const void *buf, int len, int reset, int is_notrace)
{
	struct ftrt_hash *nh;
	char *copy = NULL, *tok = NULL;
	int ret;

	if (!ops || len < 0 || (len && !buf))
		return -EINVAL;
	ftrt_demangler_want(buf, (size_t)len);
	ret = api_enter();
	if (ret)
		return ret;
	nh = reset ? hash_alloc(0) : hash_copy(is_notrace ? ops->notrace_hash : ops->filter_hash);
	if (!nh) {
		ret = -ENOMEM;
		goto out;
	}
	if (buf && len) {
		const char *p, *item_end;

		copy = strndup(buf, (size_t)len);
		tok = malloc((size_t)len + 1);
		if (!copy || !tok) {
			ret = -ENOMEM;
			goto fail;
		}
		for (p = item_end = copy; next_pattern(&p, &item_end, tok);) {
			int remove = tok[0] == '!';
			const char *pat = tok + remove;
			long m;

			/* an unclosed [ is a [, as fnmatch takes it: a C++ name with
			   operator[] pasted from a report was refused with EINVAL */
			if (!*pat) {
				ret = -EINVAL;
				goto fail;
			}
			m = glob_apply(&nh, pat, remove);
			if (m < 0) {
				ret = (int)m;
				goto fail;
			}
			if (!m && !remove) {
				ret = -ENODEV;
				goto fail;
			}
		}
	}
	ret = set_hash(ops, is_notrace, nh);
	if (ret)
		goto out;	/* set_hash freed nh */
	goto out;
fail:
	free(nh);
out:
	free(copy);
	free(tok);
	ftrt_unlock();
	return ret;
}

int ftrace_set_filter(struct ftrace_ops *ops, const void *buf, int len, int reset)
{
	return set_regex(ops, buf, len, reset, 0);
}

int ftrace_set_notrace(struct ftrace_ops *ops, const void *buf, int len, int reset)
{
	return set_regex(ops, buf, len, reset, 1);
}

static int set_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset, int is_notrace)
{
	struct ftrt_hash *nh;
	struct ftrt_rec *r;
	int ret;

	if (!ops)
		return -EINVAL;
	ret = api_enter();
	if (ret)
		return ret;
	r = ip ? rec_find(ip, NULL) : NULL;
	if (ip && (!r || (r->flags & REC_REFUSED))) {
		ret = -ENODEV;
		goto out;
	}
	nh = reset ? hash_alloc(0) : hash_copy(is_notrace ? ops->notrace_hash : ops->filter_hash);
	if (!nh) {
		ret = -ENOMEM;
		goto out;
	}
	if (r) {
		if (remove)
			hash_del(nh, r->ip);
		else if (hash_add(&nh, r->ip)) {
			free(nh);
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = set_hash(ops, is_notrace, nh);
out:
	ftrt_unlock();
	return ret;
}

int ftrace_set_filter_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset)
{
	return set_ip(ops, ip, remove, reset, 0);
}

int ftrace_set_notrace_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset)
{
	return set_ip(ops, ip, remove, reset, 1);
}

void ftrace_free_filter(struct ftrace_ops *ops)
{
	if (!ops || (ops->flags & FTRACE_OPS_FL_ENABLED))
		return;
	free(ops->filter_hash);
	free(ops->notrace_hash);
	ops->filter_hash = ops->notrace_hash = NULL;
}

int ftrace_ops_test(struct ftrace_ops *ops, unsigned long ip)
{
	struct ftrt_rec *r;
	int ret;

	if (!ops)
		return 0;
	if (ftrt_lock())
		return 0;
	ensure_init();
	r = rec_find(ip, NULL);
	/* Under the lock: a concurrent filter change may replace (and later free) the hashes. */
	ret = r ? ops_match(ops, r->ip) : 0;
	ftrt_unlock();
	return ret;
}

/* ---- API: listing, objects, stats --------------------------------------------------------- */

static void rec_info(struct ftrt_object *o, struct ftrt_rec *r, struct ftrace_func_info *fi)
{
	const struct ftrt_sym *y = ftrt_syms_lookup(obj_syms(o), r->ip);
	struct ftrace_ops *op;
	struct ftrt_tramp *t;

	memset(fi, 0, sizeof(*fi));
	fi->ip = r->ip;
	fi->func = y ? y->addr : 0;
	fi->name = y ? (y->demangled ? y->shortname : y->name) : "";
	fi->symbol = y ? y->name : "";
	fi->demangled = y ? y->demangled : NULL;
	fi->object = o->path;
	fi->len = (r->flags & REC_LEN6) ? 6 : FTRT_ARCH_CALL_SIZE;
	fi->nr_ops = r->flags & REC_COUNT_MASK;
	if (r->flags & REC_REFUSED) {
		fi->state = FTRACE_SITE_REFUSED;
		return;
	}
	if (!(r->flags & REC_CALL)) {
		fi->state = FTRACE_SITE_NOP;
		return;
	}
	fi->target = ftrt_arch_call_target(r->ip, r->rel);
	if (o->arena && o->arena->caller && fi->target == (uintptr_t)o->arena->caller->code) {
		fi->state = FTRACE_SITE_CALLER;
		return;
	}
	if (o->arena && o->arena->regs_caller &&
	    fi->target == (uintptr_t)o->arena->regs_caller->code) {
		fi->state = FTRACE_SITE_REGS_CALLER;
		return;
	}
	if (rec_calls_callops(o, r)) {
		uintptr_t v = *rec_cell(r);

		fi->state = FTRACE_SITE_CALLOPS;
		if (!as_set(v) && v != (uintptr_t)&ftrt_callops_stub)
			fi->owner = (struct ftrace_ops *)v;
		return;
	}
	for (op = atomic_load(&ops_list); op; op = op->next)
		if ((op->flags & FTRACE_OPS_FL_DIRECT) && op->direct_call == fi->target &&
		    ops_match(op, r->ip)) {
			fi->state = FTRACE_SITE_DIRECT;
			fi->owner = op;
			return;
		}
	t = ftrt_tramp_at(o->arena, fi->target);
	if (t && t->vec) {
		fi->state = FTRACE_SITE_MULTI;
		return;
	}
	fi->state = FTRACE_SITE_TRAMP;
	for (op = atomic_load(&ops_list); op; op = op->next)
		for (t = op->trampolines; t; t = t->next)
			if ((uintptr_t)t->code == fi->target)
				fi->owner = op;
}

int ftrt_func_alias(unsigned long ip, unsigned i, const char **name, const char **symbol,
		    const char **demangled)
{
	struct ftrt_object *o;
	const struct ftrt_syms *s;
	const struct ftrt_sym *y;

	if (!rec_find(ip, &o) || !(s = obj_syms(o)) || !(y = ftrt_syms_lookup(s, ip)))
		return -ENOENT;
	/* aliases are sorted best last: the losers are just below the one chosen */
	if ((size_t)(y - s->v) <= i || y[-1 - (long)i].addr != y->addr)
		return -ENOENT;
	y -= 1 + (long)i;
	*name = y->demangled ? y->shortname : y->name;
	*symbol = y->name;
	*demangled = y->demangled;
	return 0;
}

int ftrace_for_each_function(int (*fn)(const struct ftrace_func_info *, void *), void *data)
{
	struct ftrace_func_info fi;
	struct ftrt_object *o;
	size_t i;
	int ret = api_enter();

	if (ret)
		return ret;
	for (o = objects; o && !ret; o = o->next)
		for (i = 0; i < o->nrecs && !ret; i++) {
			rec_info(o, &o->recs[i], &fi);
			ret = fn(&fi, data);
		}
	ftrt_unlock();
	return ret;
}

int ftrace_lookup_function(unsigned long ip, struct ftrace_func_info *info)
{
	struct ftrt_object *o;
	struct ftrt_rec *r;
	int ret = api_enter();

	if (ret)
		return ret;
	r = rec_find(ip, &o);
	if (r)
		rec_info(o, r, info);
	ftrt_unlock();
	return r ? 0 : -ENODEV;
}

static const char *state_name(enum ftrace_site_state s)
{
	static const char *const n[] = { "nop", "tramp", "caller", "regs_caller", "refused",
					  "multi", "direct", "callops" };

	return (unsigned)s < 8 ? n[s] : "?";
}

static int print_one(const struct ftrace_func_info *fi, void *data)
{
	fprintf(data, "%#lx %s %u %s [%s]\n", fi->ip, state_name(fi->state), fi->nr_ops,
		fi->name[0] ? fi->name : "?", fi->object);
	return 0;
}

int ftrace_print_functions(void *stream)
{
	return ftrace_for_each_function(print_one, stream ? stream : stdout);
}

/*
 * Drop the lock; then, if objects with call sites came since objects_added was before, tell
 * the tracers (ftrt_objects_added: outside the lock, as they call the API).
 */
static void unlock_tell_added(unsigned long before)
{
	int added = objects_added != before;

	ftrt_unlock();
	if (added && ftrt_objects_added)
		ftrt_objects_added();
}

int ftrace_rescan(void)
{
	struct ftrt_object *o;
	unsigned long before;
	long n = 0;
	int ret = api_enter();

	if (ret)
		return ret;
	before = objects_added;
	ret = rescan();
	for (o = objects; o; o = o->next)
		n += (long)o->nrecs;
	unlock_tell_added(before);
	return ret ? ret : (int)n;
}

/* ---- dlopen / dlclose hooks (ftrace_dl_x86_64.S) ----------------------------------------- */

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

dlopen_fn ftrt_real_dlopen;
static dlclose_fn real_dlclose;
uintptr_t ftrt_exe_lo, ftrt_exe_hi;	/* executable code of the main program */

static int exe_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned i;

	(void)size;
	(void)data;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!ftrt_exe_lo || lo < ftrt_exe_lo)
			ftrt_exe_lo = lo;
		if (lo + ph->p_memsz > ftrt_exe_hi)
			ftrt_exe_hi = lo + ph->p_memsz;
	}
	return 1;	/* the first object is the main program */
}

static void dl_resolve(void)
{
	if (!real_dlclose)
		real_dlclose = (dlclose_fn)(uintptr_t)dlsym(RTLD_NEXT, "dlclose");
	if (!ftrt_exe_hi)
		dl_iterate_phdr(exe_cb, NULL);
	if (!ftrt_real_dlopen)
		__atomic_store_n(&ftrt_real_dlopen,
				 (dlopen_fn)(uintptr_t)dlsym(RTLD_NEXT, "dlopen"), __ATOMIC_RELEASE);
}

/* Pick up what changed, unless inside a callback or the API (then: at the next call). */
static void dl_changed(void)
{
	unsigned long before;

	if (ftrt_cb_depth > 0 || ftrt_lock())
		return;
	ensure_init();
	before = objects_added;
	check_objects();
	unlock_tell_added(before);
}

void *ftrt_dlopen_hooked(const char *file, int mode);
void *ftrt_dlopen_hooked(const char *file, int mode)
{
	void *h = ftrt_real_dlopen(file, mode);

	if (h)
		dl_changed();
	return h;
}

/* dlopen before the runtime's constructor (rare): resolve, then as above. */
void *ftrt_dlopen_slow(const char *file, int mode);
void *ftrt_dlopen_slow(const char *file, int mode)
{
	dl_resolve();
	if (!ftrt_real_dlopen)
		return NULL;
	return ftrt_dlopen_hooked(file, mode);
}

int ftrt_dlclose_hooked(void *handle);
int ftrt_dlclose_hooked(void *handle)
{
	int ret;

	if (!real_dlclose)
		dl_resolve();
	if (!real_dlclose)
		return -1;
	ret = real_dlclose(handle);
	dl_changed();
	return ret;
}

void *ftrace_dlopen(const char *file, int mode)
{
	void *h;

	dl_resolve();
	h = ftrt_real_dlopen ? ftrt_real_dlopen(file, mode) : NULL;
	if (h)
		ftrace_rescan();
	return h;
}

int ftrace_dlclose(void *handle)
{
	return ftrt_dlclose_hooked(handle);
}

void ftrace_get_stats(struct ftrace_stats *st)
{
	struct ftrt_object *o;

	memset(st, 0, sizeof(*st));
	if (ftrt_lock())
		return;
	ensure_init();
	for (o = objects; o; o = o->next) {
		st->nr_sites += o->nrecs;
		if (o->table_format != FTRT_TABLE_NONE)
			st->nr_objects++;
	}
	st->nr_refused = nr_refused;
	st->nr_trampolines = ftrt_nr_trampolines;
	st->nr_tramp_retired = ftrt_nr_quarantined;
	st->nr_tramp_released = ftrt_nr_released;
	ftrt_unlock();
}

int ftrace_synchronize(void)
{
	int ret = api_enter();

	if (ret)
		return ret;
	ret = grace_period();
	if (!ret)
		ret = ftrt_tramp_release(0);
	ftrt_unlock();
	return ret;
}

/*
 * For the start-up benchmark (bench/runtime): forget every object and load the tables
 * again, as the constructor does.  Only while no ops is registered.  Returns the number of
 * sites, or -EBUSY.
 */
long ftrt_debug_reload(void)
{
	struct ftrt_object *o, *n;
	long sites = 0;
	int ret = api_enter();

	if (ret)
		return ret;
	if (atomic_load(&ops_list)) {
		ftrt_unlock();
		return -EBUSY;
	}
	for (o = objects; o; o = n) {
		n = o->next;
		o->cells = NULL;	/* still mapped: its slots keep pointing there */
		object_free(o);
	}
	objects = NULL;
	ret = rescan();
	for (o = objects; o; o = o->next)
		sites += (long)o->nrecs;
	ftrt_unlock();
	return ret ? ret : sites;
}

long ftrt_debug_cells(void)
{
	long n;

	if (ftrt_lock())
		return -EBUSY;
	n = cells_live;
	ftrt_unlock();
	return n;
}

/*
 * Tests only: make the CALL_OPS site at ip (calling the CALL_OPS caller) call ops instead
 * of its own ops, with the one store a real switch does; ops must be a registered ops with
 * neither RECURSION nor SAVE_REGS, and stay so while the site can call it.  The next update
 * of the site puts its own ops back.  0, -EINVAL (no such site), -EBUSY (in a callback).
 */
int ftrt_debug_callops_set(unsigned long ip, struct ftrace_ops *ops)
{
	struct ftrt_object *o;
	struct ftrt_rec *r;
	int ret = api_enter();

	if (ret)
		return ret;
	r = rec_find(ip, &o);
	if (!r || !(r->flags & REC_SLOT) || !rec_calls_callops(o, r) ||
	    (ops->flags & (FTRACE_OPS_FL_RECURSION | FL_REGS | FL_EXCL)) ||
	    (rec_calls_callops(o, r) == 2 && !ftrt_tramp_novec_ok(ops->func, ops->flags)))
		ret = -EINVAL;
	else
		cell_put(rec_cell(r), (uintptr_t)ops);
	ftrt_unlock();
	return ret;
}
