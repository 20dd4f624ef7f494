// SPDX-License-Identifier: Apache-2.0
/*
 * Triggers on function hits (the kernel's func:traceoff/traceon/snapshot/stacktrace
 * probes, uftrace's -T func@...): FTRACE_TRIGGER, the live `trigger` command and
 * ftrace_trace_set_triggers().
 *
 *   GLOB@ACTION[:COUNT][,ACTION[:COUNT]...][;GLOB@...]
 *
 * ACTION: traceon, traceoff (recording on/off for every thread, as tracing_on),
 * snapshot (a snapshot file now), stacktrace (the caller chain, into the thread's trace),
 * depth=N (the graph depth limit), finish (recording off when that call returns).
 * COUNT: how many times the action fires (unlimited without).
 *
 * Each trigger is an ftrace_ops of its own (SAVE_REGS: the frame pointer starts the
 * stack walk), filtered to the functions its glob matches, and, with finish, a graph
 * user whose return callback turns recording off.  The actions run on the thread that
 * hit the function, in its callback: snapshot writes the file there and then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ftrace.h>
#include <ftrace_trace.h>

#include "arch/arch.h"
#include "fgraph.h"
#include "trace.h"
#include "trace_buf.h"
#include "trigger.h"
#include "trace_util.h"

#define TRIG_MAX	16	/* triggers */
#define TRIG_ACTS	8	/* actions per trigger */
#define FRAME_MAX	(1UL << 20)	/* a larger step between frame pointers is not one */

enum { ACT_TRACEON = 1, ACT_TRACEOFF, ACT_SNAPSHOT, ACT_STACK, ACT_DEPTH, ACT_FINISH };

struct trig {
	struct ftrace_ops ops;
	struct fgraph_ops gops;		/* finish only */
	int registered, graph;
	int ever;			/* was registered: never freed (a callback may run on it) */
	int pending;			/* its glob matched nothing yet: registered when a
					   library loaded later has a match (ft_triggers_added) */
	char glob[128];
	int nact;
	struct {
		int kind;
		long arg;
		long count;		/* times left; -1: unlimited */
	} act[TRIG_ACTS];
};

static pthread_mutex_t trig_mu = PTHREAD_MUTEX_INITIALIZER;
/* never freed: a callback may be running on an unregistered trigger's ops */
static struct trig *trigs[TRIG_MAX];
static int ntrigs;

/* An action may fire (its count, if any, is taken). */
static int take(long *count)
{
	long c = __atomic_load_n(count, __ATOMIC_RELAXED);

	while (c) {
		if (c < 0)
			return 1;
		if (__atomic_compare_exchange_n(count, &c, c - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* One word of this process's memory, or 0 if it cannot be read (no fault). */
static unsigned long peek(unsigned long addr)
{
	unsigned long v = 0;

	if (!addr || addr & 7 || ft_mem_read(&v, addr, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

struct code_query {
	unsigned long addr;
	int found;
};

static int code_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct code_query *q = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		unsigned long lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && q->addr >= lo &&
		    q->addr - lo < ph->p_memsz) {
			q->found = 1;
			return 1;
		}
	}
	return 0;
}

/*
 * Is ret a return address: in the code of a loaded object, after a call instruction?
 * (A frame-pointer walk through code built without frame pointers reads other words.)
 */
static int return_address(unsigned long ret)
{
	struct code_query q = { .addr = ret };
	unsigned char code[8];

	if (ret < 8 || ft_mem_read(code, ret - 8, sizeof(code)) != sizeof(code) ||
	    !ftrt_arch_after_call(code))
		return 0;
	dl_iterate_phdr(code_module, &q);
	return q.found;
}

/*
 * The caller chain: ip, the return into its caller, then the returns into the callers'
 * callers.  With graph frames open on the thread they come from its shadow stack (the
 * traced calls), each frame's function (its site, FTKIT_STACK_ENTRY set) before the
 * return into its caller: a traced function is named even where no return address names
 * it (it tail-called, or the call into the next traced one came through untraced code:
 * memcached's worker_libevent through libevent); readers leave it out where the return
 * before it names it.  Else from the frame pointers, as far as they are kept (code built
 * with -fno-omit-frame-pointer: all of it), a return address the graph tracer hooked being
 * replaced by the real one from the shadow stack (matched by the stack slot).  slot: this
 * call's return slot (NULL: unknown).
 */
static int walk(unsigned long ip, unsigned long parent, unsigned long *slot, unsigned long fp,
		uint64_t *out)
{
	const unsigned long rth = (unsigned long)return_to_handler;
	struct ft_thread *t = &ft_cur;
	int n = 0;

	out[n++] = ip;
	/* hooked (the graph tracer ran first, or a tail call left its caller's hook on the
	   slot): the real return is on the shadow stack */
	if (parent != rth)
		out[n++] = parent;
	if (t->shadow && t->depth > 0) {
		for (int i = t->depth - 1; i >= 0 && n < FT_STACK_MAX; i--) {
			const struct fgraph_frame *f = &t->shadow[i];

			/* the call being entered, if the graph tracer pushed it already */
			if (i == t->depth - 1 && slot && f->slot == slot && f->ip == ip) {
				if (n == 1 && f->ret != rth)
					out[n++] = f->ret;
				continue;
			}
			out[n++] = f->ip | FTKIT_STACK_ENTRY;
			/* a frame pushed on a hooked slot (a tail call): its caller's frame,
			   older, holds the address the call returns to */
			if (f->ret != rth && n < FT_STACK_MAX)
				out[n++] = f->ret;
		}
		return n;
	}
	while (n < FT_STACK_MAX && fp) {
		unsigned long next = peek(fp), ret = peek(fp + 8);

		if (!ret)
			break;
		if (ret == rth)
			for (int i = t->depth - 1; i >= 0; i--)
				if (t->shadow && (unsigned long)t->shadow[i].slot == fp + 8) {
					ret = t->shadow[i].ret;
					break;
				}
		/* code built without frame pointers: fp is any register's value */
		if (!return_address(ret))
			break;
		out[n++] = ret;
		if (next <= fp || next - fp > FRAME_MAX)	/* frames go up the stack */
			break;
		fp = next;
	}
	return n;
}

static void act_stack(unsigned long ip, unsigned long parent, struct ftrace_regs *fregs)
{
	struct ft_thread *t = ft_trace_ext_thread();
	uint64_t pcs[FT_STACK_MAX];
	int n;

	if (!t)
		return;
	n = walk(ip, parent, fregs ? ftrace_regs_get_return_slot(fregs) : NULL,
		 fregs ? ftrace_regs_get_frame_pointer(fregs) : 0, pcs);
	ft_ev_stack(t, ft_clock_read(), pcs, (unsigned)n);
}

static FTRT_ARCH_CALLBACK void trig_func(unsigned long ip, unsigned long parent_ip,
					 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct trig *tg = (struct trig *)op->private;
	char out[PATH_MAX + 64];

	for (int i = 0; i < tg->nact; i++) {
		if (tg->act[i].kind == ACT_FINISH || !take(&tg->act[i].count))
			continue;
		switch (tg->act[i].kind) {
		case ACT_TRACEON:
			ft_trace_pause(0);
			break;
		case ACT_TRACEOFF:
			ft_trace_pause(1);
			break;
		case ACT_SNAPSHOT: {
			static int said;
			int err = ftrace_trace_snapshot(NULL, out, sizeof(out));

			/* once: a worker that dropped root cannot write beside a trace
			   started as root, and the count was spent in silence */
			if (err && err != -ENODEV && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
				ft_msg_err("trigger snapshot: cannot write ", *out ? out : "it", err);
			break;
		}
		case ACT_STACK:
			act_stack(ip, parent_ip, fregs);
			break;
		case ACT_DEPTH:
			ftrace_trace_set_depth((unsigned int)tg->act[i].arg);
			break;
		}
	}
}

/* The trigger of a graph user (register_ftrace_graph owns gops->ops.private). */
static struct trig *gops_trig(struct fgraph_ops *gops)
{
	return (struct trig *)((char *)gops - offsetof(struct trig, gops));
}

/* finish: hook the return of the calls whose finish may still fire */
static int trig_gent(struct ftrace_graph_ent *e, struct fgraph_ops *gops)
{
	struct trig *tg = gops_trig(gops);

	(void)e;
	for (int i = 0; i < tg->nact; i++)
		if (tg->act[i].kind == ACT_FINISH && __atomic_load_n(&tg->act[i].count, __ATOMIC_RELAXED))
			return 1;
	return 0;
}

static void trig_gret(struct ftrace_graph_ret *r, struct fgraph_ops *gops)
{
	struct trig *tg = gops_trig(gops);

	(void)r;
	for (int i = 0; i < tg->nact; i++)
		if (tg->act[i].kind == ACT_FINISH && take(&tg->act[i].count))
			ft_trace_pause(1);
}

static int parse_action(struct trig *tg, const char *a, size_t n)
{
	static const struct { const char *name; int kind; } names[] = {
		{ "traceon", ACT_TRACEON }, { "traceoff", ACT_TRACEOFF }, { "snapshot", ACT_SNAPSHOT },
		{ "stacktrace", ACT_STACK }, { "backtrace", ACT_STACK }, { "finish", ACT_FINISH },
		{ "depth", ACT_DEPTH },
	};
	char buf[64], *colon, *eq, *end;
	long count = -1, arg = 0;
	size_t i;

	if (n == 0 || n >= sizeof(buf) || tg->nact == TRIG_ACTS)
		return -EINVAL;
	memcpy(buf, a, n);
	buf[n] = 0;
	if ((colon = strchr(buf, ':'))) {
		*colon++ = 0;
		count = strtol(colon, &end, 10);
		if (!*colon || *end || count <= 0)
			return -EINVAL;
	}
	if ((eq = strchr(buf, '='))) {
		*eq++ = 0;
		arg = strtol(eq, &end, 10);
		if (!*eq || *end || arg < 0)
			return -EINVAL;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(buf, names[i].name))
			break;
	if (i == sizeof(names) / sizeof(names[0]) || !eq != (names[i].kind != ACT_DEPTH))
		return -EINVAL;
	tg->act[tg->nact].kind = names[i].kind;
	tg->act[tg->nact].arg = arg;
	tg->act[tg->nact].count = count;
	if (names[i].kind == ACT_FINISH)
		tg->graph = 1;
	tg->nact++;
	return 0;
}

/* One GLOB@ACTIONS item. */
static int parse_trigger(struct trig *tg, const char *s, size_t n)
{
	const char *at = memchr(s, '@', n), *a, *end = s + n;

	if (!at || at == s || (size_t)(at - s) >= sizeof(tg->glob))
		return -EINVAL;
	memcpy(tg->glob, s, (size_t)(at - s));
	for (a = at + 1; a <= end;) {
		const char *c = memchr(a, ',', (size_t)(end - a));
		size_t len = c ? (size_t)(c - a) : (size_t)(end - a);
		int err = parse_action(tg, a, len);

		if (err)
			return err;
		a += len + 1;
	}
	return 0;
}

static void trig_unregister(struct trig *tg)
{
	if (!tg->registered)
		return;
	if (tg->graph)
		unregister_ftrace_graph(&tg->gops);
	unregister_ftrace_function(&tg->ops);
	tg->registered = 0;
}

/* ops (the trigger's, or its graph user's) traces the functions of tg's glob. */
static int trig_filter(struct ftrace_ops *ops, const struct trig *tg)
{
	return ftrace_set_filter(ops, (unsigned char *)tg->glob, (int)strlen(tg->glob), 1);
}

static int trig_register(struct trig *tg)
{
	int err;

	tg->ops.func = trig_func;
	tg->ops.private = tg;
	tg->ops.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_RECURSION;
	err = trig_filter(&tg->ops, tg);
	if (!err)
		err = register_ftrace_function(&tg->ops);
	if (err)
		return err;
	if (tg->graph) {
		tg->gops.entryfunc = trig_gent;
		tg->gops.retfunc = trig_gret;
		err = trig_filter(&tg->gops.ops, tg);
		if (!err)
			err = register_ftrace_graph(&tg->gops);
		if (err) {
			unregister_ftrace_function(&tg->ops);
			return err;
		}
	}
	tg->registered = tg->ever = 1;
	return 0;
}

/*
 * Replace the triggers (NULL or "": none).  All or nothing: a malformed list, a glob that
 * matches no function or a registration that fails leaves the triggers as they were.
 * bad (if not NULL) gets the item refused.  With pending (the start-up list), a glob that
 * matches nothing yet is no error: its trigger waits for a library loaded later.
 */
static int set_triggers(const char *spec, char *bad, size_t badlen, int pending);

int ft_set_triggers(const char *spec, char *bad, size_t badlen)
{
	return set_triggers(spec, bad, badlen, 0);
}

int ft_set_triggers_startup(const char *spec, char *bad, size_t badlen)
{
	return set_triggers(spec, bad, badlen, 1);
}

/*
 * Objects with call sites were loaded: a waiting trigger whose glob matches now is
 * registered (said on stderr), a registered one takes the new matches of its glob.
 */
void ft_triggers_added(void)
{
	pthread_mutex_lock(&trig_mu);
	for (int i = 0; i < ntrigs; i++) {
		struct trig *tg = trigs[i];

		if (tg->pending) {
			if (trig_register(tg) == 0) {
				tg->pending = 0;
				fprintf(stderr, "ftkit: trigger '%s': matches functions of a library "
					"loaded now\n", tg->glob);
			}
		} else if (tg->registered) {
			trig_filter(&tg->ops, tg);
			if (tg->graph)
				trig_filter(&tg->gops.ops, tg);
		}
	}
	pthread_mutex_unlock(&trig_mu);
}

static int set_triggers(const char *spec, char *bad, size_t badlen, int pending)
{
	struct trig *next[TRIG_MAX] = { 0 };
	int n = 0, err = 0;
	const char *s = spec ? spec : "";

	while (*s && !err) {
		size_t len = strcspn(s, ";");

		if (len && n == TRIG_MAX)
			err = -E2BIG;
		else if (len && !(next[n] = calloc(1, sizeof(struct trig))))
			err = -ENOMEM;
		else if (len && (err = parse_trigger(next[n], s, len)) == 0)
			n++;
		if (err && bad)
			snprintf(bad, badlen, "%.*s", (int)len, s);
		s += len + (s[len] == ';');
	}
	pthread_mutex_lock(&trig_mu);
	for (int i = 0; i < n && !err; i++) {
		err = trig_register(next[i]);
		if (err == -ENODEV && pending) {
			next[i]->pending = 1;
			fprintf(stderr, "ftkit: trigger '%s': matches no function yet: it waits for a "
				"library loaded later\n", next[i]->glob);
			err = 0;
			continue;
		}
		if (err && bad)
			snprintf(bad, badlen, "%s", next[i]->glob);
		if (err)
			for (int j = 0; j < i; j++)
				trig_unregister(next[j]);
	}
	if (!err) {
		for (int i = 0; i < ntrigs; i++)
			trig_unregister(trigs[i]);	/* kept: a callback may still run on it */
		for (int i = 0; i < n; i++)
			trigs[i] = next[i];
		ntrigs = n;
	}
	pthread_mutex_unlock(&trig_mu);
	if (err)
		for (int i = 0; i < TRIG_MAX; i++)
			if (next[i] && !next[i]->ever)
				free(next[i]);
	return err;
}

int ftrace_trace_set_triggers(const char *spec)
{
	return ft_set_triggers(spec, NULL, 0);
}
