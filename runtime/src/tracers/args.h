/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Arguments and return values (args.c): which functions record which values, and the
 * EXT ARGS / RETVAL records the tracers write next to their events.  Includes no other
 * tracer header.
 */
#ifndef FTKIT_ARGS_H
#define FTKIT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#define FT_ARGS_MAX	16	/* values recorded at a function's entry */
#define FT_RET_MAX	4	/* words of a return value */
#define FT_STR_MAX	64	/* bytes of a string copied */

struct ft_argval {
	uint8_t desc;		/* FTKIT_ARG_* | size | FTKIT_ARG_STR [| FTKIT_ARG_STDSTR] */
	int8_t loc;		/* the arch's location, or -1: the stack word at off */
	uint16_t off;
	int16_t roff;		/* loc's byte offset in the register frame (-1: none) */
};

struct ft_argplan {
	unsigned long ip;	/* the function's site */
	uint8_t nargs, nret;
	/* a record's payload words after the time when no string is copied, else 0 */
	uint16_t awords, rwords;
	/* the values may go in the short records before their event (ft_args_entry_next) */
	uint8_t anext, rnext;
	/*
	 * A return value read from a register of the entry (arm64's x8: the address of a
	 * result returned in memory): its offset in the entry's struct ftrace_regs, kept in
	 * the call's frame (ft_rframe.xr), and where it goes in the exit's struct
	 * ftrace_ret_regs to be read; xr_in -1: none.
	 */
	int16_t xr_in, xr_out;
	struct ft_argval a[FT_ARGS_MAX];
	struct ft_argval r[FT_RET_MAX];
};

/* Plans by site address; replaced whole on each change, never freed (callbacks may run). */
struct ft_argtab {
	size_t mask, count;
	const struct ft_argplan *plans;	/* the count plans, in the order functions were listed */
	const struct ft_argplan *slot[];
};

/* NULL: nothing is recorded.  Hidden: the tracers load it on every event, PC-relative. */
extern struct ft_argtab *ft_argtab __attribute__((visibility("hidden")));

static inline const struct ft_argplan *ft_args_find(unsigned long ip)
{
	const struct ft_argtab *t = __atomic_load_n(&ft_argtab, __ATOMIC_ACQUIRE);
	size_t i;

	if (!t)
		return NULL;
	for (i = (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20) & t->mask; t->slot[i];
	     i = (i + 1) & t->mask)
		if (t->slot[i]->ip == ip)
			return t->slot[i];
	return NULL;
}

struct ft_thread;
struct ftrace_regs;
struct ftrace_ret_regs;

/* The entry register p's return value is read from (ft_argplan.xr_in), or 0. */
static inline unsigned long ft_args_xr(const struct ft_argplan *p, const struct ftrace_regs *fregs)
{
	unsigned long v = 0;

	if (p && p->xr_in >= 0 && fregs)
		__builtin_memcpy(&v, (const char *)fregs + p->xr_in, sizeof(v));
	return v;
}

/* An EXT ARGS record for the call of p's function at ts (before its ENTRY or FUNC). */
void ft_args_entry(struct ft_thread *t, const struct ft_argplan *p, uint64_t ts,
		   const struct ftrace_regs *fregs);
/*
 * The time filter's way: the data of that EXT ARGS record built into buf (room words, at
 * least a record's worth) to be written only if the call lasts long enough, with
 * ft_ev_ext(t, FTKIT_EXT_ARGS, *n, ts, buf, words * 4): its words (0: nothing to record,
 * or no room), *n its values.
 */
unsigned ft_args_stage(const struct ft_argplan *p, const struct ftrace_regs *fregs,
		       uint32_t *buf, unsigned room, unsigned *n);
/* An EXT RETVAL record for its return at ts (before its EXIT). */
void ft_args_exit(struct ft_thread *t, const struct ft_argplan *p, uint64_t ts,
		  const struct ftrace_ret_regs *rr);
/*
 * A time-filtered call's staged record (ft_args_stage: words, n values) and its ENTRY of
 * ip at ts, as one short record and the entry (args_next.h); 0: nothing written.
 */
int ft_args_staged_next(struct ft_thread *t, const struct ft_argplan *p, const uint32_t *staged,
			unsigned words, unsigned n, unsigned long ip, uint64_t ts);

/*
 * Set the argument (ret = 0) or return-value (ret = 1) specs: the text (NULL or "" for
 * none) or @FILE.  0, or -EINVAL with the offending item in bad, -ENOMEM, -EACCES (the
 * file is not safe to read).
 */
int ft_args_set(int ret, const char *spec, char *bad, size_t badlen);
/*
 * How many specs of the argument (ret = 0) or return-value (ret = 1) list as set match no
 * function loaded now; the first one's glob in first.
 */
int ft_args_unmatched(int ret, char *first, size_t len);
/*
 * Objects with call sites were loaded: the plans are made again from the specs as set, so
 * that a spec naming a function of the new library takes it.
 */
void ft_args_objects_added(void);
/* "args N functions" for status, or "" */
void ft_args_status(char *buf, size_t len);

#endif
