// SPDX-License-Identifier: Apache-2.0
/*
 * The function and function_graph tracers: ordinary ftrace_ops / fgraph_ops
 * users that record into the per-thread buffers of trace_buf.c, the
 * FTRACE_* start-up controls, and the write-out at exit and on fatal signals.
 *
 * Hot paths (trace_func, trace_graph_ent, trace_graph_ret): one TLS state
 * check, one clock read, a 4- or 8-byte event (trace_buf.h) and a store of
 * the block's published length. No locks, no system calls, no allocation (except
 * the first event of a thread, see ft_thread_buf()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <ftrace_trace.h>

#include "core/ftrt_core.h"
#include "core/poke.h"
#include "args.h"
#include "args_next.h"
#include "control.h"
#include "fgraph_fast.h"
#include "trace.h"
#include "trace_buf.h"
#include "trigger.h"

static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
	int started;
	int enabled;			/* the on/off switch (ftrace_trace_enable) */
	enum ftrace_tracer tracer;
	unsigned int depth;
	char *globs[FT_NLISTS];		/* only globs that matched when they were set */
	/* each list as asked (start-up: with globs that matched nothing then): applied again
	   when a library is loaded (ftrt_objects_added), so that its names match too */
	char *asked[FT_NLISTS];
	/* a start-up list named functions, none of which exists: a filter (or graph_function
	   list) that would select everything if applied empty selects nothing instead */
	int none[FT_NLISTS];
	int registered;			/* which tracer's ops are registered */
	/* function_graph only: graph_function / graph_notrace lists in force (read by the
	   callbacks, lock-free; see lists_apply for live changes) */
	int sel_in, sel_out;
	uint32_t sel_gen;		/* bumped at each registration of the graph ops */
	/* time filter (the kernel's tracing_thresh, uftrace -t): graph calls shorter than
	   thresh ticks are not recorded, nor what they call */
	uint64_t thresh_ns;
	uint64_t thresh;
	/* thread filter: the generation of the selection << 1 (a thread whose thr_state
	   differs judges itself again); thr_gen counts the changes */
	uint32_t thr_want;
	uint32_t thr_gen;
	int paused;			/* triggers' traceoff: no thread records */
} tr;

static const char *const list_names[FT_NLISTS] = { "filter", "notrace", "graph_function",
						   "graph_notrace" };

/*
 * The graph_function and graph_notrace lists (the kernel's set_graph_function and
 * set_graph_notrace): function sets held as the filters of two ops that are never
 * registered.
 */
static struct ftrace_ops sel_in_ops = { .flags = FTRT_OPS_FL_LIVE_LISTS };
static struct ftrace_ops sel_out_ops = { .flags = FTRT_OPS_FL_LIVE_LISTS };

/* ---- thread filter (the kernel's set_ftrace_pid, for threads) ---- */

#define THR_MAX		64		/* entries of a thread filter */
#define THR_RECHECK	4096		/* a left-out thread reads its name again this often */

/* A thread filter: thread ids and thread-name globs.  Never changed once published. */
struct thr_spec {
	int n;
	struct {
		long tid;		/* 0: glob */
		char glob[64];
	} item[THR_MAX];
	char text[512];			/* as given, for status */
};

static struct thr_spec *thr_spec;	/* NULL: every thread */

/* fnmatch(3)'s *, ? and [...] ([!...] negates) on a thread name; async-signal-safe. */
static int name_match(const char *p, const char *s)
{
	for (; *p; p++, s++) {
		if (*p == '*') {
			for (;; s++) {
				if (name_match(p + 1, s))
					return 1;
				if (!*s)
					return 0;
			}
		}
		if (!*s)
			return 0;
		if (*p == '[') {
			const char *q = p + 1;
			int neg = *q == '!' || *q == '^', hit = 0;

			q += neg;
			do {
				if (q[1] == '-' && q[2] && q[2] != ']') {
					hit |= *s >= q[0] && *s <= q[2];
					q += 3;
				} else {
					hit |= *s == *q++;
				}
			} while (*q && *q != ']');
			if (!*q || hit == neg)
				return 0;
			p = q;
		} else if (*p != '?' && *p != *s) {
			return 0;
		}
	}
	return !*s;
}

/* A glob's brackets are closed (name_match would read a [ without its ] as a set to
   the end). */
static int glob_ok(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '[')
			continue;
		i += 1 + (i + 1 < n && (p[i + 1] == '!' || p[i + 1] == '^'));
		i++;	/* a set's first character may be ] */
		while (i < n && p[i] != ']')
			i++;
		if (i >= n)
			return 0;
	}
	return 1;
}

/*
 * Slow path of the thread filter: the selection changed since the thread was judged (or
 * a thread was renamed), or the thread is left out (then its name is read again every
 * THR_RECHECK events, for a rename the interposers did not see, e.g. a raw syscall or
 * /proc/self/task/<tid>/comm).  1: record nothing.
 */
static __attribute__((noinline)) int thr_skip(struct ft_thread *t)
{
	uint32_t want = __atomic_load_n(&tr.thr_want, __ATOMIC_ACQUIRE);
	struct thr_spec *sp;
	char name[17] = "";
	long tid;
	int skip = 1;

	if (t->thr_state == (want | 1) && ++t->thr_recheck % THR_RECHECK)
		return 1;
	sp = __atomic_load_n(&thr_spec, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&tr.paused, __ATOMIC_ACQUIRE)) {
		skip = 1;
	} else if (!sp) {
		skip = 0;
	} else {
		int saved_errno = errno;

		tid = syscall(SYS_gettid);
		prctl(PR_GET_NAME, name);
		ft_fix_comm(name);
		errno = saved_errno;
		for (int i = 0; i < sp->n && skip; i++)
			skip = sp->item[i].tid ? sp->item[i].tid != tid : !name_match(sp->item[i].glob, name);
	}
	t->thr_state = want | (uint32_t)skip;
	return skip;
}

/* The calling thread records nothing (thread filter)?  One compare when nothing changed. */
static inline int thr_left_out(void)
{
	struct ft_thread *t = &ft_cur;

	return unlikely(t->thr_state != __atomic_load_n(&tr.thr_want, __ATOMIC_RELAXED)) && thr_skip(t);
}

/*
 * Set the thread filter: comma-separated thread ids and thread-name globs (empty or NULL:
 * every thread).  -EINVAL for a malformed or too long one (nothing changes).  The old
 * filter is not freed: a thread may be reading it (a few hundred bytes per change).
 */
int ftrace_trace_set_threads(const char *spec)
{
	struct thr_spec *sp = NULL;

	if (spec && *spec) {
		const char *p = spec;

		if (strlen(spec) >= sizeof(sp->text) || !(sp = calloc(1, sizeof(*sp))))
			return spec && strlen(spec) >= 512 ? -EINVAL : -ENOMEM;
		strcpy(sp->text, spec);
		while (*p) {
			size_t n = strcspn(p, ",");
			char *end;
			long tid;

			if (n == 0 || n >= sizeof(sp->item[0].glob) || sp->n == THR_MAX) {
				free(sp);
				return -EINVAL;
			}
			tid = strtol(p, &end, 10);
			if (end == p + n && tid > 0) {
				sp->item[sp->n].tid = tid;
			} else if (end == p + n || !glob_ok(p, n)) {
				free(sp);	/* a thread id below 1, a [ without its ] */
				return -EINVAL;
			} else {
				memcpy(sp->item[sp->n].glob, p, n);
			}
			sp->n++;
			p += n;
			if (*p == ',')
				p++;
		}
	}
	pthread_mutex_lock(&trace_mu);
	__atomic_store_n(&thr_spec, sp, __ATOMIC_RELEASE);
	__atomic_store_n(&tr.thr_want, __atomic_add_fetch(&tr.thr_gen, 1, __ATOMIC_ACQ_REL) << 1,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&trace_mu);
	return 0;
}

/*
 * Recording off (or on) for every thread, at its next call (triggers' traceoff/traceon,
 * the kernel's tracing_on): through the thread filter's check, so the hot path pays
 * nothing more.  Calls already entered still record their exits.
 */
void ft_trace_pause(int off)
{
	if (__atomic_exchange_n(&tr.paused, !!off, __ATOMIC_ACQ_REL) != !!off)
		__atomic_store_n(&tr.thr_want, __atomic_add_fetch(&tr.thr_gen, 1, __ATOMIC_ACQ_REL) << 1,
				 __ATOMIC_RELEASE);
}

int ft_trace_paused(void)
{
	return __atomic_load_n(&tr.paused, __ATOMIC_ACQUIRE);
}

/* A thread was renamed: with a thread filter, every thread judges itself again. */
static void thr_renamed(void)
{
	if (__atomic_load_n(&thr_spec, __ATOMIC_ACQUIRE))
		__atomic_store_n(&tr.thr_want, __atomic_add_fetch(&tr.thr_gen, 1, __ATOMIC_ACQ_REL) << 1,
				 __ATOMIC_RELEASE);
}

/*
 * pthread_setname_np and prctl(PR_SET_NAME), interposed (after the real call): a renamed
 * thread is judged again by the thread filter at its next event.  prctl's arguments are
 * passed on as glibc's own prctl reads them: four unsigned longs.
 */
int pthread_setname_np(pthread_t th, const char *name)
{
	static int (*real)(pthread_t, const char *);
	int rc;

	if (!real)
		real = (int (*)(pthread_t, const char *))ft_next_sym("pthread_setname_np");
	rc = real(th, name);
	if (!rc)
		thr_renamed();
	return rc;
}

int prctl(int option, ...)
{
	static int (*real)(int, unsigned long, unsigned long, unsigned long, unsigned long);
	unsigned long a[4];
	va_list ap;
	int rc;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long))
			ft_next_sym("prctl");
	rc = real(option, a[0], a[1], a[2], a[3]);
	if (option == PR_SET_NAME && !rc)
		thr_renamed();
	return rc;
}

/* ---- function tracer ---- */

static inline struct ft_thread *thread_buf(void)
{
	struct ft_thread *t = &ft_cur;

	if (likely(t->state == FT_THREAD_LIVE))
		return t;
	return ft_thread_buf();
}

/* The arguments of the call of ip at ts, if it has a plan (before its event): the plan. */
static inline const struct ft_argplan *args_entry(struct ft_thread *t, unsigned long ip, uint64_t ts,
						  const struct ftrace_regs *fregs)
{
	const struct ft_argplan *p = ft_args_find(ip);

	if (p)
		ft_args_entry(t, p, ts, fregs);
	return p;
}

/*
 * The graph tracer's ENTRY of ip at ts with the call's arguments, if it has a plan: one
 * short record and the entry where they fit, else the long record and the entry (which
 * may take a new block; none: t->blk is NULL).  The plan.
 */
static inline const struct ft_argplan *args_entry_ev(struct ft_thread *t, unsigned long ip,
						     uint64_t ts, const struct ftrace_regs *fregs)
{
	const struct ft_argplan *p = ft_args_find(ip);

	if (!(p && ft_args_entry_next(t, p, ip, ts, fregs))) {
		if (p)
			ft_args_entry(t, p, ts, fregs);
		ft_ev_entry(t, ip, ts);
	}
	return p;
}

/* A frame's plan, and the entry register its return value is read from (ft_args_xr). */
static inline void rframe_plan(struct ft_rframe *f, const struct ft_argplan *plan,
			       const struct ftrace_regs *fregs)
{
	f->plan = plan;
	if (unlikely(plan))
		f->xr = ft_args_xr(plan, fregs);
}

/*
 * The graph tracer's exit (type) at ts of the call whose frame is f, with its return value
 * as its entry's plan says (found then: no second lookup; plans are never freed), not once
 * the values are off: one short record and the exit where they fit, else the long record
 * and the exit.
 */
static inline void args_exit_ev(struct ft_thread *t, const struct ft_rframe *f, uint64_t ts,
				const struct ftrace_ret_regs *rr, uint32_t type)
{
	int values = rr && f->plan && __atomic_load_n(&ft_argtab, __ATOMIC_RELAXED);
	struct ftrace_ret_regs xrr;

	if (values && unlikely(f->plan->xr_in >= 0)) {
		/* the value is read from the entry's register, kept in the frame */
		xrr = *rr;
		__builtin_memcpy((char *)&xrr + f->plan->xr_out, &f->xr, sizeof(f->xr));
		rr = &xrr;
	}
	if (values && type == FTKIT_EV_EXIT && ft_args_exit_next(t, f->plan, ts, rr))
		return;
	if (values)
		ft_args_exit(t, f->plan, ts, rr);
	/* a block started by this exit has the frame in its header (the caller pops it after) */
	if (unlikely(t->need_depth))
		ft_ev_slow(t, type, 0, 0, ts);
	else
		ft_ev_exit(t, type, ts);
}

/*
 * A call's parent is return_to_handler when its return slot was hooked by the graph
 * tracer: a tail call from a function whose frame it had hooked (its frames outlive a
 * live switch to this tracer).  That return pops the innermost shadow frame: its return
 * address is the real parent.
 */
static unsigned long real_parent(const struct ft_thread *t, unsigned long parent_ip)
{
	int d = t->depth;

	if (parent_ip == (unsigned long)return_to_handler && t->shadow && d > 0 &&
	    d <= FGRAPH_SHADOW_DEPTH)
		return t->shadow[d - 1].ret;
	return parent_ip;
}

/* Everything trace_func does not do inline (called through ftrt_arch_lean_call). */
static __attribute__((noinline, cold)) void trace_func_slow(unsigned long ip, unsigned long parent_ip,
							   struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct ft_thread *t;
	uint64_t ts;

	(void)op;
	if (thr_left_out())
		return;
	t = thread_buf();
	if (unlikely(!t))
		return;
	parent_ip = real_parent(t, parent_ip);
	ts = ft_clock_read();
	if (unlikely(__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED)))
		args_entry(t, ip, ts, fregs);
	ft_ev_func(t, ip, parent_ip, ts);
}

/* A signal handler's calls kept while trace_func held the writer (ft_ev_drain). */
static __attribute__((noinline, cold)) void trace_func_drain(unsigned long ip, unsigned long parent_ip,
							    struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)op, (void)fregs;
	ft_ev_drain(&ft_cur);
}

/*
 * The common call (a recording thread, the cycle counter, no arguments, a near event that
 * fits its block) is done without a call, so the compiler saves almost no registers on
 * the way in: about 1.5 ns of a call's cost here (bench/RESULTS.md).  Everything else goes
 * through ftrt_arch_lean_call, so the callback is a leaf the lean template may run (it
 * saves no vector register: about 2 ns more).
 */
static FT_LEAN_CALLBACK void trace_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		       struct ftrace_regs *fregs)
{
	struct ft_thread *t = &ft_cur;

	if (likely(t->thr_state == __atomic_load_n(&tr.thr_want, __ATOMIC_RELAXED) &&
		   t->state == FT_THREAD_LIVE && ft_clock_source == FT_CLOCK_TSC &&
		   !__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED) &&
		   parent_ip != (unsigned long)return_to_handler) &&
	    ft_ev_func_near(t, ip, parent_ip, ftrt_arch_cycles())) {
		if (ft_ev_deferred(t))
			ftrt_arch_lean_call(trace_func_drain, ip, parent_ip, op, fregs);
		return;
	}
	ftrt_arch_lean_call(trace_func_slow, ip, parent_ip, op, fregs);
}

/* trace_func reads its frame only through ft_args_entry, reached by ftrt_arch_lean_call */
static struct ftrace_ops trace_fops = { .func = trace_func, .flags = FTRT_OPS_FL_LEAN_FRAME };

/* ---- function_graph tracer ---- */

/*
 * graph_function / graph_notrace: should the call e be hooked and recorded?  Outside a
 * graph_function subtree (when there is a list) and inside a graph_notrace one, calls are
 * neither (SEL_SKIP); a graph_notrace function is hooked to see where its subtree ends but
 * not recorded (SEL_HIDE).  A thread's subtree state from an earlier registration of the
 * graph ops is stale: its frames do not come back to this registration's return callback.
 */
enum { SEL_RECORD, SEL_SKIP, SEL_HIDE, SEL_OPEN };

static int graph_select(struct ft_thread *t, const struct ftrace_graph_ent *e)
{
	uint32_t gen = __atomic_load_n(&tr.sel_gen, __ATOMIC_RELAXED);

	if (t->sel_gen != gen) {
		t->sel_gen = gen;
		t->sel_in = t->sel_out = 0;
	}
	if (t->sel_out)
		return SEL_SKIP;
	/* graph_notrace first (as the kernel): it also hides graph_function subtrees within */
	if (tr.sel_out && ftrt_ops_match(&sel_out_ops, e->func))
		return SEL_HIDE;
	if (!tr.sel_in || t->sel_in)
		return SEL_RECORD;
	return ftrt_ops_match(&sel_in_ops, e->func) ? SEL_OPEN : SEL_SKIP;
}

/*
 * Recorded frames at shadow depth >= depth are not open any more, but their exits never
 * came (the graph ops were registered again, or a frame was left without the return
 * hook): the next ENTRY is preceded by an EXT DEPTH that closes them for readers.
 */
static __attribute__((noinline)) void graph_close_stale(struct ft_thread *t, int depth)
{
	while (t->open && t->rs[t->open - 1].depth >= depth)
		t->open--;
	t->need_depth = t->open + 1;	/* EXT DEPTH t->open before the next event */
}

/*
 * Time filter.  An entry is not written when it happens: the frame waits in rs after the
 * recorded ones (t->npend of them, innermost last).  At its exit a call shorter than the
 * threshold is forgotten; a longer one has its entry written, and first those of the
 * waiting frames around it (they last longer still), in order and with their own times,
 * so the trace holds exactly the calls that lasted the threshold, nested as they ran.
 * Waiting frames at this depth or deeper ended unseen: nothing was written for them.
 */
static __attribute__((noinline)) void pend_drop(struct ft_thread *t, int depth)
{
	while (t->npend && t->rs[t->open + t->npend - 1].depth >= depth)
		t->npend--;
}

static __attribute__((noinline)) void pend_flush(struct ft_thread *t)
{
	while (t->npend) {
		struct ft_rframe *f = &t->rs[t->open];

		/* the values and the entry: one short record where they fit */
		if (!(f->vwords && ft_args_staged_next(t, f->plan, t->pv + f->vat, f->vwords,
						       f->vn, f->ip, f->ts))) {
			if (f->vwords)
				ft_ev_ext(t, FTKIT_EXT_ARGS, f->vn, f->ts, t->pv + f->vat,
					  f->vwords * 4u);
			ft_ev_entry(t, f->ip, f->ts);
		}
		if (unlikely(!t->blk)) {
			/* dropped (no free block, counted): its exit, and the entries and exits
			   of the frames waiting inside it, find no recorded frame */
			ft_ev_lost_n(t, 2 * t->npend - 1);
			t->npend = 0;
			return;
		}
		t->open++;
		t->npend--;
	}
}

/*
 * The arguments of a call the time filter holds back: staged after those of the frames
 * around it (t->pv, a stack), written before its entry if it lasts long enough, forgotten
 * with it otherwise.  Where they cannot be staged they are written now (a reader passes
 * over the values of a call it never sees).
 */
static __attribute__((noinline)) void args_pend(struct ft_thread *t, struct ft_rframe *f,
						const struct ftrace_regs *fregs)
{
	const struct ft_argplan *p = ft_args_find(f->ip);
	uint32_t top = f->vat;
	unsigned n = 0;

	rframe_plan(f, p, fregs);
	if (!p)
		return;
	if (!t->pv) {	/* mmap: this may run in a signal handler */
		void *m = mmap(NULL, FT_PV_WORDS * 4, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (m != MAP_FAILED)
			t->pv = m;
	}
	if (t->pv)
		f->vwords = (uint16_t)ft_args_stage(p, fregs, t->pv + top, FT_PV_WORDS - top, &n);
	f->vn = (uint16_t)n;
	if (!f->vwords)
		ft_args_entry(t, p, f->ts, fregs);
}

/* A call the time filter holds back: its frame after those waiting (no values yet). */
static inline struct ft_rframe *pend_push(struct ft_thread *t, uint64_t ip, uint64_t ts, int depth)
{
	struct ft_rframe *f = &t->rs[t->open + t->npend];

	f->ip = ip;
	f->ts = ts;
	f->depth = depth;
	/* its staged arguments go after those of the frame around it, if pending */
	f->vat = t->npend ? f[-1].vat + f[-1].vwords : 0;
	f->vwords = 0;
	f->plan = NULL;
	t->npend++;
	return f;
}

static int trace_graph_ent(struct ftrace_graph_ent *e, struct fgraph_ops *gops)
{
	struct ft_thread *t;
	int sel = SEL_RECORD;

	(void)gops;
	if (thr_left_out())
		return 0;
	if (unlikely(tr.sel_in | tr.sel_out)) {
		sel = graph_select(&ft_cur, e);
		if (sel == SEL_SKIP)
			return 0;
		if (sel == SEL_HIDE) {
			ft_cur.sel_out = e->depth + 1;
			return 1;
		}
	}
	if (unlikely(tr.depth && (unsigned int)e->depth >= tr.depth)) {
		ft_note_lost_depth();
		return 0;
	}
	if (unlikely(ft_cur.state != FT_THREAD_LIVE)) {
		/*
		 * The thread's first event sets its buffer up (milliseconds on a VM that zeroes
		 * fresh pages slowly): time the call from after that, not from before it, so
		 * the setup is not charged to the thread's first function.
		 */
		t = ft_thread_buf();
		if (unlikely(!t))
			return 0;
		e->calltime = ft_clock_read();
	} else {
		t = &ft_cur;
	}
	/* frames recorded at this depth or deeper ended without an exit we saw */
	if (unlikely(t->npend)) {
		pend_drop(t, e->depth);
		/* the filter was switched off (live) while calls around this one were held back:
		   they are open and last long enough now, so their entries go first (rs would
		   otherwise take this entry over the first of them) */
		if (t->npend && !__atomic_load_n(&tr.thresh, __ATOMIC_RELAXED))
			pend_flush(t);
	}
	if (unlikely(t->open && t->rs[t->open - 1].depth >= e->depth))
		graph_close_stale(t, e->depth);
	if (unlikely(t->open + t->npend >= FGRAPH_SHADOW_DEPTH))
		return 0;
	if (unlikely(__atomic_load_n(&tr.thresh, __ATOMIC_RELAXED))) {
		struct ft_rframe *f = pend_push(t, e->func, e->calltime, e->depth);

		if (unlikely(__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED)))
			args_pend(t, f, e->fregs);
		if (unlikely(sel == SEL_OPEN))
			t->sel_in = e->depth + 1;
		return 1;
	}
	const struct ft_argplan *plan = NULL;

	if (unlikely(__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED)))
		plan = args_entry_ev(t, e->func, e->calltime, e->fregs);
	else
		ft_ev_entry(t, e->func, e->calltime);
	if (unlikely(!t->blk)) {
		ft_ev_lost_n(t, 1);	/* dropped (no free block): nor is its exit recorded */
		return 0;
	}
	t->rs[t->open].ip = e->func;
	t->rs[t->open].ts = e->calltime;
	t->rs[t->open].depth = e->depth;
	rframe_plan(&t->rs[t->open], plan, e->fregs);
	t->open++;
	if (unlikely(sel == SEL_OPEN))
		t->sel_in = e->depth + 1;
	return 1;
}

static void trace_graph_ret(struct ftrace_graph_ret *e, struct fgraph_ops *gops)
{
	struct ft_thread *t = &ft_cur;

	(void)gops;
	if (unlikely(t->sel_in | t->sel_out) && t->sel_gen == tr.sel_gen) {
		if (e->depth + 1 == t->sel_out) {	/* a graph_notrace function: not recorded */
			t->sel_out = 0;
			return;
		}
		if (e->depth + 1 == t->sel_in)
			t->sel_in = 0;
	}
	/* no buffer, or an entry recorded before fork (in the parent's file) */
	if (unlikely(t->state != FT_THREAD_LIVE || e->calltime < ft_sess.hdr.start_ticks))
		return;
	if (unlikely(t->npend)) {
		pend_drop(t, e->depth + 1);
		if (t->npend && t->rs[t->open + t->npend - 1].depth == e->depth) {
			if (e->rettime - e->calltime < __atomic_load_n(&tr.thresh, __ATOMIC_RELAXED)) {
				t->npend--;	/* too short: not recorded */
				return;
			}
			pend_flush(t);
		}
	}
	if (unlikely(!t->open))
		return;
	if (unlikely(t->rs[t->open - 1].depth != e->depth)) {
		if (t->rs[t->open - 1].depth < e->depth)
			return;		/* a frame we did not record */
		graph_close_stale(t, e->depth + 1);
		if (!t->open || t->rs[t->open - 1].depth != e->depth)
			return;
	}
	args_exit_ev(t, &t->rs[t->open - 1], e->rettime, e->ret_regs,
		     (e->flags & FGRAPH_RET_UNWOUND) ? FTKIT_EV_EXIT_UNWOUND : FTKIT_EV_EXIT);
	t->open--;
}

static struct fgraph_ops trace_gops = {
	.entryfunc = trace_graph_ent,
	.retfunc = trace_graph_ret,
	.idx = -1,
};

/*
 * The common call and return, fused with fgraph's (fgraph_fast.h): a recording thread,
 * the cycle counter, no list (or inside a -G subtree), a depth within the limit, no frame
 * stale, the event fitting
 * its block (or, with arguments asked for, any event: args_entry_ev and args_exit_ev may
 * move to a new block, as in trace_graph_ent/ret); with a time filter, the entry held back
 * and the return of a call shorter than it (most calls under a filter), with no argument
 * asked for.  They do what fgraph_entry + trace_graph_ent and fgraph_return +
 * trace_graph_ret do for such a call, in one function each (bench/RESULTS.md); anything
 * else goes the generic way before a thing changes.
 */
/*
 * No graph list, or only graph_function (-G) and the thread inside one of its subtrees,
 * where every call is recorded (graph_select's SEL_RECORD).
 */
static inline int graph_sel_none(const struct ft_thread *t)
{
	return !(tr.sel_in | tr.sel_out) ||
	       (!tr.sel_out && t->sel_in && !t->sel_out &&
		t->sel_gen == __atomic_load_n(&tr.sel_gen, __ATOMIC_RELAXED));
}

static inline int graph_fits(const struct ft_thread *t, int idx, int d)
{
	return idx >= 0 && d >= 0 &&
	       t->thr_state == __atomic_load_n(&tr.thr_want, __ATOMIC_RELAXED) &&
	       graph_sel_none(t) && (!tr.depth || (unsigned int)d < tr.depth) &&
	       t->state == FT_THREAD_LIVE && (!t->open || t->rs[t->open - 1].depth < d) &&
	       ft_clock_source == FT_CLOCK_TSC;
}

static inline int graph_entry_fits(struct ft_thread *t, int idx, int d)
{
	return graph_fits(t, idx, d) && !t->npend && t->open < FGRAPH_SHADOW_DEPTH &&
	       !__atomic_load_n(&tr.thresh, __ATOMIC_RELAXED);
}

/* A time filter's entry held back inline: no argument, nothing pending at d or deeper. */
static inline int graph_pend_fits(struct ft_thread *t, int idx, int d)
{
	return graph_fits(t, idx, d) && !__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED) &&
	       (!t->npend || t->rs[t->open + t->npend - 1].depth < d) &&
	       t->open + t->npend < FGRAPH_SHADOW_DEPTH;
}

/* The frame held back for the call at depth d, as trace_graph_ent makes it (no values). */
static inline void graph_pend_push(struct ft_thread *t, int idx, int d, unsigned long ip,
				   unsigned long *slot, uint64_t ts)
{
	pend_push(t, ip, ts, d);
	fgraph_fast_push(t, d, idx, ip, slot, ts);
}

/* The entry's record and shadow frame, once its event is written. */
static inline void graph_entry_push(struct ft_thread *t, int idx, int d, unsigned long ip,
				    unsigned long *slot, uint64_t ts, const struct ft_argplan *plan,
				    const struct ftrace_regs *fregs)
{
	struct ft_rframe *r = &t->rs[t->open];

	r->ip = ip;
	r->ts = ts;
	r->depth = d;
	rframe_plan(r, plan, fregs);
	t->open++;
	fgraph_fast_push(t, d, idx, ip, slot, ts);
}

/*
 * The fused entry's other cases, off its frame: with arguments asked for, the values and
 * the entry (which may take a new block; no block: dropped, counted, its return not
 * hooked), as trace_graph_ent does; anything else (a new block, a list, a stale frame)
 * the generic way.
 */
static __attribute__((noinline)) void trace_graph_entry_slow(unsigned long ip, unsigned long parent_ip,
							     struct ftrace_ops *op,
							     struct ftrace_regs *fregs)
{
	struct ft_thread *t = &ft_cur;
	unsigned long *slot = ftrace_regs_get_return_slot(fregs);
	int idx = trace_gops.idx, d = fgraph_fast_depth(t, slot);

	if (__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED) && graph_entry_fits(t, idx, d)) {
		const struct ft_argplan *plan;
		uint64_t ts;

		t->in_ret++;	/* as fgraph_entry: a signal handler here graphs nothing */
		barrier();
		ts = ftrt_arch_cycles();
		plan = args_entry_ev(t, ip, ts, fregs);
		if (likely(t->blk))
			graph_entry_push(t, idx, d, ip, slot, ts, plan, fregs);
		else
			ft_ev_lost_n(t, 1);
		barrier();
		t->in_ret--;
		return;
	}
	fgraph_entry(ip, parent_ip, op, fregs);
}

/*
 * The common entry, inline and with no call: a leaf the lean template may run (no vector
 * register saved, FTRT_OPS_FL_LEAN_FRAME), as the function tracer's; everything else goes
 * through ftrt_arch_lean_call.
 */
static FT_LEAN_CALLBACK void trace_graph_entry_fast(unsigned long ip, unsigned long parent_ip,
					       struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct ft_thread *t = &ft_cur;
	unsigned long *slot = ftrt_arch_return_slot(fregs);
	int idx = trace_gops.idx, d = fgraph_fast_depth(t, slot);

	if (likely(graph_entry_fits(t, idx, d) && !__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED))) {
		uint64_t ts;

		t->in_ret++;	/* as fgraph_entry: a signal handler here graphs nothing */
		barrier();
		ts = ftrt_arch_cycles();
		if (likely(ft_ev_entry_fast(t, ip, ts))) {
			graph_entry_push(t, idx, d, ip, slot, ts, NULL, fregs);
			barrier();
			t->in_ret--;
			return;
		}
		barrier();
		t->in_ret--;
	} else if (__atomic_load_n(&tr.thresh, __ATOMIC_RELAXED) && graph_pend_fits(t, idx, d)) {
		t->in_ret++;
		barrier();
		graph_pend_push(t, idx, d, ip, slot, ftrt_arch_cycles());
		barrier();
		t->in_ret--;
		return;
	}
	ftrt_arch_lean_call(trace_graph_entry_slow, ip, parent_ip, op, fregs);
}

/* FTRT_GRAPH_FUSED=0: the generic paths only (to compare; ignored in secure-execution mode). */
static int graph_fused(void)
{
	static int on = -1;

	if (on < 0) {	/* not ftrt_env_on: the tracers also build on the mock core */
		const char *e = secure_getenv("FTRT_GRAPH_FUSED");

		on = !(e && !strcmp(e, "0"));
	}
	return on;
}

static unsigned long trace_graph_return_fast(unsigned long sp, const struct ftrace_ret_regs *rr)
{
	struct ft_thread *t = &ft_cur;
	unsigned long *slot = (unsigned long *)sp - 1;
	int idx = __atomic_load_n(&trace_gops.idx, __ATOMIC_RELAXED);
	const struct fgraph_frame *f;

	if (likely(idx >= 0 && (f = fgraph_fast_top(t, slot, idx)) &&
		   !(t->sel_out | t->npend | t->need_depth) &&
		   /* inside a -G subtree: not the return of the call that opened it */
		   (!t->sel_in || (t->depth != t->sel_in &&
				   t->sel_gen == __atomic_load_n(&tr.sel_gen, __ATOMIC_RELAXED))) &&
		   t->state == FT_THREAD_LIVE && f->calltime >= ft_sess.hdr.start_ticks &&
		   t->open && t->rs[t->open - 1].depth == t->depth - 1 &&
		   ft_clock_source == FT_CLOCK_TSC)) {
		uint64_t ts;
		int ok;

		t->in_ret++;	/* as fgraph_return */
		barrier();
		ts = ftrt_arch_cycles();
		if (unlikely(__atomic_load_n(&ft_argtab, __ATOMIC_RELAXED))) {
			/* as trace_graph_ret: the value and the exit (a new block if need be) */
			args_exit_ev(t, &t->rs[t->open - 1], ts, rr, FTKIT_EV_EXIT);
			ok = 1;
		} else {
			ok = ft_ev_exit_fast(t, FTKIT_EV_EXIT, ts);
		}
		if (likely(ok)) {
			unsigned long ret = fgraph_fast_pop(t);

			t->open--;
			barrier();
			t->in_ret--;
			return ret;
		}
		barrier();
		t->in_ret--;
	}
	/* a call the time filter held back, shorter than it: forgotten (a longer one is
	   written the generic way, with the frames held back around it) */
	if (unlikely(t->npend) && idx >= 0 && (f = fgraph_fast_top(t, slot, idx)) &&
	    !(t->sel_in | t->sel_out) && t->state == FT_THREAD_LIVE &&
	    f->calltime >= ft_sess.hdr.start_ticks && ft_clock_source == FT_CLOCK_TSC &&
	    t->rs[t->open + t->npend - 1].depth == t->depth - 1) {
		uint64_t ts;

		t->in_ret++;
		barrier();
		ts = ftrt_arch_cycles();
		if (ts - f->calltime < __atomic_load_n(&tr.thresh, __ATOMIC_RELAXED)) {
			unsigned long ret = fgraph_fast_pop(t);

			t->npend--;
			barrier();
			t->in_ret--;
			return ret;
		}
		barrier();
		t->in_ret--;
	}
	return fgraph_return(sp, rr);
}

/* ---- ops management (under trace_mu) ---- */

/*
 * The next glob of the comma-separated list at *pp, trimmed, into buf ("" for an empty
 * one); commas inside a C++ name's brackets do not separate.
 */
static int next_glob(const char **pp, char *buf, size_t len)
{
	const char *p = *pp;
	size_t n;

	if (!p)
		return 0;
	n = ftrt_glob_item(p, ",");
	*pp = p[n] ? p + n + 1 : NULL;
	while (n && (*p == ' ' || *p == '\t'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\n'))
		n--;
	if (n >= len)
		n = len - 1;	/* too long for any symbol: fails as it is */
	memcpy(buf, p, n);
	buf[n] = 0;
	return 1;
}

/*
 * Sort a glob list into the globs that are valid and match something ("!glob" always may),
 * copied comma-separated into out, and the others: the first error is returned and, with
 * bad, the glob it is about; with report, each is also named on stderr.  Each glob is tried
 * on a scratch ops, so the one at fault is known; *positive / *kept count the globs without
 * "!" given / kept.
 */
static int sort_globs(const char *globs, int list, char *out, size_t outlen, int report,
		      char *bad, size_t badlen, int *positive, int *kept)
{
	int notrace = list == FT_LIST_NOTRACE;
	char g[1024];
	const char *p = globs ? globs : "";
	size_t used = 0;
	int err = 0;

	*positive = *kept = 0;
	out[0] = 0;
	while (next_glob(&p, g, sizeof(g))) {
		struct ftrace_ops scratch;
		size_t n = strlen(g);
		int r;

		if (!n)
			continue;
		memset(&scratch, 0, sizeof(scratch));
		r = notrace ? ftrace_set_notrace(&scratch, g, (int)n, 1)
			    : ftrace_set_filter(&scratch, g, (int)n, 1);
		ftrace_free_filter(&scratch);
		if (g[0] != '!')
			(*positive)++;
		if (!r && used + !!used + n + 1 > outlen)
			r = -EINVAL;
		if (r) {
			if (report)
				fprintf(stderr, "ftkit: %s '%s': %s%s%s\n", list_names[list], g,
					ft_glob_error(r), r == -ENODEV && !strpbrk(g, "*?[(") ?
					" (no function of that name in the program and the libraries"
					" loaded so far)" : "",
					r == -ENODEV && strstr(g, "::") ? (ftrt_have_demangler() ?
					" (C++ names are demangled by the process's libstdc++, which"
					" cannot read some that ftrace's readers show, such as"
					" templates with decltype: match those by their mangled"
					" symbol, 'nm PROG')" :
					" (C++ names are demangled by libstdc++, which this process"
					" could not load: match them by their mangled symbol,"
					" 'nm PROG')") : "");
			if (!err) {
				err = r;
				if (bad)
					snprintf(bad, badlen, "%s", g);
			}
			continue;
		}
		if (g[0] != '!')
			(*kept)++;
		if (used)
			out[used++] = ',';
		memcpy(out + used, g, n + 1);
		used += n;
	}
	return err;
}

/*
 * Set list `list` (already sorted: one call, all or nothing) on ops: its filter, or its
 * notrace list for FT_LIST_NOTRACE.
 */
static int set_globs(struct ftrace_ops *ops, int list)
{
	const char *globs = tr.globs[list];
	int n = globs ? (int)strlen(globs) : 0;
	int r = list == FT_LIST_NOTRACE ? ftrace_set_notrace(ops, n ? globs : NULL, n, 1)
					: ftrace_set_filter(ops, n ? globs : NULL, n, 1);

	if (r && n)	/* e.g. an object holding every match was dlclose'd since */
		fprintf(stderr, "ftkit: %s '%s': %s\n", list_names[list], globs, ft_glob_error(r));
	return r;
}

/*
 * The graph tracer's entries stop, but the calls it recorded still get their exits when
 * they return (under another tracer too, or none): a switch or `off` leaves no call open
 * in the trace that was not open in the program (trace_stop ends that at the finish).
 */
static int ops_unregister(void)
{
	int err = 0;

	if (tr.registered == FTRACE_TRACER_FUNCTION)
		err = unregister_ftrace_function(&trace_fops);
	else if (tr.registered == FTRACE_TRACER_FUNCTION_GRAPH)
		err = fgraph_unregister_draining(&trace_gops);
	/*
	 * Its sites could not be written (no descriptor left for /proc/self/task): it is
	 * still registered, and the change is refused (memcached at its -c limit: the ops,
	 * taken for unregistered, was registered again into a cycle of the ops list).
	 */
	if (err && (tr.registered == FTRACE_TRACER_FUNCTION ? trace_fops.flags : trace_gops.ops.flags) &
		   FTRACE_OPS_FL_ENABLED)
		return err;
	tr.registered = FTRACE_TRACER_NOP;
	return 0;
}

/* Make the registered ops match tr (tracer, filters, enabled). */
static int ops_apply(void)
{
	struct ftrace_ops *ops = tr.tracer == FTRACE_TRACER_FUNCTION ? &trace_fops : &trace_gops.ops;
	int err, e2;

	if ((err = ops_unregister()))
		return err;
	if (!tr.enabled || tr.tracer == FTRACE_TRACER_NOP || tr.none[FT_LIST_FILTER] ||
	    (tr.tracer == FTRACE_TRACER_FUNCTION_GRAPH && tr.none[FT_LIST_GRAPH_FUNCTION]))
		return 0;
	/* only the ops about to be registered: a switch of tracer comes back here */
	err = set_globs(ops, FT_LIST_FILTER);
	e2 = set_globs(ops, FT_LIST_NOTRACE);
	err = err ? err : e2;
	if (tr.tracer == FTRACE_TRACER_FUNCTION) {
		e2 = register_ftrace_function(&trace_fops);
	} else {
		/* no graph callback runs now: the subtree lists can change */
		tr.sel_in = tr.sel_out = 0;
		e2 = set_globs(&sel_in_ops, FT_LIST_GRAPH_FUNCTION);
		err = err ? err : e2;
		e2 = set_globs(&sel_out_ops, FT_LIST_GRAPH_NOTRACE);
		err = err ? err : e2;
		tr.sel_in = tr.globs[FT_LIST_GRAPH_FUNCTION] != NULL;
		tr.sel_out = tr.globs[FT_LIST_GRAPH_NOTRACE] != NULL;
		__atomic_store_n(&tr.sel_gen, tr.sel_gen + 1, __ATOMIC_RELAXED);
		/* the fused entry reads its frame as the function tracer's does (lean) */
		trace_gops.ops.flags = (trace_gops.ops.flags & ~FTRT_OPS_FL_LEAN_FRAME) |
				       (graph_fused() ? FTRT_OPS_FL_LEAN_FRAME : 0);
		e2 = graph_fused() ? fgraph_register_fused(&trace_gops, trace_graph_entry_fast,
							   trace_graph_return_fast)
				   : register_ftrace_graph(&trace_gops);
	}
	if (e2) {
		fprintf(stderr, "ftkit: cannot register the %s tracer: %s\n",
			tr.tracer == FTRACE_TRACER_FUNCTION ? "function" : "function_graph",
			strerror(-e2));
		return e2;
	}
	tr.registered = tr.tracer;
	return err;
}

/*
 * A list changed (under trace_mu).  The registered tracer's ops stays registered: its
 * lists change in place (the core repatches live), so no event is missed meanwhile and
 * graph frames open now still get their exits.  Otherwise the next registration applies it.
 */
static int lists_apply(int list)
{
	struct ftrace_ops *ops = tr.tracer == FTRACE_TRACER_FUNCTION ? &trace_fops : &trace_gops.ops;
	int graph = list == FT_LIST_GRAPH_FUNCTION || list == FT_LIST_GRAPH_NOTRACE;
	int *on, err;

	if (graph && tr.tracer != FTRACE_TRACER_FUNCTION_GRAPH)
		return 0;
	if (tr.registered == FTRACE_TRACER_NOP || tr.registered != (int)tr.tracer)
		return ops_apply();
	if (!graph)
		return set_globs(ops, list);
	/* the callbacks read these lists: set before the flag goes up, cleared after it is down */
	on = list == FT_LIST_GRAPH_FUNCTION ? &tr.sel_in : &tr.sel_out;
	ops = list == FT_LIST_GRAPH_FUNCTION ? &sel_in_ops : &sel_out_ops;
	if (!tr.globs[list])
		__atomic_store_n(on, 0, __ATOMIC_RELEASE);
	err = set_globs(ops, list);
	if (err && tr.globs[list])
		return err;
	if (tr.globs[list])
		__atomic_store_n(on, 1, __ATOMIC_RELEASE);
	return 0;
}

/* ---- fatal signals ---- */

/* (SIGTRAP is the core's, which calls trap_fatal; SIGSYS: a seccomp filter's trap) */
static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS };
/*
 * Signals whose default action ends the process without a fault: handled only
 * while their disposition is still the default (a program's own handler, or
 * SIG_IGN inherited from a shell, is left alone), so that a test suite's
 * `prog | head`, `kill`, ^C or a closed terminal leave a complete file.
 */
static const int term_sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM,
				  SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM };
static struct sigaction old_act[65];

static int raise_real(int sig);
static void fatal_handler(int sig, siginfo_t *si, void *uc);

/* Is sa the runtime's fatal_handler (whichever member names it)? */
static int is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO ? (void *)sa->sa_sigaction : (void *)sa->sa_handler) ==
	       (void *)fatal_handler;
}

/* Is sa the default action? */
static int is_default(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

/* Is this process tracing into its own file (not a vfork child, not finished)? */
static int tracing_here(void)
{
	return tr.started && ft_sess.state == FT_SESS_LIVE && (pid_t)ft_sess.hdr.pid == getpid();
}

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = &old_act[sig];
	struct sigaction cur;

	/*
	 * Not the disposition any more: a handler the program installed later got this one
	 * back from signal()/sigaction() and chains to it. Untraced, it would have got SIG_DFL
	 * and called nothing, so do nothing (finalising and re-raising killed a program that
	 * untraced goes on).
	 */
	if (ftrt_sigaction_raw(sig, NULL, &cur) == 0 && !is_ours(&cur))
		return;

	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		/* the program handles it: not (necessarily) fatal */
		if (old->sa_flags & SA_SIGINFO)
			old->sa_sigaction(sig, si, uc);
		else
			old->sa_handler(sig);
		return;
	}
	ft_session_finish(FTKIT_R_SIGNAL, sig, 1);
	ft_control_unlink();
	ftrt_sigaction_raw(sig, old, NULL);
	raise_real(sig);	/* pending until we return; then the default action */
}

static int ends_by_default(int sig)
{
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		if (fatal_sigs[i] == sig)
			return 1;
	for (size_t i = 0; i < sizeof(term_sigs) / sizeof(term_sigs[0]); i++)
		if (term_sigs[i] == sig)
			return 1;
	return 0;
}

static int (*real_raise)(int);
static int (*real_kill)(pid_t, int);
static int (*real_sigqueue)(pid_t, int, const union sigval);
static int (*real_pthread_kill)(pthread_t, int);
static __sighandler_t (*real_signal)(int, __sighandler_t);

__attribute__((constructor)) static void send_resolve(void)
{
	/* not in a signal handler */
	real_raise = (int (*)(int))ft_next_sym("raise");
	real_kill = (int (*)(pid_t, int))ft_next_sym("kill");
	real_sigqueue = (int (*)(pid_t, int, const union sigval))ft_next_sym("sigqueue");
	real_pthread_kill = (int (*)(pthread_t, int))ft_next_sym("pthread_kill");
	real_signal = (__sighandler_t (*)(int, __sighandler_t))ft_next_sym("signal");
}

static int raise_real(int sig)
{
	if (real_raise)
		return real_raise(sig);
	return (int)syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig) ? -1 : 0;
}

static void fatal_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = fatal_handler;
	sa->sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa->sa_mask);
}

/*
 * This process sends itself a signal whose action is the default one, which ends it: mostly
 * a program's own handler passing the signal on after its clean-up (`signal(sig, SIG_DFL);
 * raise(sig)` as GNU patch does, or `kill(getpid(), sig)`).  That handler replaced the
 * runtime's, so the trace would stay a .part.  The runtime's handler is put back as the
 * action, with the default one as the action it passes on to: the trace is finalised when
 * the signal is delivered — at once, or when a handler that blocks it returns — and not
 * at all if the signal is blocked and taken by sigwait (finalising at the send stopped
 * the trace of a program that went on).  Between reading the action and setting it,
 * another thread's new action would be lost: a program setting one while it signals
 * itself to die.
 */
static void arm_self(int sig)
{
	struct sigaction cur, sa;

	if (!tracing_here() || sig <= 0 || sig >= 65 || !ends_by_default(sig) ||
	    ftrt_sigaction_raw(sig, NULL, &cur) != 0 || !is_default(&cur))
		return;
	old_act[sig] = cur;
	fatal_action(&sa);
	ftrt_sigaction_raw(sig, &sa, NULL);
}

/* Whether kill()'s pid names this process (itself, or a process group it is in). */
static int names_self(pid_t pid)
{
	return pid == 0 || pid == getpid() || (pid < -1 && -pid == getpgrp());
}

int raise(int sig)
{
	arm_self(sig);
	return raise_real(sig);
}

int kill(pid_t pid, int sig)
{
	if (names_self(pid))
		arm_self(sig);
	if (real_kill)
		return real_kill(pid, sig);
	return (int)syscall(SYS_kill, pid, sig);
}

int sigqueue(pid_t pid, int sig, const union sigval value)
{
	if (pid == getpid())
		arm_self(sig);
	if (real_sigqueue)
		return real_sigqueue(pid, sig, value);
	errno = ENOSYS;
	return -1;
}

int pthread_kill(pthread_t thread, int sig)
{
	arm_self(sig);	/* every thread it can name is this process's */
	if (real_pthread_kill)
		return real_pthread_kill(thread, sig);
	return ENOSYS;
}

/*
 * A SIGTRAP of the program's own (an int3, __builtin_debugtrap, googletest's
 * --gtest_break_on_failure) that takes the default action: the core's trap handler, which
 * sees every SIGTRAP, calls this first.  (The trace stayed a .part, and a short run's
 * events were all still in memory.)
 */
static void trap_fatal(int sig)
{
	if ((pid_t)ft_sess.hdr.pid != getpid())
		return;	/* a vfork child: the trace is its parent's */
	ft_session_finish(FTKIT_R_SIGNAL, sig, 1);
	ft_control_unlink();
}

/*
 * The program's sigaction() calls (the core's interposer passes them here first).  A
 * program that sets the default action of a signal that ends the process (dash resets
 * SIGINT, SIGQUIT and SIGTERM at start-up; gnulib's tests SIGPIPE) replaced the runtime's
 * handler, and when another process sent it the trace stayed a .part, without its last
 * ~100 ms (a job killed by its shell: all of it).  While this process traces, the default
 * action is kept as the one the runtime's handler passes on to, and the program is told
 * what it set, not the runtime's handler.  A handler or SIG_IGN of its own replaces the
 * runtime's as before.
 */
static int program_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *ret)
{
	struct sigaction cur, sa;
	int dfl = act && is_default(act);
	int ours;

	if (sig <= 0 || sig >= 65 || !ends_by_default(sig) || ftrt_sigaction_raw(sig, NULL, &cur))
		return 1;
	ours = is_ours(&cur);
	if (dfl && !tracing_here())
		dfl = 0;	/* not tracing here: the default as asked */
	if (!ours && !dfl)
		return 1;
	if (act && !dfl) {	/* the program's own handler or SIG_IGN */
		*ret = ftrt_sigaction_raw(sig, act, NULL);
		if (!*ret && old)
			*old = old_act[sig];
		return 0;
	}
	if (old)
		*old = ours ? old_act[sig] : cur;
	*ret = 0;
	if (!act)
		return 0;
	old_act[sig] = *act;
	if (!ours) {
		fatal_action(&sa);
		*ret = ftrt_sigaction_raw(sig, &sa, NULL);
	}
	return 0;
}

/*
 * signal(), as glibc's (BSD semantics) through sigaction() and so program_sigaction, when
 * that has a part: a signal that ends the process set to its default while tracing, or
 * whose action is the runtime's.  Else the C library's.
 */
__sighandler_t signal(int sig, __sighandler_t handler)
{
	struct sigaction sa, old;

	if (real_signal && (sig <= 0 || sig >= 65 || !ends_by_default(sig) ||
			    ftrt_sigaction_raw(sig, NULL, &old) ||
			    !(is_ours(&old) || (handler == SIG_DFL && tracing_here()))))
		return real_signal(sig, handler);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	if (sig > 0 && sig < 65)
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

static void install_fatal_handlers(void)
{
	struct sigaction sa;

	fatal_action(&sa);
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		ftrt_sigaction_raw(fatal_sigs[i], &sa, &old_act[fatal_sigs[i]]);
	for (size_t i = 0; i < sizeof(term_sigs) / sizeof(term_sigs[0]); i++) {
		struct sigaction cur;
		int sig = term_sigs[i];

		if (ftrt_sigaction_raw(sig, NULL, &cur) == 0 && is_default(&cur))
			ftrt_sigaction_raw(sig, &sa, &old_act[sig]);
	}
	ftrt_trap_on_fatal(trap_fatal);
	ftrt_sigaction_hook(program_sigaction);
}

/* ---- exit, fork ---- */

/*
 * _exit()/_Exit() skip atexit handlers: interposed (the executable's
 * definition wins for calls through the PLT), they finalise the trace with
 * async-signal-safe calls and end the process as the real ones do. Not in a
 * vfork() child (it shares our memory and file: it would finish the parent's
 * trace), nor for libc-internal calls (posix_spawn's child).
 */
static __attribute__((noreturn)) void exit_now(int status)
{
	if ((pid_t)ft_sess.hdr.pid == getpid()) {
		if (ft_sess.state == FT_SESS_LIVE) {
			ft_session_finish(FTKIT_R_EXIT, 0, 1);
			ft_control_unlink();
		} else {
			ft_session_wait_finished();	/* a signal's handler is writing it */
		}
	}
	for (;;)
		syscall(SYS_exit_group, status);
}

void _exit(int status)
{
	exit_now(status);
}

void _Exit(int status)
{
	exit_now(status);
}

/*
 * daemon() ends the parent through libc's internal _exit, which the interposed one does not
 * see: the parent's trace stayed .part without its staged records.  While this process
 * traces, daemon() is done here step by step as glibc's misc/daemon.c does it (same
 * results, same errno; open/close without cancellation points as there), the parent leaving
 * through exit_now; the child traces into its own file as after any fork.  Otherwise the
 * real one runs.
 */
typedef int (*daemon_t)(int, int);

int daemon(int nochdir, int noclose)
{
	static daemon_t real;
	struct stat st;
	int fd;

	if (ft_sess.state != FT_SESS_LIVE || (pid_t)ft_sess.hdr.pid != getpid()) {
		if (!real)
			real = (daemon_t)ft_next_sym("daemon");
		return real(nochdir, noclose);
	}
	switch (fork()) {
	case -1:
		return -1;
	case 0:
		break;
	default:
		exit_now(0);
	}
	if (setsid() == -1)
		return -1;
	if (!nochdir)
		(void)chdir("/");
	if (!noclose) {
		fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR, 0);
		if (fd != -1 && fstat(fd, &st) == 0) {
			if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
				syscall(SYS_close, fd);
				errno = ENODEV;
				return -1;
			}
			(void)dup2(fd, STDIN_FILENO);
			(void)dup2(fd, STDOUT_FILENO);
			(void)dup2(fd, STDERR_FILENO);
			if (fd > 2)
				(void)close(fd);
		} else {
			int saved_errno = errno;

			syscall(SYS_close, fd);
			errno = saved_errno;
			return -1;
		}
	}
	return 0;
}

/*
 * exec replaces the image: the trace is finalised first (reason exec), like at exit; the
 * new image, if it is traced, starts its own.  If the exec fails the process goes on
 * untraced.  Not in a vfork() child (it shares our memory and file), and not for
 * libc-internal execs (posix_spawn, system, popen: children that share nothing we record).
 * Every public exec function is interposed: glibc's execvp and friends do not call
 * execve through the PLT.
 */
static void exec_finalise(void)
{
	int saved_errno = errno;

	if (ft_sess.state == FT_SESS_LIVE && (pid_t)ft_sess.hdr.pid == getpid()) {
		ft_session_finish(FTKIT_R_EXEC, 0, 0);
		ft_control_unlink();
	}
	errno = saved_errno;
}

/*
 * Children started with an environment of the program's own making (execve, execle,
 * execvpe, fexecve, posix_spawn[p]) are traced as those started with its environment are:
 * the runtime's FTRACE_* variables of start-up are added to an envp that sets no
 * FTRACE_TRACER nor FTRACE_CONTROL itself (uftrace does the same). FTRACE_INHERIT=0 turns
 * it off; never in secure-execution mode (nothing was read then). The copies are made at
 * start-up: the program may change its environment since.
 */
#define NR_INHERIT 16
static char inherit_buf[4096];
static char *inherit[NR_INHERIT + 1];
static int nr_inherit;

/* FTRACE_INHERIT=0, or secure-execution mode: the environment of children is left alone */
static int inherit_off(void)
{
	const char *off = secure_getenv("FTRACE_INHERIT");

	return (off && !strcmp(off, "0")) || getauxval(AT_SECURE);
}

/*
 * The first traced process of a run started from the environment (FTRACE_TRACER set by
 * the user, not by ftrace record) starts the run: FTRACE_SESSION, its start, goes into
 * its environment as ftrace record puts it there, so that the traced processes it starts
 * through a wrapper that is not traced (ninja's sh -c, a shell script) keep each its
 * trace instead of replacing each other's at one output name (trace_buf.c,
 * move_aside_descendant).  Not with FTRACE_INHERIT=0 (the program's environment is left
 * alone), nor in secure-execution mode.
 */
static void session_init(const char *tracer)
{
	struct timespec now;
	char v[24];

	if (!tracer || !*tracer || inherit_off() || secure_getenv("FTRACE_SESSION") ||
	    clock_gettime(CLOCK_REALTIME, &now))
		return;
	ft_utoa(v, (unsigned long)now.tv_sec * 1000000000UL + (unsigned long)now.tv_nsec);
	setenv("FTRACE_SESSION", v, 0);
}

static void inherit_init(void)
{
	extern char **environ;
	size_t used = 0;

	if (!environ || inherit_off())
		return;
	for (char **e = environ; *e && nr_inherit < NR_INHERIT; e++) {
		size_t n = strlen(*e) + 1;

		if (strncmp(*e, "FTRACE_", 7) || used + n > sizeof(inherit_buf))
			continue;
		memcpy(inherit_buf + used, *e, n);
		inherit[nr_inherit++] = inherit_buf + used;
		used += n;
	}
}

/* whether envp sets the variable of entry v ("NAME=…") */
static int env_has(char *const envp[], const char *v)
{
	size_t n = strcspn(v, "=") + 1;

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, v, n))
			return 1;
	return 0;
}

/* envp with the inherited variables added into out (room for n + NR_INHERIT + 1), or envp */
static char *const *env_inherit(char *const envp[], char **out, size_t n)
{
	size_t k = 0;

	if (!nr_inherit || env_has(envp, "FTRACE_TRACER=") || env_has(envp, "FTRACE_CONTROL="))
		return envp;
	for (size_t i = 0; i < n; i++)
		out[k++] = envp[i];
	for (int i = 0; i < nr_inherit; i++)
		if (!env_has(envp, inherit[i]))
			out[k++] = inherit[i];
	out[k] = NULL;
	return out;
}

static size_t env_len(char *const envp[])
{
	size_t n = 0;

	while (envp && envp[n])
		n++;
	return n;
}

/* declares NAME, envp with the inherited variables added, on the stack (no malloc: vfork) */
#define ENV_INHERIT(name, envp)								\
	size_t name##_n = env_len(envp);						\
	char *name##_buf[name##_n + NR_INHERIT + 1];					\
	char *const *name = env_inherit(envp, name##_buf, name##_n)

/*
 * exec naming.  A traced image that execs adds FTRACE_EXEC=<pid>:<gen>:<base output name>
 * to the new image's environment (when that sets FTRACE_TRACER or FTRACE_CONTROL, i.e. the
 * new image may trace).  A new image of the same pid whose output name would be that base
 * writes <output>.exec<gen> instead of replacing the trace just finalised under <output>;
 * one whose base is a fork child's name of its output (<output>.<pid>: a shell's child
 * running a command) takes that name, and not the parent's: <output>.<pid>.exec<gen>, or
 * <output>.<pid> from a vfork child (which traced nothing of its own).
 * The new image removes the variable from its environment before main.  It sets
 * ft_exec_gen and ft_exec_prev, which the session (trace_buf.c) reads.
 */
#define EXEC_VAR "FTRACE_EXEC="

/* envp with FTRACE_EXEC set into out (room for n + 2) and var (PATH_MAX + 64), or envp */
static char *const *exec_mark(char *const envp[], char **out, size_t n, char *var)
{
	pid_t self = getpid();
	/* not this process's session: a vfork child's (its parent's), or a fork child's that
	   opened none (the parent's trace was final) */
	int vforked = (pid_t)ft_sess.hdr.pid != self;
	size_t k = 0;
	char *p;

	/* also once the trace is final (FTRACE_SIZE, finish): the new image must not take
	   its name */
	if (ft_sess.state == FT_SESS_OFF ||
	    (!env_has(envp, "FTRACE_TRACER=") && !env_has(envp, "FTRACE_CONTROL=")))
		return envp;
	p = var + ft_strlcpy(var, EXEC_VAR, 16);
	p = ft_utoa(p, (unsigned long)self);
	*p++ = ':';
	p = ft_utoa(p, vforked ? 1UL : ft_exec_gen + 1UL);
	*p++ = ':';
	p += ft_strlcpy(p, ft_sess.base, PATH_MAX);
	if (vforked) {		/* the name a fork child would have had */
		*p++ = '.';
		ft_utoa(p, (unsigned long)self);
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], EXEC_VAR, sizeof(EXEC_VAR) - 1))
			out[k++] = envp[i];
	out[k++] = var;
	out[k] = NULL;
	return out;
}

/* declares NAME, envp marked for the new image, on the stack (no malloc: vfork) */
#define EXEC_MARK(name, envp)								\
	size_t name##_n = env_len(envp);						\
	char *name##_buf[name##_n + 2];							\
	char name##_var[PATH_MAX + 64];							\
	char *const *name = exec_mark(envp, name##_buf, name##_n, name##_var)

/* The image before the exec was traced with this pid: take its generation and name. */
static void exec_take(void)
{
	const char *v = getenv("FTRACE_EXEC");	/* removed even in secure mode, obeyed only outside it */
	unsigned long pid, gen;
	char *end;

	if (!v)
		return;
	pid = strtoul(v, &end, 10);
	if (*end == ':') {
		gen = strtoul(end + 1, &end, 10);
		if (*end == ':' && pid == (unsigned long)getpid() && gen && gen < UINT_MAX &&
		    !getauxval(AT_SECURE)) {
			ft_exec_gen = (unsigned)gen;
			ft_strlcpy(ft_exec_prev, end + 1, sizeof(ft_exec_prev));
		}
	}
	unsetenv("FTRACE_EXEC");	/* the program sees the environment it was given */
}

typedef int (*posix_spawn_t)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			     const posix_spawnattr_t *, char *const[], char *const[]);

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static posix_spawn_t real;
	ENV_INHERIT(env, envp);

	if (!real)
		real = (posix_spawn_t)ft_next_sym("posix_spawn");
	return real(pid, path, fa, attr, argv, env);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static posix_spawn_t real;
	ENV_INHERIT(env, envp);

	if (!real)
		real = (posix_spawn_t)ft_next_sym("posix_spawnp");
	return real(pid, file, fa, attr, argv, env);
}

typedef int (*execve_t)(const char *, char *const[], char *const[]);
typedef int (*fexecve_t)(int, char *const[], char *const[]);

int execve(const char *path, char *const argv[], char *const envp[])
{
	static execve_t real;
	ENV_INHERIT(env, envp);
	EXEC_MARK(menv, env);

	if (!real)
		real = (execve_t)ft_next_sym("execve");
	exec_finalise();
	return real(path, argv, menv);
}

/*
 * execv and execvp are execve and execvpe with environ (as in glibc): so they carry the
 * mark, and the inherited variables when the program replaced environ (libuv's uv_spawn
 * with an environment of its own sets environ and calls execvp: its children ran untraced)
 */
int execv(const char *path, char *const argv[])
{
	static execve_t real;
	ENV_INHERIT(env, environ);
	EXEC_MARK(menv, env);

	if (!real)
		real = (execve_t)ft_next_sym("execve");
	exec_finalise();
	return real(path, argv, menv);
}

int execvp(const char *file, char *const argv[])
{
	static execve_t real;
	ENV_INHERIT(env, environ);
	EXEC_MARK(menv, env);

	if (!real)
		real = (execve_t)ft_next_sym("execvpe");
	exec_finalise();
	return real(file, argv, menv);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static execve_t real;
	ENV_INHERIT(env, envp);
	EXEC_MARK(menv, env);

	if (!real)
		real = (execve_t)ft_next_sym("execvpe");
	exec_finalise();
	return real(file, argv, menv);
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	static fexecve_t real;
	ENV_INHERIT(env, envp);
	EXEC_MARK(menv, env);

	if (!real)
		real = (fexecve_t)ft_next_sym("fexecve");
	exec_finalise();
	return real(fd, argv, menv);
}

/* The list forms collect their arguments (up to the NULL) into an argv. */
#define EXEC_LIST(arg, ap, argv, envp_out)						\
	size_t n_ = 1;									\
	va_start(ap, arg);								\
	while (va_arg(ap, const char *))						\
		n_++;									\
	va_end(ap);									\
	const char *argv[n_ + 1];							\
	argv[0] = arg;									\
	va_start(ap, arg);								\
	for (size_t i_ = 1; i_ <= n_; i_++)						\
		argv[i_] = va_arg(ap, const char *);					\
	envp_out;									\
	va_end(ap)

int execl(const char *path, const char *arg, ...)
{
	va_list ap;

	EXEC_LIST(arg, ap, argv, (void)0);
	return execv(path, (char *const *)argv);
}

int execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	EXEC_LIST(arg, ap, argv, (void)0);
	return execvp(file, (char *const *)argv);
}

int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char *const *envp;

	EXEC_LIST(arg, ap, argv, envp = va_arg(ap, char *const *));
	return execve(path, (char *const *)argv, envp);
}

/*
 * The program's signal mask across fork(): its asynchronous signals are held from the
 * prepare handler to the parent's and child's, so that a handler (a shell's SIGCHLD) runs after the fork
 * window, where it is recorded, not inside it, where its events were lost; the core's
 * round signal is not held (another thread's patching waits for its answer).
 */
static __thread sigset_t fork_mask FTRT_TLS;

static void atfork_prepare(void)
{
	struct ft_thread *t = &ft_cur;
	sigset_t all;
	int round = ftrt_sync_signal();

	sigfillset(&all);
	if (round > 0)
		sigdelset(&all, round);
	/* a fault in the window must reach its handler (a blocked one kills the process) */
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_SETMASK, &all, &fork_mask);
	/* nothing may be recorded between fork() and the child handler */
	t->saved_state = t->state;
	t->state = FT_THREAD_NOBUF;
}

static void atfork_parent(void)
{
	ft_cur.state = ft_cur.saved_state;
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

static void atfork_child(void)
{
	ft_cur.state = ft_cur.saved_state;
	ft_mem_read_self();
	ft_control_forked();
	ft_session_forked(tr.tracer == FTRACE_TRACER_NOP);
	pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

/* trace_limit's error, said at exit: the writer's descriptor table has no stderr */
static int limit_err;

/*
 * Normal exit: finalise after everything the program runs at exit that can be traced —
 * atexit handlers and C++ static destructors (exit() runs those first) and the
 * executable's own ELF destructors (priority 101 comes last among them).  Shared
 * libraries' destructors run after this one.
 */
__attribute__((destructor(101))) static void trace_fini(void)
{
	int err = __atomic_exchange_n(&limit_err, 0, __ATOMIC_ACQ_REL);

	if (err)
		ft_msg_err("cannot finalise trace file at its size or time limit: ", ft_sess.part, err);
	if (!tr.started)
		return;
	ft_control_stop();	/* no live command while the trace is finished */
	ft_session_finish(FTKIT_R_EXIT, 0, 0);
	ft_session_reap();
	ft_control_unlink();
	ft_control_sweep();
}

/* ---- API ---- */

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/*
 * The start-up lists (FTRACE_FILTER / FTRACE_NOTRACE, or ftrace_trace_start's caller): a
 * glob that is invalid or matches nothing is named on stderr and left out, the others
 * apply.  A filter that names functions none of which exists traces nothing (an empty
 * filter would trace everything: not what was asked for).
 */
static int start_globs(const struct ftrace_trace_config *cfg)
{
	int err = 0;

	const char *lists[FT_NLISTS] = { cfg->filter, cfg->notrace, cfg->graph_function,
					 cfg->graph_notrace };

	for (int list = 0; list < FT_NLISTS; list++) {
		const char *g = lists[list];
		size_t len = g ? strlen(g) + 1 : 1;
		char *kept = malloc(len);
		int positive, nkept, r;

		if (!kept)
			return -ENOMEM;
		r = sort_globs(g, list, kept, len, 1, NULL, 0, &positive, &nkept);
		err = err ? err : r;
		tr.globs[list] = dup_or_null(kept);
		tr.asked[list] = dup_or_null(g);
		tr.none[list] = positive && !nkept;
		free(kept);
	}
	if (tr.none[FT_LIST_FILTER])
		fprintf(stderr, "ftkit: no function matches the filter '%s': nothing is traced "
			"until a library loaded later has one\n", cfg->filter);
	if (tr.none[FT_LIST_GRAPH_FUNCTION])
		fprintf(stderr, "ftkit: no function matches graph_function '%s': nothing is graphed "
			"until a library loaded later has one\n", cfg->graph_function);
	return err;
}

/*
 * The calling thread's buffer for a record that is not a call (a marker, a trigger's
 * stack trace), or NULL when the thread does not record now (not started, disabled,
 * paused, left out by the thread filter).  The time filter's waiting entries are written
 * first: the record is made inside those calls, and so they are kept.
 */
struct ft_thread *ft_trace_ext_thread(void)
{
	struct ft_thread *t;

	if (!__atomic_load_n(&tr.started, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&tr.enabled, __ATOMIC_RELAXED) || thr_left_out())
		return NULL;
	t = thread_buf();
	if (t && unlikely(t->npend))
		pend_flush(t);
	return t;
}

int ftrace_trace_marker_write(const char *text, size_t len)
{
	uint64_t ts = ft_clock_read();
	struct ft_thread *t = ft_trace_ext_thread();

	return t ? ft_ev_marker(t, ts, text, len) : -ENODEV;
}

int ftrace_trace_marker(const char *fmt, ...)
{
	char buf[FT_MARKER_MAX + 1];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len < 0)
		return -EINVAL;
	return ftrace_trace_marker_write(buf, len > FT_MARKER_MAX ? FT_MARKER_MAX : (size_t)len);
}

/* The threshold in clock ticks (a threshold of 0 ns is none; a nonzero one at least 1 tick). */
static void thresh_apply(void)
{
	__atomic_store_n(&tr.thresh, ft_clock_ns_to_ticks(&ft_sess.clk, tr.thresh_ns), __ATOMIC_RELAXED);
}

static void trace_limit(int reason);

int ftrace_trace_start(const struct ftrace_trace_config *cfg)
{
	static int once;
	size_t kb = cfg->buffer_kb ? cfg->buffer_kb : 16384;
	int err, e2;

	if (kb < FT_BUFFER_KB_MIN || kb > FT_BUFFER_KB_MAX)
		return -EINVAL;
	pthread_mutex_lock(&trace_mu);
	if (tr.started) {
		pthread_mutex_unlock(&trace_mu);
		return -EBUSY;
	}
	ft_session_set_stop(trace_limit);
	ft_mem_read_self();
	err = ft_session_open(cfg->output, kb, (uint32_t)cfg->tracer, cfg->graph_depth,
			      secure_getenv("FTRACE_CLOCK") && !strcmp(secure_getenv("FTRACE_CLOCK"), "mono"), 0);
	if (err) {
		pthread_mutex_unlock(&trace_mu);
		return err;
	}
	if (!once) {
		once = 1;
		install_fatal_handlers();
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	}
	tr.started = 1;
	tr.tracer = cfg->tracer;
	tr.depth = cfg->graph_depth;
	thresh_apply();
	err = start_globs(cfg);
	tr.enabled = 1;		/* the on/off switch; with no tracer (nop) nothing records */
	e2 = ops_apply();
	err = err ? err : e2;
	pthread_mutex_unlock(&trace_mu);
	if (e2 && tr.tracer != FTRACE_TRACER_NOP) {
		/* nothing can be recorded: the (empty) trace is finished now, its descriptor
		   given back to the program, which runs on untraced */
		ftrace_trace_finish();
		ft_session_release();
		return err;
	}
	if (cfg->control)
		ft_control_start();
	return err;
}

int ftrace_trace_set_tracer(enum ftrace_tracer tracer)
{
	enum ftrace_tracer old;
	int err, registered;

	if (tracer > FTRACE_TRACER_FUNCTION_GRAPH)
		return -EINVAL;
	pthread_mutex_lock(&trace_mu);
	/* a fork child of a process without a tracer: its trace file first */
	err = tr.started && tracer != FTRACE_TRACER_NOP ? ft_session_fork_open((uint32_t)tracer) : 0;
	if (err) {
		pthread_mutex_unlock(&trace_mu);
		return err;
	}
	old = tr.tracer;
	registered = tr.registered;
	if (tr.started && tracer == old && registered == (int)tracer) {
		/* the running one (the kernel's current_tracer written again): kept as it
		   is, its open graph frames too; it needs no descriptor to re-register */
		pthread_mutex_unlock(&trace_mu);
		return 0;
	}
	tr.tracer = tracer;	/* the on/off switch (ftrace_trace_enable) stays as it is */
	err = tr.started ? ops_apply() : -ENODEV;
	if (err && tr.registered == registered && registered != FTRACE_TRACER_NOP && tracer != old)
		tr.tracer = old;	/* the old one could not be unregistered: it runs on */
	if (!err)
		ft_session_set_tracer((uint32_t)tracer);
	pthread_mutex_unlock(&trace_mu);
	return err;
}

/*
 * A live change of the filter or notrace list: all or nothing.  A glob that is invalid or
 * matches nothing refuses the whole list (its error returned, the glob in bad) and leaves
 * the tracer as it was.
 */
int ft_trace_set_globs(int list, const char *globs, char *bad, size_t badlen)
{
	size_t len = globs ? strlen(globs) + 1 : 1;
	char *kept = malloc(len);
	int err, positive, nkept;

	if (!kept)
		return -ENOMEM;
	pthread_mutex_lock(&trace_mu);
	if (!tr.started) {
		err = -ENODEV;
		goto out;
	}
	if (list < 0 || list >= FT_NLISTS) {
		err = -EINVAL;
		goto out;
	}
	err = sort_globs(globs, list, kept, len, 0, bad, badlen, &positive, &nkept);
	if (err)
		goto out;
	free(tr.globs[list]);
	tr.globs[list] = dup_or_null(kept);
	free(tr.asked[list]);
	tr.asked[list] = dup_or_null(kept);
	tr.none[list] = 0;
	err = lists_apply(list);
out:
	pthread_mutex_unlock(&trace_mu);
	free(kept);
	return err;
}

/*
 * Objects with call sites were loaded (dlopen; the core's weak hook, called outside its
 * lock): each list is applied again as it was asked, so names of the new library match —
 * a glob that matched nothing at start-up (said then) now does, a glob such as 'ext_*'
 * takes the new library's functions too.  The kernel's filters hold addresses (it has
 * ':mod:' for modules loaded later); uftrace applies its patterns to each library it loads,
 * which is what a user of -F expects of a dlopen'ed library.  Calls made while the library
 * was being loaded (its constructors) come before this.
 */
/* Globs in a comma-separated list (NULL: none). */
static int nglobs(const char *list)
{
	int n = list && *list;

	for (; list && *list; list++)
		n += *list == ',';
	return n;
}

void ftrt_objects_added(void)
{
	int reapply = 0;

	pthread_mutex_lock(&trace_mu);
	if (!tr.started)
		goto out;
	for (int list = 0; list < FT_NLISTS; list++) {
		size_t len;
		char *kept;
		int positive, nkept, none;

		if (!tr.asked[list])
			continue;
		len = strlen(tr.asked[list]) + 1;
		if (!(kept = malloc(len)))
			break;
		sort_globs(tr.asked[list], list, kept, len, 0, NULL, 0, &positive, &nkept);
		none = positive && !nkept;
		if (!tr.globs[list] || strcmp(kept, tr.globs[list])) {
			if (nglobs(kept) > nglobs(tr.globs[list]))	/* one that waited matches */
				fprintf(stderr, "ftkit: %s '%s': matches functions of a library loaded now\n",
					list_names[list], kept);
			free(tr.globs[list]);
			tr.globs[list] = dup_or_null(kept);
		}
		tr.none[list] = none;
		free(kept);
		if (tr.globs[list])
			reapply |= 1 << list;
	}
	for (int list = 0; list < FT_NLISTS; list++)
		if (reapply & (1 << list))
			lists_apply(list);
out:
	pthread_mutex_unlock(&trace_mu);
	ft_args_objects_added();
	ft_triggers_added();
}

int ftrace_trace_set_filter(const char *globs)
{
	return ft_trace_set_globs(FT_LIST_FILTER, globs, NULL, 0);
}

int ftrace_trace_set_notrace(const char *globs)
{
	return ft_trace_set_globs(FT_LIST_NOTRACE, globs, NULL, 0);
}

int ftrace_trace_set_graph_function(const char *globs)
{
	return ft_trace_set_globs(FT_LIST_GRAPH_FUNCTION, globs, NULL, 0);
}

int ftrace_trace_set_graph_notrace(const char *globs)
{
	return ft_trace_set_globs(FT_LIST_GRAPH_NOTRACE, globs, NULL, 0);
}

int ftrace_trace_set_time_filter(uint64_t ns)
{
	pthread_mutex_lock(&trace_mu);
	tr.thresh_ns = ns;
	if (tr.started)
		thresh_apply();
	pthread_mutex_unlock(&trace_mu);
	return 0;
}

int ftrace_trace_set_ring(size_t bytes)
{
	return ft_session_set_ring(bytes);
}

int ftrace_trace_set_depth(unsigned int depth)
{
	__atomic_store_n(&tr.depth, depth, __ATOMIC_RELAXED);
	return 0;
}

int ftrace_trace_enable(int on)
{
	int err;

	pthread_mutex_lock(&trace_mu);
	tr.enabled = !!on;
	err = tr.started ? ops_apply() : -ENODEV;
	pthread_mutex_unlock(&trace_mu);
	return err;
}

int ftrace_trace_snapshot(const char *path, char *out, size_t outlen)
{
	return ft_session_snapshot(path, out, outlen);
}

/* Tracing off and the trace finalised for reason; the program runs on untraced. */
static int trace_stop(int reason)
{
	int err;

	pthread_mutex_lock(&trace_mu);
	tr.enabled = 0;
	if (tr.started)
		ops_apply();
	unregister_ftrace_graph(&trace_gops);	/* no exit either: the trace ends */
	pthread_mutex_unlock(&trace_mu);
	err = ft_session_finish(reason, 0, 0);
	ft_control_unlink();
	return err;
}

int ftrace_trace_finish(void)
{
	return trace_stop(FTKIT_R_SHUTDOWN);
}

/* FTRACE_SIZE or FTRACE_DURATION reached (on the writer thread). */
static void trace_limit(int reason)
{
	int err = trace_stop(reason);

	if (err && err != -EALREADY)
		__atomic_store_n(&limit_err, err, __ATOMIC_RELEASE);
}

/* "status" line for the control socket. */
void ft_trace_status(char *buf, size_t len)
{
	static const char *const names[] = { "nop", "function", "function_graph" };
	uint64_t lost, depth, threads;
	char mode[32], args[48];

	ft_session_counts(&lost, &depth, &threads);
	ft_session_mode(mode, sizeof(mode));
	ft_args_status(args, sizeof(args));
	pthread_mutex_lock(&trace_mu);
	struct thr_spec *sp = __atomic_load_n(&thr_spec, __ATOMIC_ACQUIRE);

	snprintf(buf, len, "tracer=%s enabled=%d recording=%d pid=%d output=%s mode=%s time_filter=%lluns thread_filter=%s threads=%llu lost=%llu lost_depth=%llu%s",
		 names[tr.tracer], tr.enabled, tr.registered != FTRACE_TRACER_NOP, (int)getpid(),
		 ft_sess.final, mode, (unsigned long long)tr.thresh_ns, sp ? sp->text : "*",
		 (unsigned long long)threads, (unsigned long long)lost, (unsigned long long)depth, args);
	pthread_mutex_unlock(&trace_mu);
}

/* ---- start-up ---- */

/*
 * A whole number in [min, max] from the environment: 1 and *v set when it is one, 0 when
 * the variable is unset or empty, and 0 after one message when it is anything else (a
 * sign, a suffix, out of range): strtoul alone took "-1" for ULONG_MAX, a buffer no mmap
 * could back.
 */
static int env_uint(const char *name, unsigned long min, unsigned long max, unsigned long *v)
{
	const char *s = secure_getenv(name);
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || errno || *end || *v < min || *v > max) {
		fprintf(stderr, "ftkit: ignoring %s=%s (not a whole number from %lu to %lu); using the default\n",
			name, s, min, max);
		return 0;
	}
	return 1;
}

/*
 * Objects compiled with -pg -mfentry but never run through recordmcount have no call-site
 * table: without this the trace stays empty with no word why.  Said once, at start.
 */
static void warn_no_tables(void)
{
	struct ftrace_stats st;
	char exe[512];
	ssize_t n;

	ftrace_get_stats(&st);
	if (st.nr_objects)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	fprintf(stderr, "ftkit: %s: no loaded object has a __mcount_loc call-site table, so nothing is traced "
		"(unless a library with one is dlopen'ed later): run recordmcount on the objects "
		"(gcc -pg -mfentry) before linking, then ftlink the program\n",
		n > 0 ? exe : "/proc/self/exe");
}

/*
 * In secure-execution mode (setuid, setgid, capabilities: AT_SECURE) every variable of the
 * runtime is ignored, as glibc ignores LD_*: the invoker must not choose what the program
 * writes where. Said once, when one was set.
 */
static void note_secure(void)
{
	extern char **environ;

	if (!getauxval(AT_SECURE) || !environ)
		return;
	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "FTRACE_", 7) || !strncmp(*e, "FTRT_", 5)) {
			fprintf(stderr, "ftkit: secure-execution mode (setuid/setgid): FTRACE_* and FTRT_* variables are ignored\n");
			return;
		}
	}
}

/* A soft limit of open files below this leaves the default control socket unstarted. */
#define FT_FEW_FDS	64

static int few_descriptors(void)
{
	struct rlimit rl;

	return !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	       rl.rlim_cur < FT_FEW_FDS;
}

__attribute__((constructor(65535))) static void trace_init_env(void)
{
	const char *tracer = secure_getenv("FTRACE_TRACER");
	const char *control = secure_getenv("FTRACE_CONTROL");
	const char *tf, *trig, *argspec, *retspec;
	struct ftrace_trace_config cfg = { 0 };
	unsigned long v;

	exec_take();
	note_secure();
	session_init(tracer);
	inherit_init();
	cfg.control = control && !strcmp(control, "1");
	if (tracer && *tracer) {
		if (!strcmp(tracer, "function")) {
			cfg.tracer = FTRACE_TRACER_FUNCTION;
		} else if (!strcmp(tracer, "function_graph")) {
			cfg.tracer = FTRACE_TRACER_FUNCTION_GRAPH;
		} else if (!strcmp(tracer, "nop")) {
			cfg.tracer = FTRACE_TRACER_NOP;
		} else {
			fprintf(stderr, "ftkit: FTRACE_TRACER=%s: unknown tracer (function, function_graph, nop); tracing off\n",
				tracer);
			return;
		}
		/*
		 * On by default with a tracer, but not where descriptors are few: the socket
		 * would take one the program needs (pigz under ulimit -n 6 failed traced
		 * only); `ftrace live` can still start it (attach).
		 */
		if (!cfg.control && !(control && !strcmp(control, "0"))) {
			if (few_descriptors())
				ft_control_attach_init();
			else
				cfg.control = 1;
		}
	} else if (!cfg.control) {
		const char *attach = secure_getenv("FTRACE_ATTACH");

		/* no thread, no socket: `ftrace live PID` may ask for them later */
		if (!(control && !strcmp(control, "0")) && !(attach && !strcmp(attach, "0")))
			ft_control_attach_init();
		return;
	}
	cfg.filter = secure_getenv("FTRACE_FILTER");
	cfg.notrace = secure_getenv("FTRACE_NOTRACE");
	cfg.graph_function = secure_getenv("FTRACE_GRAPH_FUNCTION");
	cfg.graph_notrace = secure_getenv("FTRACE_GRAPH_NOTRACE");
	cfg.output = secure_getenv("FTRACE_OUTPUT");
	if (env_uint("FTRACE_GRAPH_DEPTH", 0, UINT_MAX, &v))
		cfg.graph_depth = (unsigned int)v;
	if (env_uint("FTRACE_BUFFER_KB", FT_BUFFER_KB_MIN, FT_BUFFER_KB_MAX, &v))
		cfg.buffer_kb = v;
	tf = secure_getenv("FTRACE_THREADS");
	if (tf && *tf && ftrace_trace_set_threads(tf))
		fprintf(stderr, "ftkit: ignoring FTRACE_THREADS=%s (thread ids and name globs, comma-separated, at most 64)\n", tf);
	tf = secure_getenv("FTRACE_TRIGGER");
	trig = tf && *tf ? tf : NULL;
	argspec = secure_getenv("FTRACE_ARGS");
	retspec = secure_getenv("FTRACE_RETVAL");
	tf = secure_getenv("FTRACE_TIME_FILTER");
	if (tf && *tf) {
		uint64_t ns;

		if (ft_parse_duration(tf, &ns))
			fprintf(stderr, "ftkit: ignoring FTRACE_TIME_FILTER=%s (not a duration: e.g. 10us, 1.5ms)\n", tf);
		else
			ftrace_trace_set_time_filter(ns);
	}
	ftrace_trace_start(&cfg);
	if (cfg.tracer != FTRACE_TRACER_NOP)
		warn_no_tables();
	for (int ret = 0; ret < 2; ret++) {
		const char *sp = ret ? retspec : argspec;
		char bad[160] = "";
		int err;

		if (!sp || !*sp)
			continue;
		err = ft_args_set(ret, sp, bad, sizeof(bad));
		if (err)
			fprintf(stderr, "ftkit: ignoring FTRACE_%s=%.200s: %s%s%s\n", ret ? "RETVAL" : "ARGS", sp,
				err == -EINVAL ? "'" : "", err == -EINVAL ? bad : strerror(-err),
				err == -EINVAL ? "': not FUNC@ARG[/FMT][%LOC],... (see docs/ftrace-cli.md)" : "");
		else if ((err = ft_args_unmatched(ret, bad, sizeof(bad))))
			fprintf(stderr, "ftkit: FTRACE_%s: '%s'%s no function (of the program and the libraries loaded so far)\n",
				ret ? "RETVAL" : "ARGS", bad, err > 1 ? " and others match" : " matches");
	}
	if (trig) {
		char bad[160] = "";
		int err = ft_set_triggers_startup(trig, bad, sizeof(bad));

		if (err)
			fprintf(stderr, "ftkit: ignoring FTRACE_TRIGGER=%s: '%s': %s\n", trig, bad,
				err == -EINVAL ? "not GLOB@ACTION[:COUNT],... (traceon, traceoff, snapshot, stacktrace, depth=N, finish)" :
				err == -ENODEV ? "matches no function (of the program and the libraries loaded so far)" :
				strerror(-err));
	}
}
