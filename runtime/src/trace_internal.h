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

/* A thread's staging buffer (first page; the records follow at +4096). */
struct ft_stage {
	struct ftkit_thread_chunk *hdr;	/* the chunk header, mapped from the file */
	uint64_t rec_off;		/* file offset of the chunk's record 0 */
	uint64_t base;			/* records already written to the file */
	uint64_t head;			/* records staged (published by the owner) */
	uint64_t cap;			/* records the chunk holds */
	uint64_t alloc_end;		/* file offset up to which flushes reserved blocks */
	struct ft_stage *next_free;
};

enum {
	FT_THREAD_NEW = 0,	/* no buffer yet */
	FT_THREAD_LIVE,		/* recording into chunk */
	FT_THREAD_NOBUF,	/* allocation failed or tracing finished: drop */
	FT_THREAD_DEAD,		/* thread-exit destructor ran */
};

struct ft_thread {
	/* event buffer (a chunk of the trace file, mapped shared) */
	struct ftkit_thread_chunk *chunk;
	struct ft_stage *stage;	/* staging buffer (trace_buf.c) */
	struct ftkit_rec *recs;		/* its records */
	uint64_t head;		/* next staged record */
	uint64_t cap;		/* records the chunk holds */
	uint64_t limit;		/* staged records that fit before a flush */
	uint32_t state;		/* FT_THREAD_* */
	uint32_t busy;		/* allocation in progress (signal re-entry) */
	uint32_t saved_state;	/* state before fork() (the fork window records nothing) */
	uint32_t open;		/* graph entries recorded and not yet exited */
	uint32_t gen;		/* session generation the chunk belongs to */
	uint64_t reg;		/* index in ft_sess.reg */

	/* function graph shadow stack */
	struct fgraph_frame *shadow;
	int depth;
	int shadow_failed;
	int in_ret;		/* running graph callbacks: calls they make are not graphed */
	unsigned long *last_slot;	/* last frame pushed (same call, other user) */
	unsigned long last_ip;

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
 * 0 when the chunk is full, or when the trace file has been finalised: the thread is then
 * detached from it (no longer FT_THREAD_LIVE), so nothing it records later reaches the file.
 */
int ftkit_trace_flush(struct ft_thread *t, uint64_t need);

/* An event did not fit (ftkit_trace_flush said 0): count it, unless the file is final. */
static inline void ft_rec_lost(struct ft_thread *t)
{
	if (t->state == FT_THREAD_LIVE) {
		t->chunk->lost++;
		t->chunk->flags |= FTKIT_T_FULL;
	}
}


static inline struct ftkit_rec *ft_rec_reserve(struct ft_thread *t)
{
	uint64_t n = t->head;

	if (unlikely(n >= t->limit)) {
		if (!ftkit_trace_flush(t, n + 1)) {
			ft_rec_lost(t);
			return 0;
		}
		n = t->head;	/* the staged records went to the file */
	}
	t->head = n + 1;
	barrier();
	return &t->recs[n];
}

static inline void ft_rec_commit(struct ft_thread *t)
{
	barrier();
	__atomic_store_n(&t->stage->head, t->head, __ATOMIC_RELEASE);
}

/* fgraph_interpose.c */
void *ft_next_sym(const char *name);

/* fgraph.c */
void fgraph_unhook_all(void);
void fgraph_rehook_live(unsigned long cfa);
void fgraph_unwind_all(void);
void fgraph_close_all(void);	/* frames left at thread exit (pthread_cancel) */
void fgraph_thread_release(void);
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
