/*
 * Function graph (kernel fgraph model): an entry hook on each traced call
 * replaces the return address with return_to_handler and remembers the real
 * one on a per-thread shadow stack; when the function returns, the users'
 * return callbacks run and execution continues at the real return address.
 *
 * Up to FGRAPH_MAX_USERS graph users at once. Each has its own entry and return
 * callbacks and its own filters (set on gops->ops with ftrace_set_filter /
 * ftrace_set_notrace before or after registering). An entry callback returning
 * 0 declines the call: its return callback will not run for it.
 *
 * Callbacks run on the traced thread, possibly in a signal handler; they must
 * be async-signal-safe. Return callbacks must not use x87 (long double) state.
 */
#define FGRAPH_MAX_USERS	16
#define FGRAPH_SHADOW_DEPTH	4096	/* frames per thread */

#define FGRAPH_RET_UNWOUND	0x1	/* left by longjmp / exception / pthread_exit */

struct fgraph_ops;

struct ftrace_graph_ent {
	unsigned long func;		/* site address of the traced function */
	int depth;			/* frames below on this thread's shadow stack */
	unsigned long long calltime;	/* trace clock at entry */
	unsigned long retaddr;		/* real return address (into the caller) */
};

struct ftrace_graph_ret {
	unsigned long func;
	int depth;
	unsigned int flags;		/* FGRAPH_RET_* */
	unsigned long long calltime;
	unsigned long long rettime;
	unsigned long retaddr;
};

typedef int (*trace_func_graph_ent_t)(struct ftrace_graph_ent *trace,
				      struct fgraph_ops *gops);
typedef void (*trace_func_graph_ret_t)(struct ftrace_graph_ret *trace,
				       struct fgraph_ops *gops);

struct fgraph_ops {
	trace_func_graph_ent_t entryfunc;
	trace_func_graph_ret_t retfunc;
	struct ftrace_ops ops;		/* filters; func/private set by register */
	void *private;
	int idx;			/* slot while registered, -1 otherwise */
};

/* 0, -EBUSY (all slots used or already registered), or the core's error. */
int register_ftrace_graph(struct fgraph_ops *gops);
void unregister_ftrace_graph(struct fgraph_ops *gops);

/* The trace clock (TSC ticks or CLOCK_MONOTONIC ns; see docs/trace-format.md). */
unsigned long long ftrace_graph_clock(void);
