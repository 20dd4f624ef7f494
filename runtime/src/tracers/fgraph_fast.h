/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A graph user's fused hot path (fgraph.c): one user may push and pop its own frames
 * inline, in the same function that records the call, when the call is the common one
 * (the thread's shadow stack ready, no stale frame below, no other user on the frame).
 * Anything else goes to the generic paths, fgraph_entry and fgraph_return, before
 * anything is changed.  The function_graph tracer (trace.c) is the one such user: the
 * generic paths cost it two indirect calls, a record built for each callback and the
 * registers saved by four functions where one does (docs/runtime.md, bench/RESULTS.md).
 * Built on fgraph.h and trace_buf.h (the thread state holding the shadow stack).
 */
#ifndef FTKIT_FGRAPH_FAST_H
#define FTKIT_FGRAPH_FAST_H

#include <ftrace.h>

#include "fgraph.h"
#include "trace_buf.h"

struct fgraph_user {
	struct fgraph_ops *gops;
	uint32_t epoch;			/* fgraph_epoch when registered */
	int draining;			/* its ops unregistered, its frames' returns still run */
};

extern struct fgraph_user fgraph_users[FGRAPH_MAX_USERS];
extern uint32_t fgraph_epoch;

typedef unsigned long (*fgraph_return_t)(unsigned long sp, const struct ftrace_ret_regs *rr);

/* The generic paths: the ops callback of every graph user, and the return. */
void fgraph_entry(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		  struct ftrace_regs *fregs);
unsigned long fgraph_return(unsigned long sp, const struct ftrace_ret_regs *rr);

/*
 * Register gops with entry as its ops callback and ret as what return_to_handler calls
 * (fgraph_return_hook), while gops is registered; entry and ret fall back to the generic
 * paths for every call they do not finish.  One fused user at a time: a second is
 * registered the generic way.  Errors as register_ftrace_graph.
 */
int fgraph_register_fused(struct fgraph_ops *gops, ftrace_func_t entry, fgraph_return_t ret);

/*
 * Stop gops's entries but keep its returns: the frames it accepted still reach its
 * retfunc when they return (uftrace records the exit of every entry it recorded; the
 * kernel drops them), so a tracer switched off or swapped live closes the calls it had
 * open at their real times.  Registering gops again takes its place back, frames and
 * all; another user short of a free place takes it over (gops's frames then skip it);
 * unregister_ftrace_graph ends it.  0, or the core's error when gops is still registered
 * (its sites could not be written: nothing changed).
 */
int fgraph_unregister_draining(struct fgraph_ops *gops);

/*
 * The depth at which the call returning to *slot may push a frame inline, or -1: the
 * thread is inside a graph callback (or interrupted one), has no shadow stack yet, is
 * full, or has frames at or below slot that fgraph_entry must judge (a longjmp, a tail
 * call, another user's join).
 */
static inline int fgraph_fast_depth(const struct ft_thread *t, const unsigned long *slot)
{
	int d = t->depth;

	if (unlikely(t->in_ret || !t->shadow || d >= FGRAPH_SHADOW_DEPTH))
		return -1;
	if (d > 0 && unlikely(t->shadow[d - 1].slot <= slot))
		return -1;
	return d;
}

/* Push user idx's frame at depth d and hook the return (fgraph_entry pushes with it too). */
static inline void fgraph_fast_push(struct ft_thread *t, int d, int idx, unsigned long ip,
				    unsigned long *slot, uint64_t ts)
{
	struct fgraph_frame *f = &t->shadow[d];

	f->ret = *slot;
	f->slot = slot;
	f->ip = ip;
	f->calltime = ts;
	f->users = 1u << idx;
	f->epoch = __atomic_load_n(&fgraph_epoch, __ATOMIC_RELAXED);
	if (FTRT_ARCH_RET_IN_FRAME_RECORD)	/* else never set: stays NULL */
		f->lr = NULL;
	barrier();
	t->depth = d + 1;
	barrier();
	*slot = (unsigned long)return_to_handler;
}

/*
 * The frame a return to slot closes, if it may be closed inline by user idx: the
 * innermost one, of that slot, user idx's alone and pushed under its current
 * registration.  NULL: fgraph_return must do it (unwound frames, orphans, other users).
 */
static inline const struct fgraph_frame *fgraph_fast_top(const struct ft_thread *t,
							  const unsigned long *slot, int idx)
{
	const struct fgraph_frame *f;

	if (unlikely(t->depth <= 0 || t->in_ret))
		return NULL;
	f = &t->shadow[t->depth - 1];
	if (unlikely(f->slot != slot || f->users != 1u << idx ||
		     f->epoch < fgraph_users[idx].epoch ||
		     !__atomic_load_n(&fgraph_users[idx].gops, __ATOMIC_ACQUIRE)))
		return NULL;
	return f;
}

/* Pop the frame fgraph_fast_top gave (t->in_ret raised by the caller): its return address. */
static inline unsigned long fgraph_fast_pop(struct ft_thread *t)
{
	unsigned long ret = t->shadow[t->depth - 1].ret;

	t->depth--;
	return ret;
}

#endif
