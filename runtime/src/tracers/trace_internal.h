/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared state of the tracers (trace*.c) and the function graph (fgraph*.c).
 * Everything here is per thread (initial-exec TLS) or global; nothing on the
 * hot path takes a lock, allocates with malloc or makes a system call.
 */
#ifndef FTKIT_TRACE_INTERNAL_H
#define FTKIT_TRACE_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <ftrace.h>

#include "clock.h"
#include "trace_format.h"

#define FT_TLS __attribute__((tls_model("initial-exec")))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define barrier()	__asm__ volatile("" ::: "memory")
/*
 * ftrace_ops callbacks may be entered with %rsp % 16 == 8 (gcc's
 * -fipa-stack-alignment calls some functions with a stack that is not
 * 16-byte aligned, and __fentry__ comes first): realign.
 */
#define FT_CALLBACK	__attribute__((force_align_arg_pointer))

/* One shadow-stack frame. */
struct fgraph_frame {
	unsigned long ret;		/* real return address */
	unsigned long *slot;		/* where it lives on the stack */
	unsigned long ip;
	uint64_t calltime;
	uint32_t users;			/* graph users that accepted the call */
	uint32_t epoch;			/* fgraph_epoch at entry */
};

/*
 * A frame closed as unwound while its slot may still be live on a stack the thread left
 * without the runtime seeing the switch (fgraph.c): its real return address, kept for
 * the day it returns.
 */
struct fgraph_orphan {
	unsigned long *slot;
	unsigned long ret;
};

/* A recorded graph frame still open (the tracer's own stack, see ft_thread.rs). */
struct ft_rframe {
	uint64_t ip;
	uint64_t ts;
	int depth;			/* shadow-stack depth of the call */
};

enum { FT_BLK_FREE = 0, FT_BLK_FILL, FT_BLK_FULL };

/*
 * One block of a thread's events in memory, laid out as the EVENTS chunk it becomes:
 * header, open frames, data.  The owner fills it; the writer thread writes it.
 */
struct ft_blk {
	uint32_t state;			/* FT_BLK_*: FREE→FILL (owner), →FULL (owner), →FREE (writer) */
	uint32_t pub;			/* data bytes published by the owner */
	uint32_t written;		/* data bytes already written as a PARTIAL chunk (writer) */
	uint32_t pad_;
	struct ftkit_events_chunk hdr;	/* seq, base_ts, lost, depth, ip_hi, parent_hi (owner) */
	struct ftkit_frame frames[];	/* hdr.depth frames, then the data */
};

/* A thread's blocks and counters, shared with the writer thread (trace_buf.c). */
struct ft_tbuf {
	uint32_t tid;
	uint32_t nblk;
	uint32_t exited;		/* the owner is done: no more blocks */
	uint32_t announced;		/* the writer wrote its first THREAD chunk */
	uint64_t lost;			/* events dropped (total, owner) */
	uint64_t lost_depth;
	uint64_t seq_next;		/* seq of the next block the owner starts */
	uint64_t wseq;			/* next seq the writer writes */
	uint64_t blocks;		/* EVENTS chunks written */
	uint64_t clear_seq;		/* blocks before it were dropped by a live `clear` */
	uint64_t stride;		/* bytes between blocks */
	char name[16];
	struct ft_tbuf *next_free;
	char *blocks_at;
};

static inline struct ft_blk *ft_tbuf_blk(const struct ft_tbuf *tb, uint64_t seq)
{
	return (struct ft_blk *)(tb->blocks_at + (seq % tb->nblk) * tb->stride);
}

enum {
	FT_THREAD_NEW = 0,	/* no buffer yet */
	FT_THREAD_LIVE,		/* recording */
	FT_THREAD_NOBUF,	/* allocation failed or tracing finished: drop */
	FT_THREAD_DEAD,		/* thread-exit destructor ran */
};

struct ft_thread {
	/* hot path: the current block's free space and the encoder's state */
	uint32_t *wp;		/* next word; wp + n > wend → slow path (also: no block) */
	uint32_t *wend;
	uint64_t last_ts;	/* time of the previous event of the block */
	uint32_t ip_hi, parent_hi;
	struct ft_blk *blk;	/* block being filled, or NULL */
	uint32_t *data;		/* its data */
	uint32_t state;		/* FT_THREAD_* */
	uint32_t busy;		/* slow path running (signal re-entry) */
	uint32_t saved_state;	/* state before fork() (the fork window records nothing) */
	uint32_t open;		/* recorded graph frames still open (entries in rs) */
	uint32_t gen;		/* session generation the buffers belong to */
	uint32_t need_depth;	/* an EXT DEPTH is due before the next ENTRY */
	uint64_t lost_pending;	/* dropped since the current block started */
	struct ft_rframe *rs;	/* recorded open frames, outermost first */
	struct ft_tbuf *tb;
	uint64_t reg;		/* index in ft_sess.reg */

	/* function graph shadow stack */
	struct fgraph_frame *shadow;
	int depth;
	int shadow_failed;
	int in_ret;		/* running graph callbacks: calls they make are not graphed */
	unsigned long *last_slot;	/* last frame pushed (same call, other user) */
	unsigned long last_ip;
	struct fgraph_orphan *orphans;	/* after the shadow frames, in the same mapping */
	int norphans;			/* oldest first */

	/* graph_function / graph_notrace subtrees (trace.c): shadow depth + 1 of the frame
	   that opened one, 0 outside; valid for graph registration sel_gen only */
	int sel_in, sel_out;
	uint32_t sel_gen;
};

extern __thread struct ft_thread ft_cur FT_TLS;

/* trace_buf.c */
struct ft_thread *ft_thread_buf(void);	/* allocates on first use; NULL → drop */
void ft_note_lost_depth(void);
void ft_thread_exit(void);

/*
 * The slow path of every event: a new block, TIME / IP_HI / PARENT_HI / DEPTH extensions,
 * the long FUNC form.  type is FTKIT_EV_*; for FUNC, aux is the parent address.
 */
void ft_ev_slow(struct ft_thread *t, uint32_t type, uint64_t ip, uint64_t aux, uint64_t ts);

/* Make the words written so far visible to the writer thread (a PARTIAL flush). */
static inline void ft_ev_publish(struct ft_thread *t, uint32_t *end)
{
	barrier();
	__atomic_store_n(&t->blk->pub, (uint32_t)((char *)end - (char *)t->data), __ATOMIC_RELEASE);
}

/* EXIT / EXIT_UNWOUND: one word. */
static inline void ft_ev_exit(struct ft_thread *t, uint32_t type, uint64_t ts)
{
	uint32_t *p = t->wp;
	uint64_t d = ts - t->last_ts;

	if (unlikely(p + 1 > t->wend || d >= FTKIT_DELTA_MAX)) {
		ft_ev_slow(t, type, 0, 0, ts);
		return;
	}
	t->wp = p + 1;
	barrier();	/* the words are taken before they are filled (a signal handler nests) */
	t->last_ts = ts;
	p[0] = type | (uint32_t)d << 3;
	ft_ev_publish(t, p + 1);
}

/* ENTRY: two words. */
static inline void ft_ev_entry(struct ft_thread *t, uint64_t ip, uint64_t ts)
{
	uint32_t *p = t->wp;
	uint64_t d = ts - t->last_ts;

	if (unlikely(p + 2 > t->wend || d >= FTKIT_DELTA_MAX || (uint32_t)(ip >> 32) != t->ip_hi ||
		     t->need_depth)) {
		ft_ev_slow(t, FTKIT_EV_ENTRY, ip, 0, ts);
		return;
	}
	t->wp = p + 2;
	barrier();
	t->last_ts = ts;
	p[0] = FTKIT_EV_ENTRY | (uint32_t)d << 3;
	p[1] = (uint32_t)ip;
	ft_ev_publish(t, p + 2);
}

/* FUNC_NEAR (two words) when it fits, else FUNC. */
static inline void ft_ev_func(struct ft_thread *t, uint64_t ip, uint64_t parent, uint64_t ts)
{
	uint32_t *p = t->wp;
	uint64_t d = ts - t->last_ts;
	int64_t diff = (int64_t)(parent - ip);

	if (unlikely(p + 2 > t->wend || d >= FTKIT_NEAR_DELTA_MAX || diff != (int16_t)diff ||
		     (uint32_t)(ip >> 32) != t->ip_hi)) {
		ft_ev_slow(t, FTKIT_EV_FUNC, ip, parent, ts);
		return;
	}
	t->wp = p + 2;
	barrier();
	t->last_ts = ts;
	p[0] = FTKIT_EV_FUNC_NEAR | (uint32_t)d << 3 | (uint32_t)(uint16_t)diff << 16;
	p[1] = (uint32_t)ip;
	ft_ev_publish(t, p + 2);
}

/* fgraph_interpose.c */
void *ft_next_sym(const char *name);

/* fgraph.c */
void fgraph_unhook_all(void);
void fgraph_rehook_live(unsigned long cfa);
void fgraph_unwind_all(void);
void fgraph_close_all(void);	/* frames left at thread exit (pthread_cancel) */
void fgraph_thread_release(void);
void fgraph_switch_out(unsigned long *sp);	/* swapcontext/setcontext: sp = caller's */
extern void return_to_handler(void);

/* trace.c */
void ft_trace_atfork_prepare(void);
void ft_trace_atfork_parent(void);
void ft_trace_atfork_child(void);

/* async-signal-safe helpers (trace_util.c) */
void ft_msg(const char *a, const char *b);
void ft_msg_err(const char *a, const char *b, int err);
const char *ft_strerror(int err);
size_t ft_strlcpy(char *dst, const char *src, size_t size);
char *ft_utoa(char *p, unsigned long v);

/* A glob list's error as the user reads it: -ENODEV from the core means nothing matched. */
static inline const char *ft_glob_error(int err)
{
	return err == -ENODEV ? "matches no function" : strerror(-err);
}

#endif
