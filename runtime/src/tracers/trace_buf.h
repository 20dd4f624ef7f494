/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-thread event buffers and the trace file session (trace_buf.c): the state
 * of a recording thread and the inline encoders of its events, the blocks the
 * writer thread writes, the session.  Everything per thread is initial-exec TLS or
 * global; nothing on the hot path takes a lock, allocates with malloc or makes a
 * system call.  Built on trace_util.h, clock.h and trace_format.h.
 */
#ifndef FTKIT_TRACE_BUF_H
#define FTKIT_TRACE_BUF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "core/fdutil.h"
#include "trace_format.h"
#include "trace_util.h"

struct fgraph_frame;		/* fgraph.h */
struct fgraph_orphan;

#define FT_PV_WORDS	(64 * 1024)	/* ft_thread.pv: staged arguments, words */

/* A recorded graph frame still open (the tracer's own stack, see ft_thread.rs). */
struct ft_argplan;

struct ft_rframe {
	uint64_t ip;
	uint64_t ts;
	int depth;			/* shadow-stack depth of the call */
	/* time filter, a frame not yet written: its staged arguments in ft_thread.pv */
	uint32_t vat;
	uint16_t vwords, vn;
	/* the call's argument plan, found at its entry (NULL: none): its return value's */
	const struct ft_argplan *plan;
	unsigned long xr;		/* the entry register the plan reads its value from */
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
	uint32_t ring;			/* flight recorder: the owner overwrites its oldest block */
	uint32_t retired;		/* exited because the owner moved to a buffer of another mode */
	uint32_t cfg_gen;		/* the buffer mode's generation it was made for */
	uint32_t pad_;
	uint64_t bytes;			/* its mapping */
	uint64_t lost;			/* events dropped (total, owner) */
	uint64_t lost_depth;
	uint64_t seq_next;		/* seq of the next block the owner starts */
	uint64_t wseq;			/* next seq the writer writes */
	uint64_t blocks;		/* EVENTS chunks written */
	uint64_t clear_seq;		/* blocks before it were dropped by a live `clear` */
	uint64_t dropped;		/* events of blocks the writer could not write, not yet
					   said by a later block's chunk (FTKIT_B_DROPPED) */
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
	struct ftkit_pair *pairs;	/* the block's FUNC_AGAIN cache (in the thread buffer) */
	uint64_t *entries;		/* the block's ENTRY_AGAIN cache (after it) */
	uint32_t state;		/* FT_THREAD_* */
	uint32_t busy;		/* a writer holds the encoder's state (signal re-entry) */
	uint32_t ndefer;	/* calls a signal handler made while busy, kept in defer[] */
	uint32_t draining;	/* ft_ev_drain is writing them */
	struct ft_defer *defer;	/* FT_DEFER of them (in the thread buffer) */
	char *defer_data;	/* FT_DEFER_DATA bytes for kept markers' texts (after them) */
	uint32_t defer_bytes;	/* of it taken */
	uint32_t ext_kept;	/* a kept record waits: the fast writers leave it to the slow path */
	uint32_t saved_state;	/* state before fork() (the fork window records nothing) */
	uint32_t open;		/* recorded graph frames still open (entries in rs) */
	uint32_t npend;		/* time filter: frames entered, not yet written (rs[open..]) */
	uint32_t gen;		/* session generation the buffers belong to */
	uint32_t need_depth;	/* an EXT DEPTH is due before the next ENTRY */
	uint64_t lost_pending;	/* dropped since the current block started */
	struct ft_rframe *rs;	/* recorded open frames, outermost first */
	uint32_t *pv;		/* time filter: arguments of the frames not yet written
				   (FT_PV_WORDS, mapped at first use) */
	struct ft_tbuf *tb;
	uint64_t reg;		/* index in ft_sess.reg */

	/* function graph shadow stack */
	struct fgraph_frame *shadow;
	int depth;
	int shadow_failed;
	int in_ret;		/* running graph callbacks: calls they make are not graphed */
	struct fgraph_orphan *orphans;	/* after the shadow frames, in the same mapping */
	int norphans;			/* oldest first */

	/* graph_function / graph_notrace subtrees (trace.c): shadow depth + 1 of the frame
	   that opened one, 0 outside; valid for graph registration sel_gen only */
	int sel_in, sel_out;
	uint32_t sel_gen;

	/* thread filter (trace.c): the selection generation it was judged for << 1 | left out */
	uint32_t thr_state;
	uint32_t thr_recheck;	/* events while left out (its name is read again now and then) */
};

extern __thread struct ft_thread ft_cur FT_TLS;

/* trace_buf.c */
struct ft_thread *ft_thread_buf(void);	/* allocates on first use; NULL → drop */
void ft_note_lost_depth(void);
/* n events of t that will not be recorded (a dropped entry's exit, which is not hooked). */
void ft_ev_lost_n(struct ft_thread *t, unsigned n);
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

/* FTRT_AGAIN=0: no pair is cached, so no FUNC_AGAIN or ENTRY_AGAIN is written (to compare). */
extern int ft_pairs_off;

static inline void ft_pair_store(struct ftkit_pair *e, uint64_t ip, uint64_t parent)
{
	if (likely(!ft_pairs_off)) {
		e->ip = ip;
		e->parent = parent;
	}
}

static inline void ft_entry_store(uint64_t *e, uint64_t ip)
{
	if (likely(!ft_pairs_off))
		*e = ip;
}

/*
 * The fast writers hold t->busy from reading the encoder's state (wp, last_ts, ip_hi, the
 * block) until their words are published, as the slow path does.  A signal handler's
 * event that lands meanwhile goes the slow way and finds busy raised: a function-tracer
 * call is kept for later (ft_ev_drain), anything else counted lost.
 * Unguarded, the handler took the same words (its events were overwritten, uncounted),
 * published past words not yet filled, or moved the block, ip_hi or last_ts under the
 * writer it interrupted, whose event then decoded as another function or broke the block
 * (TestTracerSignalStorm).  0: busy already (nothing held).
 */
static inline int ft_ev_hold(struct ft_thread *t)
{
	if (unlikely(t->busy | t->ext_kept))	/* kept records go first: the slow way */
		return 0;
	t->busy = 1;
	barrier();
	return 1;
}

static inline void ft_ev_release(struct ft_thread *t)
{
	barrier();
	t->busy = 0;
}

/*
 * A function-tracer call, a marker or a trigger's stack trace made by a signal handler
 * while its thread held the writer is kept (FT_DEFER at most, texts in FT_DEFER_DATA
 * bytes; more calls are counted lost, more records refused) and written by ft_ev_drain
 * once the writer is released, after the event it interrupted (the kernel keeps an
 * interrupt's events too).  The slow paths drain on their way out; the function tracer's
 * fast path, which may call nothing but through ftrt_arch_lean_call, asks ft_ev_deferred;
 * after a kept marker or stack trace the other fast writers leave the next event to the
 * slow path (ext_kept), so it is written before that event.
 */
#define FT_DEFER 16
#define FT_DEFER_DATA 1536

/* ip 0: an EXT record, parent = sub | arg << 8 | its text's offset << 24 | length << 40 */
struct ft_defer {
	uint64_t ip, parent, ts;
};

void ft_ev_drain(struct ft_thread *t);

static inline int ft_ev_deferred(const struct ft_thread *t)
{
	return unlikely(__atomic_load_n(&t->ndefer, __ATOMIC_RELAXED) != 0);
}

/* Publish the words up to end and release the hold. */
static inline void ft_ev_commit(struct ft_thread *t, uint32_t *end)
{
	ft_ev_publish(t, end);
	ft_ev_release(t);
}

/* EXIT / EXIT_UNWOUND (one word) with no call: 0 when the event needs ft_ev_slow. */
static inline int ft_ev_exit_fast(struct ft_thread *t, uint32_t type, uint64_t ts)
{
	uint32_t *p;
	uint64_t d;

	if (unlikely(!ft_ev_hold(t)))
		return 0;
	p = t->wp;
	d = ts - t->last_ts;
	if (unlikely(p + 1 > t->wend || d >= FTKIT_DELTA_MAX)) {
		ft_ev_release(t);
		return 0;
	}
	t->wp = p + 1;
	t->last_ts = ts;
	p[0] = type | (uint32_t)d << 3;
	ft_ev_commit(t, p + 1);
	return 1;
}

static inline void ft_ev_exit(struct ft_thread *t, uint32_t type, uint64_t ts)
{
	if (unlikely(!ft_ev_exit_fast(t, type, ts)))
		ft_ev_slow(t, type, 0, 0, ts);
}

/*
 * ENTRY_AGAIN (one word) when the function is in the block's entry cache, else ENTRY (two
 * words), which stores it there; with no call: 0 when the event needs ft_ev_slow.
 */
static inline int ft_ev_entry_fast(struct ft_thread *t, uint64_t ip, uint64_t ts)
{
	uint32_t *p, slot = ftkit_entry_slot(ip);
	uint64_t *e, d;

	if (unlikely(!ft_ev_hold(t)))
		return 0;
	p = t->wp;
	d = ts - t->last_ts;
	if (unlikely(p + 2 > t->wend || d >= FTKIT_DELTA_MAX || t->need_depth)) {
		ft_ev_release(t);
		return 0;
	}
	e = &t->entries[slot];
	if (likely(*e == ip && d < FTKIT_AGAIN_DELTA_MAX)) {
		t->wp = p + 1;
		t->last_ts = ts;
		p[0] = FTKIT_EV_ENTRY_AGAIN | (uint32_t)d << 3 | slot << 24;
		ft_ev_commit(t, p + 1);
		return 1;
	}
	if (unlikely((uint32_t)(ip >> 32) != t->ip_hi)) {
		ft_ev_release(t);
		return 0;
	}
	t->wp = p + 2;
	t->last_ts = ts;
	ft_entry_store(e, ip);
	p[0] = FTKIT_EV_ENTRY | (uint32_t)d << 3;
	p[1] = (uint32_t)ip;
	ft_ev_commit(t, p + 2);
	return 1;
}

static inline void ft_ev_entry(struct ft_thread *t, uint64_t ip, uint64_t ts)
{
	if (unlikely(!ft_ev_entry_fast(t, ip, ts)))
		ft_ev_slow(t, FTKIT_EV_ENTRY, ip, 0, ts);
}

/*
 * FUNC_AGAIN (one word) when the pair is in the block's cache, else FUNC_NEAR (two
 * words), which stores it there; with no call: 0 when the event needs ft_ev_slow.
 * Inlined always: the function tracer's callback is a leaf only with it inside (gcc 12
 * stopped inlining it for one more load, and a call cost 2.5 ns).
 */
static inline __attribute__((always_inline)) int ft_ev_func_near(struct ft_thread *t, uint64_t ip,
								   uint64_t parent, uint64_t ts)
{
	uint32_t *p, slot = ftkit_pair_slot(ip, parent);
	struct ftkit_pair *e;
	uint64_t d;
	int64_t diff = (int64_t)(parent - ip);

	if (unlikely(!ft_ev_hold(t)))
		return 0;
	p = t->wp;
	d = ts - t->last_ts;
	e = &t->pairs[slot];	/* t->pairs is set whenever a block is (wend not NULL) */
	if (likely(p + 1 <= t->wend && e->ip == ip && e->parent == parent &&
		   d < FTKIT_AGAIN_DELTA_MAX)) {
		t->wp = p + 1;
		t->last_ts = ts;
		p[0] = FTKIT_EV_FUNC_AGAIN | (uint32_t)d << 3 | slot << 24;
		ft_ev_commit(t, p + 1);
		return 1;
	}
	if (unlikely(p + 2 > t->wend || d >= FTKIT_NEAR_DELTA_MAX || diff != (int16_t)diff ||
		     (uint32_t)(ip >> 32) != t->ip_hi)) {
		ft_ev_release(t);
		return 0;
	}
	t->wp = p + 2;
	t->last_ts = ts;
	ft_pair_store(e, ip, parent);
	p[0] = FTKIT_EV_FUNC_NEAR | (uint32_t)d << 3 | (uint32_t)(uint16_t)diff << 16;
	p[1] = (uint32_t)ip;
	ft_ev_commit(t, p + 2);
	return 1;
}

/* FUNC_NEAR when it fits, else FUNC. */
static inline void ft_ev_func(struct ft_thread *t, uint64_t ip, uint64_t parent, uint64_t ts)
{
	if (unlikely(!ft_ev_func_near(t, ip, parent, ts)))
		ft_ev_slow(t, FTKIT_EV_FUNC, ip, parent, ts);
}

/* FTRACE_BUFFER_KB's range (format v2 uses 256 KiB to 4 MiB of it: 4 to 64 blocks) */
#define FT_BUFFER_KB_MIN	4
#define FT_BUFFER_KB_MAX	(4UL << 20)

#define FT_MAX_REG 4096		/* threads recording at the same time */

enum { FT_SESS_OFF = 0, FT_SESS_LIVE, FT_SESS_DONE };


struct ft_session {
	uint64_t cmd_hash;		/* of the CMDLINE chunk's bytes written last */
	int fd;
	struct ft_fdid fd_id;		/* what fd names (closed after fork only if still so) */
	int state;			/* FT_SESS_* */
	int finished;			/* DONE and its file written (ft_session_finish returned) */
	pid_t finisher;			/* the thread finishing it */
	uint32_t gen;			/* bumped at each open (fork child) */
	int maps_startup_done;
	uint64_t end;			/* file size (under the session lock) */
	struct ftkit_file_header hdr;	/* hdr.tracer: every tracer that ran (FTKIT_TRACER_* bits) */
	uint32_t tracer_now;		/* the one that runs (a fork child's file starts with it) */
	struct ft_clock_ref clk;
	char final[PATH_MAX];		/* output name */
	char base[PATH_MAX];		/* final without the .exec<n> suffix (exec naming) */
	char root[PATH_MAX];		/* the output name of the run: a deep fork child's base */
	char part[PATH_MAX + 32];	/* live name */
	char *maps;			/* last MAPS chunk image */
	size_t maps_len;
	uint64_t nreg;			/* reg slots in use (high-water) */
	uint64_t nthreads;		/* threads that recorded */
	uint64_t lost_exited, lost_depth_exited;	/* counts of exited threads */
	struct ft_tbuf *reg[FT_MAX_REG];	/* threads the writer serves */
};

extern struct ft_session ft_sess;

/*
 * Set by trace.c (from FTRACE_EXEC) when this image was exec'd by a traced image of the
 * same process: its generation (1, 2, …) and that image's base output name.  A session whose name would be
 * that one gets ".exec<gen>" appended instead of replacing the pre-exec trace.
 */
extern unsigned ft_exec_gen;
extern char ft_exec_prev[PATH_MAX];

int ft_session_open(const char *output, size_t buf_kb, uint32_t tracer, uint32_t depth,
		    int force_mono, int fork_child);
int ft_session_finish(int reason, int sig, int in_signal);
/*
 * The session was opened for an attach (`ftrace live PID` on a process started without a
 * tracer), in the socket's directory: if the process ends before any thread recorded
 * (only `status` was asked, or the tracer stayed nop), its file is removed, not left there.
 */
void ft_session_discard_if_empty(void);
/* Another thread is finishing the session: wait until its file is written (up to 5 s). */
void ft_session_wait_finished(void);
/* After finish, when nothing more is to come of the session (no snapshot): its descriptor
   is closed (unless the program took the number since). */
void ft_session_release(void);
int ft_session_snapshot(const char *path, char *out, size_t outlen);
/* In a fork child (nop: the process has no tracer, so no file is made yet). */
void ft_session_forked(int nop);
/* A fork child that had no tracer gets one: its trace file now; 0 or an error. */
int ft_session_fork_open(uint32_t tracer);
/* The trace's size limit from now on (0: none): `ftrace live PID size`. */
void ft_session_set_size(uint64_t bytes);
/* After the session ended (at exit): wait for its writer thread to end; not async-signal-safe. */
void ft_session_reap(void);
/* events lost, graph frames not recorded (depth), threads that recorded */
void ft_session_counts(uint64_t *lost, uint64_t *depth, uint64_t *threads);
int ft_maps_build(uint64_t at, unsigned long pad_to);
int ft_known_at_startup(unsigned long start);
/* Drop the events the threads hold (live `clear`); -ENODEV if not tracing. */
int ft_session_clear(void);
int ft_session_set_ring(uint64_t bytes);	/* live `ring`: 0 streams */
/* A tracer switched on live: the header adds it to the tracers that ran (nop adds none,
   so a session started as nop and switched names what recorded). */
void ft_session_set_tracer(uint32_t tracer);
void ft_session_mode(char *buf, size_t len);
/*
 * What ends the session when FTRACE_SIZE or FTRACE_DURATION is reached: run once on the
 * writer thread with the reason (FTKIT_R_SIZE, FTKIT_R_DURATION); it must finish the
 * session.
 */
void ft_session_set_stop(void (*stop)(int reason));
int ft_parse_size(const char *str, uint64_t *v);
int ft_parse_duration(const char *str, uint64_t *ns);

#define FT_MARKER_MAX	1000	/* bytes of a marker's text (EXT payload: at most 255 words) */
int ft_ev_marker(struct ft_thread *t, uint64_t ts, const char *text, size_t len);
/* Return addresses a STACK record holds at most (a stacktrace trigger's walk stops there). */
#define FT_STACK_MAX	64
/* EXT STACK: n (at most FT_STACK_MAX) code addresses, innermost first */
int ft_ev_stack(struct ft_thread *t, uint64_t ts, const uint64_t *pcs, unsigned n);
/* An EXT record: its header, the u64 ts, then len bytes of data (at most 1012). */
int ft_ev_ext(struct ft_thread *t, uint32_t sub, uint32_t arg, uint64_t ts, const void *data,
	      size_t len);

#endif
