// SPDX-License-Identifier: Apache-2.0
/*
 * Arguments and return values: FTRACE_ARGS / FTRACE_RETVAL, the live `args` and `retval`
 * commands and ftrace_trace_set_args() / ftrace_trace_set_retval().
 *
 *   GLOB@ITEM[,ITEM...][;GLOB@...]     ITEM: NAME[/FMT[BITS]][%LOC]
 *
 * uftrace's -A / -R syntax (docs/ftrace-cli.md): NAME argN, fpargN or retval; FMT d i u
 * x s c f p, S (a std::string's text, as uftrace's), and four letters `ftrace record
 * --auto-args` writes: a (a word the reader formats from the program's DWARF), A (the
 * same, a string copied), T (the same, a std::string's text copied) and V (the bytes at
 * the word, as many as the value before says: a std::string_view's); LOC a register or
 * stack+N.  Specs are resolved to the functions loaded now, once, into a table of plans
 * by site address that the tracers look up on each recorded call (ft_args_find); a
 * change builds a new table and publishes it with one store.
 *
 * Recorded values go into EXT ARGS (before the call's ENTRY or FUNC) and EXT RETVAL
 * (before its EXIT) records carrying the event's time and address, so readers pair them
 * with their event even when a signal handler's events come between.  Strings are
 * copied with process_vm_readv on ourselves: a bad pointer gives an error, never a fault.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ftrace.h>
#include <ftrace_trace.h>

#include "arch/arch.h"
#include "core/ftrt_core.h"
#include "args.h"
#include "args_next.h"
#include "trace_buf.h"
#include "trace_format.h"
#include "trace_util.h"

struct ft_argtab *ft_argtab;

/* One GLOB@ITEMS entry of a spec list. */
struct aspec {
	const char *glob;	/* in the owning list's text */
	int exact;		/* no glob characters */
	int ret;
	int order;		/* place in the lists (later merges over earlier) */
	int n;
	size_t hits;		/* functions it applied to in the last table built */
	struct ft_argval v[FT_ARGS_MAX];
	char name[FT_ARGS_MAX][8];
};

struct speclist {
	char *text;		/* as given (NULL: none) */
	char *buf;		/* parsed copy the globs point into */
	struct aspec *s;
	int n;
};

static pthread_mutex_t args_mu = PTHREAD_MUTEX_INITIALIZER;
static struct speclist lists[2];	/* arguments, return values */
static size_t nplans;

/* ---- parsing ------------------------------------------------------------------------- */

/* *str: 0, FTKIT_ARG_STR (a C string) or FTKIT_ARG_STR | FTKIT_ARG_STDSTR */
static int fmt_code(char c, int *str, unsigned *size)
{
	*str = 0;
	switch (c) {
	case 'd': case 'i': return FTKIT_ARG_INT;
	case 'u': return FTKIT_ARG_UINT;
	case 'x': return FTKIT_ARG_HEX;
	case 's': *str = FTKIT_ARG_STR; return FTKIT_ARG_STRING;
	case 'S': *str = FTKIT_ARG_STR | FTKIT_ARG_STDSTR; return FTKIT_ARG_STRING;
	case 'c': *size = 1; return FTKIT_ARG_CHAR;
	case 'f': return FTKIT_ARG_FLOAT;
	case 'p': return FTKIT_ARG_PTR;
	case 'a': return FTKIT_ARG_AUTO;
	case 'A': *str = FTKIT_ARG_STR; return FTKIT_ARG_AUTO;
	case 'T': *str = FTKIT_ARG_STR | FTKIT_ARG_STDSTR; return FTKIT_ARG_AUTO;
	case 'V': *str = FTKIT_ARG_STR; return FTKIT_ARG_COUNTED;
	case 'W': *str = FTKIT_ARG_STR | FTKIT_ARG_STDSTR; return FTKIT_ARG_COUNTED;
	}
	return -1;
}

static int log2_size(unsigned size)
{
	return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
}

/* A decimal number of the whole of [p, e) in [lo, hi], or -1. */
static long number(const char *p, const char *e, long lo, long hi)
{
	long v = 0;

	if (p == e || e - p > 4)
		return -1;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v >= lo && v <= hi ? v : -1;
}

/* One ITEM of [p, e) into v; 0 or -EINVAL. */
static int parse_item(const char *p, const char *e, int ret, struct ft_argval *v, char name[8])
{
	const char *slash = memchr(p, '/', (size_t)(e - p)), *pct = memchr(p, '%', (size_t)(e - p));
	const char *ne = slash ? slash : pct ? pct : e;
	int fmt = FTKIT_ARG_INT, str = 0, fp = 0, loc = -1;
	unsigned size = 8, off = 0;
	long n;

	if (pct && slash && slash > pct)
		return -EINVAL;
	if (ne - p >= 8 || ne == p)
		return -EINVAL;
	memcpy(name, p, (size_t)(ne - p));
	name[ne - p] = 0;
	if (ret) {
		if (strcmp(name, "retval"))
			return -EINVAL;
	} else if (!strncmp(name, "fparg", 5)) {
		if ((n = number(p + 5, ne, 1, 8)) < 0 || (loc = ftrt_arch_arg_fp((unsigned)n)) == -2)
			return -EINVAL;
		fp = 1;
		fmt = FTKIT_ARG_FLOAT;
	} else if (!strncmp(name, "arg", 3)) {
		if ((n = number(p + 3, ne, 1, 64)) < 0)
			return -EINVAL;
		loc = ftrt_arch_arg_int((unsigned)n, &off);
	} else {
		return -EINVAL;
	}
	if (slash) {
		const char *fe = pct ? pct : e;
		unsigned sz = 0;

		if (fe == slash + 1 || (fmt = fmt_code(slash[1], &str, &sz)) < 0)
			return -EINVAL;
		if (sz)
			size = sz;
		if (fe > slash + 2) {
			if ((n = number(slash + 2, fe, 8, 64)) < 0 || (n != 8 && n != 16 && n != 32 && n != 64))
				return -EINVAL;
			if (str || slash[1] == 'p' || (slash[1] == 'c' && n != 8) ||
			    (slash[1] == 'f' && n < 32))
				return -EINVAL;
			size = (unsigned)n / 8;
		}
		if (fp && fmt != FTKIT_ARG_FLOAT && !pct)
			return -EINVAL;		/* fpargN takes /f only */
	}
	if (ret)
		loc = ftrt_arch_ret_loc(fmt == FTKIT_ARG_FLOAT);
	else if (fmt == FTKIT_ARG_FLOAT && !fp && !pct)
		return -EINVAL;			/* a floating argument is fpargN or %xmmN */
	if (pct) {
		const char *l = pct + 1;

		if (e - l > 6 && !strncmp(l, "stack+", 6)) {
			if (ret || (n = number(l + 6, e, 1, 64)) < 0)
				return -EINVAL;
			loc = -1;
			off = ftrt_arch_arg_stack_off((unsigned)n);
		} else if ((loc = ftrt_arch_arg_reg(l, (size_t)(e - l), ret)) < 0) {
			return -EINVAL;
		}
	}
	if (str)
		size = 8;	/* the pointer */
	v->desc = (uint8_t)(fmt | log2_size(size) << FTKIT_ARG_SIZE_SHIFT | str);
	v->loc = (int8_t)loc;
	v->off = (uint16_t)off;
	return 0;
}

static void set_bad(char *bad, size_t badlen, const char *p, size_t n)
{
	if (!badlen)
		return;
	if (n >= badlen)
		n = badlen - 1;
	memcpy(bad, p, n);
	bad[n] = 0;
}

/* Parse text (entries separated by ';' or newlines) into l; 0 or -EINVAL / -ENOMEM. */
static int parse_list(struct speclist *l, const char *text, int ret, int order0, char *bad,
		      size_t badlen)
{
	size_t len = strlen(text), cap = 16;
	char *buf = malloc(len + 1), *p, *end;
	struct aspec *s = calloc(cap, sizeof(*s));
	int n = 0;

	if (!buf || !s) {
		free(buf);
		free(s);
		return -ENOMEM;
	}
	memcpy(buf, text, len + 1);
	for (p = buf; *p; p = end + (*end != 0)) {
		char *at, *q;

		end = p + strcspn(p, ";\n");
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		q = end;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
			q--;
		if (q == p)
			continue;
		at = memrchr(p, '@', (size_t)(q - p));
		if (!at || at == p || at + 1 == q)
			goto bad;
		if (n == (int)cap) {
			struct aspec *ns = realloc(s, 2 * cap * sizeof(*s));

			if (!ns)
				goto nomem;
			memset(ns + cap, 0, cap * sizeof(*s));
			s = ns;
			cap *= 2;
		}
		s[n].glob = p;
		s[n].ret = ret;
		s[n].order = order0 + n;
		for (const char *i = at + 1; i < q;) {
			const char *ie = memchr(i, ',', (size_t)(q - i));

			if (!ie)
				ie = q;
			if (s[n].n == (ret ? FT_RET_MAX : FT_ARGS_MAX) ||
			    parse_item(i, ie, ret, &s[n].v[s[n].n], s[n].name[s[n].n]))
				goto bad;
			s[n].n++;
			i = ie + (ie < q);
		}
		*at = 0;
		s[n].exact = !strpbrk(p, "*?[");
		n++;
		continue;
bad:
		set_bad(bad, badlen, p, (size_t)(q - p));
		free(buf);
		free(s);
		return -EINVAL;
	}
	l->buf = buf;
	l->s = s;
	l->n = n;
	return 0;
nomem:
	free(buf);
	free(s);
	return -ENOMEM;
}

/* ---- plans ---------------------------------------------------------------------------- */

struct build {
	struct aspec **exact;	/* exact names, sorted */
	size_t nexact;
	struct aspec **globs;
	size_t nglobs;
	struct ft_argplan *plans;
	size_t n, cap;
	int err;
};

static int by_glob(const void *a, const void *b)
{
	const struct aspec *x = *(struct aspec *const *)a, *y = *(struct aspec *const *)b;
	int c = strcmp(x->glob, y->glob);

	return c ? c : x->order - y->order;
}

static int by_order(const void *a, const void *b)
{
	return (*(struct aspec *const *)a)->order - (*(struct aspec *const *)b)->order;
}

/* Merge spec s into plan p: an argument named again by a later spec replaces the earlier. */
static void merge(struct ft_argplan *p, char names[FT_ARGS_MAX][8], const struct aspec *s)
{
	if (s->ret) {
		memcpy(p->r, s->v, (size_t)s->n * sizeof(s->v[0]));
		p->nret = (uint8_t)s->n;
		return;
	}
	for (int i = 0, first = p->nargs; i < s->n; i++) {
		int j;

		for (j = 0; j < first; j++)
			if (!strcmp(names[j], s->name[i]))
				break;
		if (j == first) {
			if (p->nargs == FT_ARGS_MAX)
				continue;
			j = p->nargs++;
		}
		p->a[j] = s->v[i];
		memcpy(names[j], s->name[i], 8);
	}
}

/* The payload words after the time of a record of these values, 0 if one is a string. */
static uint16_t fixed_words(const struct ft_argval *v, unsigned n)
{
	unsigned w = 1 + (n + 3) / 4;

	for (unsigned i = 0; i < n; i++) {
		if (v[i].desc & FTKIT_ARG_STR)
			return 0;
		w += (v[i].desc >> FTKIT_ARG_SIZE_SHIFT & 3) == 3 ? 2 : 1;
	}
	return (uint16_t)w;
}

/* FTRT_ARGS_SHORT=0: the long records only (to compare; ignored in secure-execution mode). */
static int short_records(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = secure_getenv("FTRT_ARGS_SHORT");

		on = !(e && !strcmp(e, "0"));
	}
	return on;
}

enum { HITS_MAX = 64 };

static void add_hit(struct aspec **hit, size_t *nh, struct aspec *s)
{
	for (size_t i = 0; i < *nh; i++)
		if (hit[i] == s)
			return;
	if (*nh < HITS_MAX)
		hit[(*nh)++] = s;
}

/*
 * Add to hit[] the specs not there yet that name the function name (symbol: its symbol;
 * full: its demangled name in full, or NULL).
 */
static void find_specs(const struct build *b, const char *name, const char *symbol,
		       const char *full, struct aspec **hit, size_t *nh)
{
	/* as filters match: the symbol, or a C++ function's demangled name, with or
	   without its parameters, or in full as readers show it ("int Box::as<int>() const":
	   a template's return type too) */
	const char *nm[3] = { name, symbol && strcmp(symbol, name) ? symbol : NULL,
			      full && strcmp(full, name) ? full : NULL };
	char bare[512], untag[512];
	size_t plen, n = *nh;
	int tagged = 0;

	plen = nm[1] ? ftrt_name_plen(name) : 0;
	if (plen >= sizeof(bare))
		plen = 0;
	if (plen) {
		memcpy(bare, name, plen);
		bare[plen] = 0;
		/* and without its ABI tags, as filters match: 'label' for label[abi:cxx11](int) */
		memcpy(untag, bare, plen + 1);
		tagged = ftrt_cut_abi_tags(untag);
	}
	for (int k = 0; k < 5; k++) {
		const char *c = k < 3 ? nm[k] : k == 3 ? (plen ? bare : NULL) : tagged ? untag : NULL;
		size_t lo = 0, hi = b->nexact;

		if (!c)
			continue;
		while (lo < hi) {	/* the first exact spec with this name */
			size_t mid = (lo + hi) / 2;

			if (strcmp(b->exact[mid]->glob, c) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < b->nexact && !strcmp(b->exact[lo]->glob, c); lo++)
			add_hit(hit, &n, b->exact[lo]);
	}
	for (size_t i = 0; i < b->nglobs; i++)
		if (!fnmatch(b->globs[i]->glob, name, 0) ||
		    (nm[1] && !fnmatch(b->globs[i]->glob, nm[1], 0)) ||
		    (nm[2] && !fnmatch(b->globs[i]->glob, nm[2], 0)) ||
		    (plen && !fnmatch(b->globs[i]->glob, bare, 0)) ||
		    (tagged && !fnmatch(b->globs[i]->glob, untag, 0)))
			add_hit(hit, &n, b->globs[i]);
	*nh = n;
}

static int plan_one(const struct ftrace_func_info *fi, void *data)
{
	struct build *b = data;
	struct aspec *hit[HITS_MAX];
	char names[FT_ARGS_MAX][8];
	struct ft_argplan p = { .ip = fi->ip };
	const char *name, *symbol, *full;
	size_t nh = 0;

	if (!fi->name || !*fi->name)
		return 0;
	find_specs(b, fi->name, fi->symbol, fi->demangled, hit, &nh);
	/* a spec may name any of the function's symbols (identical code folded: two names) */
	for (unsigned i = 0; !ftrt_func_alias(fi->ip, i, &name, &symbol, &full); i++)
		find_specs(b, name, symbol, full, hit, &nh);
	if (!nh)
		return 0;
	for (size_t i = 0; i < nh; i++)
		hit[i]->hits++;
	qsort(hit, nh, sizeof(hit[0]), by_order);
	for (size_t i = 0; i < nh; i++)
		merge(&p, names, hit[i]);
	if (!p.nargs && !p.nret)
		return 0;
	p.awords = fixed_words(p.a, p.nargs);
	p.rwords = fixed_words(p.r, p.nret);
	p.anext = p.nargs && p.awords && short_records();
	for (unsigned i = 0; i < p.nargs; i++) {
		p.a[i].roff = (int16_t)(p.a[i].loc >= 0 ? ftrt_arch_arg_off(p.a[i].loc) : -1);
		if (p.a[i].loc < 0)
			p.anext = 0;	/* read from the stack: fault-safe, not inline */
	}
	p.xr_in = -1;
	for (unsigned i = 0; i < p.nret; i++) {
		int in = ftrt_arch_ret_entry_off(p.r[i].loc);

		p.r[i].roff = (int16_t)ftrt_arch_ret_off(p.r[i].loc);
		if (in >= 0 && p.r[i].roff >= 0) {
			p.xr_in = (int16_t)in;
			p.xr_out = p.r[i].roff;
		}
	}
	p.rnext = p.nret && p.rwords && short_records();
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct ft_argplan *np = realloc(b->plans, cap * sizeof(*np));

		if (!np) {
			b->err = -ENOMEM;
			return 1;
		}
		b->plans = np;
		b->cap = cap;
	}
	b->plans[b->n++] = p;
	return 0;
}

/* A table of the plans the two lists make for the functions loaded now (NULL: none). */
static int build_table(struct ft_argtab **out, size_t *count)
{
	struct build b = { 0 };
	struct ft_argtab *t = NULL;
	size_t total = (size_t)lists[0].n + (size_t)lists[1].n, cap = 16;
	int err;

	*out = NULL;
	*count = 0;
	if (!total)
		return 0;
	b.exact = calloc(total, sizeof(*b.exact));
	b.globs = calloc(total, sizeof(*b.globs));
	if (!b.exact || !b.globs) {
		err = -ENOMEM;
		goto out;
	}
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < lists[l].n; i++) {
			struct aspec *s = &lists[l].s[i];

			s->hits = 0;
			if (s->exact)
				b.exact[b.nexact++] = s;
			else
				b.globs[b.nglobs++] = s;
		}
	qsort(b.exact, b.nexact, sizeof(*b.exact), by_glob);
	err = ftrace_for_each_function(plan_one, &b);
	if (err > 0)
		err = b.err;
	if (err || !b.n)
		goto out;
	while (cap < 2 * b.n)
		cap *= 2;
	t = calloc(1, sizeof(*t) + cap * sizeof(t->slot[0]));
	if (!t) {
		err = -ENOMEM;
		goto out;
	}
	t->mask = cap - 1;
	t->count = b.n;
	t->plans = b.plans;
	for (size_t i = 0; i < b.n; i++) {
		size_t j = (size_t)((b.plans[i].ip * 0x9E3779B97F4A7C15ull) >> 20) & t->mask;

		while (t->slot[j] && t->slot[j]->ip != b.plans[i].ip)
			j = (j + 1) & t->mask;
		t->slot[j] = &b.plans[i];
	}
	*out = t;
	*count = b.n;
	b.plans = NULL;		/* owned by the table now */
out:
	free(b.plans);
	free(b.exact);
	free(b.globs);
	return err;
}

/* ---- setting ------------------------------------------------------------------------- */

/* The text of @FILE: a regular file of ours that no one else may write, at most 16 MiB. */
static char *read_spec_file(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t have = 0;

	*err = 0;
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size > (16 << 20)) {
		*err = -EACCES;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		*err = -ENOMEM;
		goto out;
	}
	while (have < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + have, (size_t)st.st_size - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
	}
	buf[have] = 0;
out:
	close(fd);
	return buf;
}

int ft_args_set(int ret, const char *spec, char *bad, size_t badlen)
{
	struct speclist nl = { 0 }, old;
	struct ft_argtab *t;
	char *file = NULL;
	size_t count;
	int err = 0;

	if (bad && badlen)
		bad[0] = 0;
	if (spec && spec[0] == '@') {
		file = read_spec_file(spec + 1, &err);
		if (!file)
			return err;
		spec = file;
	}
	if (spec)
		ftrt_demangler_want(spec, strlen(spec));
	pthread_mutex_lock(&args_mu);
	if (spec && *spec) {
		nl.text = strdup(spec);
		if (!nl.text)
			err = -ENOMEM;
		else
			err = parse_list(&nl, spec, ret, ret ? 1 << 20 : 0, bad, badlen);
		if (err) {
			free(nl.text);
			goto out;
		}
	}
	old = lists[ret];
	lists[ret] = nl;
	err = build_table(&t, &count);
	if (err) {
		lists[ret] = old;	/* all or nothing */
		free(nl.text);
		free(nl.buf);
		free(nl.s);
		goto out;
	}
	/* the old table stays: a callback may be reading it (the plans are copies of the lists) */
	__atomic_store_n(&ft_argtab, t, __ATOMIC_RELEASE);
	nplans = count;
	free(old.text);
	free(old.buf);
	free(old.s);
out:
	pthread_mutex_unlock(&args_mu);
	free(file);
	return err;
}

int ft_args_unmatched(int ret, char *first, size_t len)
{
	int n = 0;

	if (first && len)
		first[0] = 0;
	pthread_mutex_lock(&args_mu);
	for (int i = 0; i < lists[ret].n; i++) {
		const struct aspec *s = &lists[ret].s[i];

		if (s->hits)
			continue;
		if (!n++ && first && len)
			snprintf(first, len, "%s", s->glob);
	}
	pthread_mutex_unlock(&args_mu);
	return n;
}

static int plan_eq(const struct ft_argplan *x, const struct ft_argplan *y)
{
	return x->ip == y->ip && x->nargs == y->nargs && x->nret == y->nret &&
	       x->awords == y->awords && x->rwords == y->rwords &&
	       !memcmp(x->a, y->a, x->nargs * sizeof(x->a[0])) &&
	       !memcmp(x->r, y->r, x->nret * sizeof(x->r[0]));
}

static int table_eq(const struct ft_argtab *x, const struct ft_argtab *y)
{
	if (!x || !y)
		return x == y;
	if (x->count != y->count)
		return 0;
	for (size_t i = 0; i < x->count; i++)
		if (!plan_eq(&x->plans[i], &y->plans[i]))
			return 0;
	return 1;
}

static void table_free(struct ft_argtab *t)
{
	if (t) {
		free((void *)t->plans);
		free(t);
	}
}

/*
 * A spec names a function by name: as the filters, it takes the functions of a library
 * loaded later (uftrace applies its argument specs to each library it loads), and a library
 * loaded where an unloaded one was gets its own plans, not the old one's.  A new table is
 * published only when it differs, since a replaced one is never freed: a library loaded
 * and unloaded in a loop at the same address adds nothing.
 */
void ft_args_objects_added(void)
{
	struct ft_argtab *t, *cur;
	size_t count;

	pthread_mutex_lock(&args_mu);
	if ((lists[0].n || lists[1].n) && !build_table(&t, &count)) {
		cur = __atomic_load_n(&ft_argtab, __ATOMIC_ACQUIRE);
		if (table_eq(cur, t)) {
			table_free(t);
		} else {
			__atomic_store_n(&ft_argtab, t, __ATOMIC_RELEASE);
			nplans = count;
		}
	}
	pthread_mutex_unlock(&args_mu);
}

void ft_args_status(char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	if (__atomic_load_n(&ft_argtab, __ATOMIC_ACQUIRE))
		snprintf(buf, len, " args=%zu", nplans);
}

int ftrace_trace_set_args(const char *spec)
{
	return ft_args_set(0, spec, NULL, 0);
}

int ftrace_trace_set_retval(const char *spec)
{
	return ft_args_set(1, spec, NULL, 0);
}

/* ---- recording ----------------------------------------------------------------------- */

#define REC_WORDS	253	/* an EXT record's data: 255 payload words less the time */

/* The bytes a string at buf[w] may take: what is left of the record, at most FT_STR_MAX. */
static unsigned str_room(unsigned w)
{
	unsigned room = (REC_WORDS - w - 1) * 4;

	return room < FT_STR_MAX ? room : FT_STR_MAX;
}

/* The header of len bytes copied at buf[w + 1] (cut: the string holds more), padded; the new w. */
static unsigned str_done(uint32_t *buf, unsigned w, size_t len, int cut)
{
	char *s = (char *)&buf[w + 1];

	buf[w] = (uint32_t)len | (cut ? FTKIT_STR_TRUNC : 0);
	if (len & 3)
		memset(s + len, 0, 4 - (len & 3));
	return w + 1 + (unsigned)(len + 3) / 4;
}

/* A string value: its header word and bytes at buf[w...]; the new w. */
static unsigned put_str(uint32_t *buf, unsigned w, unsigned long addr)
{
	unsigned max = str_room(w);
	char *s = (char *)&buf[w + 1];
	long n;
	size_t len;

	if (!addr) {
		buf[w] = FTKIT_STR_BAD;		/* NULL: readers show the pointer */
		return w + 1;
	}
	n = max ? ft_mem_read(s, addr, max) : 0;
	if (n == -2) {
		buf[w] = FTKIT_STR_UNREAD;
		return w + 1;
	}
	if (n <= 0 && max) {
		buf[w] = FTKIT_STR_BAD;
		return w + 1;
	}
	len = strnlen(s, (size_t)n);
	return str_done(buf, w, len, len == (size_t)n);
}

/*
 * A std::string at addr, as put_str puts a C string: its first bytes, read fault-safely
 * through libstdc++'s layout (the data pointer, the length, then the 16-byte buffer that
 * holds a string of up to 15 bytes, which the pointer then points to: one read for it;
 * the type was checked to have that layout: fnargs, or the user's /S), flagged truncated
 * when it holds more.
 */
static unsigned put_stdstr(uint32_t *buf, unsigned w, unsigned long addr)
{
	unsigned max = str_room(w);
	unsigned long obj[4] = { 0, 0, 0, 0 };
	char *s = (char *)&buf[w + 1];
	size_t len;
	long n;

	if (!addr) {
		buf[w] = FTKIT_STR_BAD;
		return w + 1;
	}
	n = ft_mem_read(obj, addr, sizeof(obj));
	len = obj[1] < max ? obj[1] : max;
	if (n == (long)sizeof(obj) && len && obj[0] == addr + 16 && obj[1] < 16)
		memcpy(s, &obj[2], len);	/* a short string, in the object */
	else if (n == (long)sizeof(obj) && len && ft_mem_read(s, obj[0], len) != (long)len)
		n = -1;		/* the object read, its bytes not: a bad string */
	if (n != (long)sizeof(obj)) {
		buf[w] = n == -2 ? FTKIT_STR_UNREAD : FTKIT_STR_BAD;
		return w + 1;
	}
	return str_done(buf, w, len, obj[1] > len);
}

/* len bytes at addr (a std::string_view's), as put_str puts a C string. */
static unsigned put_counted(uint32_t *buf, unsigned w, unsigned long addr, unsigned long len)
{
	unsigned max = str_room(w);
	char *s = (char *)&buf[w + 1];
	size_t n = len < max ? len : max;
	long got = 0;

	if (n && (!addr || (got = ft_mem_read(s, addr, n)) != (long)n)) {
		buf[w] = got == -2 ? FTKIT_STR_UNREAD : FTKIT_STR_BAD;
		return w + 1;
	}
	return str_done(buf, w, n, len > n);
}

/* The std::string_view at addr (a reference to one): its length and data pointer, then
   the bytes, as put_counted puts them. */
static unsigned put_view_at(uint32_t *buf, unsigned w, unsigned long addr)
{
	unsigned long obj[2];
	long n = addr ? ft_mem_read(obj, addr, sizeof(obj)) : -1;

	if (n != (long)sizeof(obj)) {
		buf[w] = n == -2 ? FTKIT_STR_UNREAD : FTKIT_STR_BAD;
		return w + 1;
	}
	return put_counted(buf, w, obj[1], obj[0]);
}

/* The stack word off bytes above sp: read directly within sp's page, safely past it. */
static unsigned long stack_word(unsigned long sp, unsigned off)
{
	unsigned long a = sp + off, v = 0;
	unsigned long page = 4096;	/* the smallest: a page of sp's is mapped */

	if ((a & ~(page - 1)) == (sp & ~(page - 1)) && (a & (page - 1)) <= page - sizeof(v))
		return *(const unsigned long *)a;
	return ft_mem_read(&v, a, sizeof(v)) == (long)sizeof(v) ? v : 0;
}

static inline unsigned long value(const struct ft_argval *v, const struct ftrace_regs *fregs,
				  const struct ftrace_ret_regs *rr)
{
	if (rr)
		return ft_args_reg(rr, v);
	if (v->loc >= 0)
		return ft_args_reg(fregs, v);
	return stack_word(ftrt_arch_arg_sp(fregs), v->off);
}

/*
 * The usual case: no string to copy and room in the thread's block.  The thread's writer
 * is held from taking the words to publishing them, as the event encoders do.
 */
static int record_fast(struct ft_thread *t, uint32_t sub, unsigned long ip, uint64_t ts,
		       const struct ft_argval *v, unsigned n, unsigned words,
		       const struct ftrace_regs *fregs, const struct ftrace_ret_regs *rr)
{
	uint32_t *p, *q;
	unsigned total = 3 + words;
	uint8_t *desc;

	if (unlikely(!n || !words || !ft_ev_hold(t)))
		return 0;
	p = t->wp;
	if (unlikely(t->state != FT_THREAD_LIVE || !t->blk || p + total > t->wend)) {
		ft_ev_release(t);
		return 0;
	}
	t->wp = p + total;
	p[0] = ftkit_ext(sub, total - 1, n);
	p[1] = (uint32_t)ts;
	p[2] = (uint32_t)(ts >> 32);
	p[3] = (uint32_t)ip;
	desc = (uint8_t *)&p[4];
	q = p + 4 + (n + 3) / 4;
	q[-1] = 0;	/* the descriptors' padding */
	for (unsigned i = 0; i < n; i++) {
		unsigned long x = value(&v[i], fregs, rr);

		desc[i] = v[i].desc;
		*q++ = (uint32_t)x;
		if ((v[i].desc >> FTKIT_ARG_SIZE_SHIFT & 3) == 3)
			*q++ = (uint32_t)(x >> 32);
	}
	ft_ev_commit(t, p + total);
	return 1;
}

/* The record's data (the function's ip, descriptors, values, strings) in buf: its words;
   *pn: the number of values it holds. */
static unsigned build(uint32_t *buf, unsigned long ip, const struct ft_argval *v, unsigned n,
		      const struct ftrace_regs *fregs, const struct ftrace_ret_regs *rr,
		      unsigned *pn)
{
	unsigned w = 0;
	unsigned long x = 0, before;	/* a value, and the one before it (a counted length) */
	uint8_t *desc;

	buf[w++] = (uint32_t)ip;
	desc = (uint8_t *)&buf[w];
	memset(desc, 0, (n + 3) & ~3u);
	w += (n + 3) / 4;
	for (unsigned i = 0; i < n; i++) {
		before = x;

		if (w + 2 > REC_WORDS) {
			n = i;	/* cannot happen with FT_ARGS_MAX values; keeps the record sound */
			break;
		}
		x = value(&v[i], fregs, rr);
		desc[i] = v[i].desc;
		buf[w++] = (uint32_t)x;
		if ((v[i].desc >> FTKIT_ARG_SIZE_SHIFT & 3) == 3)	/* values of 4 bytes or less: one word */
			buf[w++] = (uint32_t)(x >> 32);
		if (v[i].desc & FTKIT_ARG_STR) {
			if (w + 1 > REC_WORDS) {
				desc[i] &= (uint8_t)~(FTKIT_ARG_STR | FTKIT_ARG_STDSTR);
				continue;
			}
			if ((v[i].desc & FTKIT_ARG_FMT_MASK) == FTKIT_ARG_COUNTED)
				w = v[i].desc & FTKIT_ARG_STDSTR ? put_view_at(buf, w, x) :
					put_counted(buf, w, x, before);
			else if (v[i].desc & FTKIT_ARG_STDSTR)
				w = put_stdstr(buf, w, x);
			else
				w = put_str(buf, w, x);
		}
	}
	*pn = n;
	return w;
}

static void record(struct ft_thread *t, uint32_t sub, unsigned long ip, uint64_t ts,
		   const struct ft_argval *v, unsigned n, const struct ftrace_regs *fregs,
		   const struct ftrace_ret_regs *rr)
{
	uint32_t buf[REC_WORDS];
	unsigned w = build(buf, ip, v, n, fregs, rr, &n);

	ft_ev_ext(t, sub, n, ts, buf, w * 4);
}

int ft_args_staged_next(struct ft_thread *t, const struct ft_argplan *p, const uint32_t *staged,
			unsigned words, unsigned n, unsigned long ip, uint64_t ts)
{
	uint32_t *w, d;

	/* the staged record has the address first; none with a string */
	if (!p || !p->anext || words != p->awords || n != p->nargs ||
	    !(w = ft_args_next_take(t, words + 2, ts, ip, &d)))
		return 0;
	w[0] = ftkit_ext(FTKIT_EXT_ARGS_NEXT, words - 1, n);
	memcpy(w + 1, staged + 1, (words - 1) * 4u);
	ft_args_next_entry(t, w + words, d, ip);
	return 1;
}

unsigned ft_args_stage(const struct ft_argplan *p, const struct ftrace_regs *fregs,
		       uint32_t *buf, unsigned room, unsigned *n)
{
	if (!p->nargs || !fregs || room < REC_WORDS)
		return 0;
	return build(buf, p->ip, p->a, p->nargs, fregs, NULL, n);
}

void ft_args_entry(struct ft_thread *t, const struct ft_argplan *p, uint64_t ts,
		   const struct ftrace_regs *fregs)
{
	if (p->nargs && fregs &&
	    !record_fast(t, FTKIT_EXT_ARGS, p->ip, ts, p->a, p->nargs, p->awords, fregs, NULL))
		record(t, FTKIT_EXT_ARGS, p->ip, ts, p->a, p->nargs, fregs, NULL);
}

void ft_args_exit(struct ft_thread *t, const struct ft_argplan *p, uint64_t ts,
		  const struct ftrace_ret_regs *rr)
{
	if (p->nret && rr &&
	    !record_fast(t, FTKIT_EXT_RETVAL, p->ip, ts, p->r, p->nret, p->rwords, NULL, rr))
		record(t, FTKIT_EXT_RETVAL, p->ip, ts, p->r, p->nret, NULL, rr);
}
