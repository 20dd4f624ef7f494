/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The short argument records (EXT ARGS_NEXT / RETVAL_NEXT, docs/trace-format.md) the graph
 * tracer writes with the event they belong to: inline, as the fast event writers are.
 */
#ifndef FTKIT_ARGS_NEXT_H
#define FTKIT_ARGS_NEXT_H

#include <string.h>

#include "args.h"
#include "trace_buf.h"
#include "trace_format.h"

/* A register value's 8 bytes in its frame (struct ftrace_regs or ftrace_ret_regs). */
static inline unsigned long ft_args_reg(const void *frame, const struct ft_argval *v)
{
	unsigned long x = 0;

	if (v->roff >= 0)
		memcpy(&x, (const char *)frame + v->roff, sizeof(x));
	return x;
}

/*
 * Take words for a short record and the event after it, under the conditions of the fast
 * event writers (ft_ev_entry_fast) and of args.c's record_fast, holding the thread's
 * writer until ft_ev_commit: NULL when they do not hold (nothing taken, nothing held).
 * An ENTRY's ip must be in the block's 4 GiB (ip: 0 for an EXIT).  *d: the event's delta.
 */
static inline uint32_t *ft_args_next_take(struct ft_thread *t, unsigned words, uint64_t ts,
					  unsigned long ip, uint32_t *d)
{
	uint32_t *w;
	uint64_t dt;

	if (unlikely(!ft_ev_hold(t)))
		return NULL;
	w = t->wp;
	dt = ts - t->last_ts;
	if (unlikely(t->state != FT_THREAD_LIVE || !t->blk || w + words > t->wend ||
		     dt >= FTKIT_DELTA_MAX || t->need_depth || (ip && (uint32_t)(ip >> 32) != t->ip_hi))) {
		ft_ev_release(t);
		return NULL;
	}
	t->wp = w + words;
	t->last_ts = ts;
	*d = (uint32_t)dt;
	return w;
}

/* The descriptors and register values of a short record at w: the word after them. */
static inline uint32_t *ft_args_next_put(uint32_t *w, const struct ft_argval *v, unsigned n,
					 const void *frame)
{
	uint8_t *desc = (uint8_t *)w;
	uint32_t *q = w + (n + 3) / 4;

	q[-1] = 0;	/* the descriptors' padding */
	for (unsigned i = 0; i < n; i++) {
		unsigned long x = ft_args_reg(frame, &v[i]);

		desc[i] = v[i].desc;
		*q++ = (uint32_t)x;
		if ((v[i].desc >> FTKIT_ARG_SIZE_SHIFT & 3) == 3)
			*q++ = (uint32_t)(x >> 32);
	}
	return q;
}

/* The ENTRY of ip after a short record, at q (delta d), and the publication of both. */
static inline void ft_args_next_entry(struct ft_thread *t, uint32_t *q, uint32_t d,
				      unsigned long ip)
{
	q[0] = FTKIT_EV_ENTRY | d << 3;
	q[1] = (uint32_t)ip;
	ft_entry_store(&t->entries[ftkit_entry_slot(ip)], ip);	/* as every ENTRY does */
	ft_ev_commit(t, q + 2);
}

/*
 * The graph tracer's common case: an EXT ARGS_NEXT record (no time, no address: those of
 * the ENTRY right after it) and the ENTRY of ip at ts, in one reservation, so that nothing
 * (a signal handler's events) comes between them.  1 when written; 0 when it cannot (a
 * string or stack value, no room, the entry needing an extension): nothing was written.
 */
static inline int ft_args_entry_next(struct ft_thread *t, const struct ft_argplan *p,
				     unsigned long ip, uint64_t ts, const struct ftrace_regs *fregs)
{
	unsigned nw = p->awords - 1u;	/* awords counts the address word */
	uint32_t *w, d;

	if (!p->anext || !fregs || !(w = ft_args_next_take(t, 1 + nw + 2, ts, ip, &d)))
		return 0;
	w[0] = ftkit_ext(FTKIT_EXT_ARGS_NEXT, nw, p->nargs);
	ft_args_next_entry(t, ft_args_next_put(w + 1, p->a, p->nargs, fregs), d, ip);
	return 1;
}

/* The same for the return: EXT RETVAL_NEXT and the EXIT at ts. */
static inline int ft_args_exit_next(struct ft_thread *t, const struct ft_argplan *p, uint64_t ts,
				    const struct ftrace_ret_regs *rr)
{
	unsigned nw = p->rwords - 1u;
	uint32_t *w, *q, d;

	if (!p->rnext || !rr || !(w = ft_args_next_take(t, 1 + nw + 1, ts, 0, &d)))
		return 0;
	w[0] = ftkit_ext(FTKIT_EXT_RETVAL_NEXT, nw, p->nret);
	q = ft_args_next_put(w + 1, p->r, p->nret, rr);
	q[0] = FTKIT_EV_EXIT | d << 3;
	ft_ev_commit(t, q + 1);
	return 1;
}

#endif
