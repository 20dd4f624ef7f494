/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ftrace.h - the ftkit runtime API: dynamic function tracing for user-space programs,
 * modelled on the Linux kernel's ftrace (same names and semantics where they apply).
 *
 * Build flow: gcc -pg -mfentry -c, recordmcount, link with libftrt.a (into the executable),
 * ftlink.  See docs/runtime.md for the architecture and the exact semantics.
 *
 * Every function returns 0 or a negative errno:
 *   -EINVAL  bad argument or pattern, ops already (not) registered, flag combination refused
 *   -EBUSY   a function already has an IPMODIFY ops, or called from inside a callback
 *   -ENOMEM  out of memory (or no executable memory near the traced code)
 *   -ENODEV  a filter pattern or address matches no traceable function
 */
#ifndef FTRACE_H
#define FTRACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftrace_ops;
struct ftrace_regs;

/*
 * Mark callbacks (and what they call) so they are not traced themselves: no -pg hook, and
 * no patchable entry (-fpatchable-function-entry, aarch64's mechanism, ignores
 * no_instrument_function: the kernel's notrace does the same).
 */
#if defined(__has_attribute)
#if __has_attribute(patchable_function_entry)
#define ftrace_notrace __attribute__((no_instrument_function, patchable_function_entry(0, 0)))
#endif
#endif
#ifndef ftrace_notrace
#define ftrace_notrace __attribute__((no_instrument_function))
#endif

/*
 * A callback.  ip is the address of the traced function's call site (the function's first
 * instruction, after endbr64 when it has one), parent_ip the address its caller returns
 * to, op the registered ops, fregs the saved registers (see the accessors below).
 */
typedef void (*ftrace_func_t)(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs);

/* ops->flags: set by the user before registering. */
enum {
	FTRACE_OPS_FL_ENABLED			= 1UL << 0,	/* set by the runtime while registered */
	FTRACE_OPS_FL_SAVE_REGS			= 1UL << 1,	/* callback needs every register */
	FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED	= 1UL << 2,	/* same (always supported here) */
	FTRACE_OPS_FL_RECURSION			= 1UL << 3,	/* runtime guards against recursion */
	FTRACE_OPS_FL_IPMODIFY			= 1UL << 4,	/* callback may change the ip */
	FTRACE_OPS_FL_ALLOC_TRAMP		= 1UL << 5,	/* set by the runtime: own trampolines */
	FTRACE_OPS_FL_DIRECT			= 1UL << 6,	/* set by register_ftrace_direct */
	/* bits 16 and up are the runtime's own (its tracers' ops): leave them clear */
};

struct ftrt_hash;
struct ftrt_tramp;

/* The kernel's field name "private" is a C++ keyword: C++ code sees it as private_data. */
#ifdef __cplusplus
#define FTRACE_PRIVATE private_data
#else
#define FTRACE_PRIVATE private
#endif

/*
 * One user of function tracing.  Usable zero-initialised (static or heap) with only func
 * (and optionally flags, private) set.  The fields after private belong to the runtime.
 * Do not change func or flags while registered; keep the object alive until
 * unregister_ftrace_function() has returned.
 */
struct ftrace_ops {
	ftrace_func_t		func;
	unsigned long		flags;
	void			*FTRACE_PRIVATE;
	/* runtime-private */
	struct ftrace_ops	*next;
	struct ftrt_hash	*filter_hash;
	struct ftrt_hash	*notrace_hash;
	struct ftrt_tramp	*trampolines;
	unsigned long		nr_sites;	/* sites currently matched while registered */
	unsigned long		direct_call;	/* direct trampoline (register_ftrace_direct) */
};

/*
 * The saved registers (struct ftrace_pt_regs, struct ftrace_regs) and their accessors
 * (ftrace_get_regs, ftrace_regs_get_argument, ..._set_argument, ..._get_instruction_pointer,
 * ..._set_instruction_pointer, ..._get_stack_pointer, ..._get_frame_pointer,
 * ..._set_direct, ..._get_return_slot) depend on the target the program is compiled for.
 */
#if defined(__aarch64__)
#include "ftrace_regs_arm64.h"
#else
#include "ftrace_regs_x86_64.h"
#endif

/*
 * Register / unregister a callback: its sites are patched before these return.  Unregister
 * returns once no thread can still run the callback.  If waiting for that fails (an error
 * other than -EINVAL/-EBUSY), the ops is unregistered but may still be in use: do not free
 * it (its trampolines are kept for good).
 */
int register_ftrace_function(struct ftrace_ops *ops);
int unregister_ftrace_function(struct ftrace_ops *ops);

/*
 * Filters (buf is the kernel's unsigned char *; any byte pointer is accepted).  buf holds one or more glob patterns separated by spaces, tabs, newlines or
 * commas (len bytes, need not be NUL-terminated): `*x`, `x*`, `*a*`, `a*b`, `?`,
 * `[abc]`, `[a-z]`, `[!a]`; a leading `!` removes the matches instead of adding them.
 * Names come from the symbol tables of the loaded objects; C++ functions match by mangled
 * or demangled name.  reset != 0 first empties the list.  An empty filter list traces every
 * function; the notrace list excludes functions.  Works on registered and unregistered ops.
 * A pattern that adds nothing → -ENODEV and no change.
 */
int ftrace_set_filter(struct ftrace_ops *ops, const void *buf, int len, int reset);
int ftrace_set_notrace(struct ftrace_ops *ops, const void *buf, int len, int reset);
/* By address: ip is a site address or the function's entry address. */
int ftrace_set_filter_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset);
int ftrace_set_notrace_ip(struct ftrace_ops *ops, unsigned long ip, int remove, int reset);
/* Free the filter lists of an unregistered ops (e.g. before freeing a heap ops). */
void ftrace_free_filter(struct ftrace_ops *ops);

/* Does ops currently match the site at ip (filter and notrace rule)? 1, 0. */
int ftrace_ops_test(struct ftrace_ops *ops, unsigned long ip);

/* What a site currently does. */
enum ftrace_site_state {
	FTRACE_SITE_NOP = 0,		/* disabled */
	FTRACE_SITE_TRAMP,		/* calls the trampoline of one ops (owner) */
	FTRACE_SITE_CALLER,		/* calls the shared caller (list function) */
	FTRACE_SITE_REGS_CALLER,	/* calls the shared regs caller (list function) */
	FTRACE_SITE_REFUSED,		/* unexpected bytes: never patched */
	FTRACE_SITE_MULTI,		/* a trampoline running exactly the site's ops (nr_ops) */
	FTRACE_SITE_DIRECT,		/* calls a direct trampoline (owner: its direct ops) */
	FTRACE_SITE_CALLOPS,		/* calls the CALL_OPS caller; its cell names the ops
					 * (owner: the ops when it is the only one) */
};

struct ftrace_func_info {
	unsigned long		ip;		/* site address */
	unsigned long		func;		/* function start (0 if no symbol) */
	const char		*name;		/* function name ("" if no symbol) */
	const char		*object;	/* file of the loaded object */
	unsigned int		len;		/* 5 or 6 */
	unsigned int		nr_ops;		/* registered ops matching it */
	enum ftrace_site_state	state;
	unsigned long		target;		/* address the site calls (0 for NOP) */
	struct ftrace_ops	*owner;		/* ops of the trampoline (TRAMP) */
	const char		*symbol;	/* the symbol's name as in the file (mangled) */
	const char		*demangled;	/* a C++ name in full (a template's return type
						   too, as readers show it), else NULL */
};

/*
 * available_filter_functions: calls fn for every site in address order (objects in load
 * order) until fn returns non-zero; returns that value, or 0.  The info is valid during the
 * call only.  Must not register or unregister from fn.
 */
int ftrace_for_each_function(int (*fn)(const struct ftrace_func_info *info, void *data),
			     void *data);
/* Info of the site at ip (site or function entry address): 0 or -ENODEV. */
int ftrace_lookup_function(unsigned long ip, struct ftrace_func_info *info);
/* Print the list (one line per site: address state nr_ops name [object]). */
int ftrace_print_functions(void *FILE_stream);

/*
 * Loaded objects: the runtime reads the tables of every object present at start-up; dlopen
 * called from the executable and every dlclose are hooked, so objects loaded or unloaded
 * follow the registered ops at once; objects loaded by a library's dlopen are noticed at the
 * next API call, or now with ftrace_rescan().  Returns the number of sites known, or -errno.
 */
int ftrace_rescan(void);
/* dlopen() + ftrace_rescan() whoever calls it; dlclose() (hooked anyway). */
void *ftrace_dlopen(const char *file, int mode);
int ftrace_dlclose(void *handle);

/* Counters: sites known, sites refused (unexpected bytes), objects with tables. */
struct ftrace_stats {
	unsigned long nr_sites, nr_refused, nr_objects;
	unsigned long nr_trampolines;	/* in use: registered ops' and the shared callers */
	unsigned long nr_tramp_retired;	/* of unregistered ops, memory not yet released */
	unsigned long nr_tramp_released;	/* memory released so far */
};
void ftrace_get_stats(struct ftrace_stats *st);

/*
 * Unregistering an ops stops its callback before returning, but the memory of its
 * trampolines is released in batches (a thread may still be on their last instructions,
 * or in a signal handler that interrupted them).  This waits until no thread can execute a
 * retired trampoline and releases them all; also frees replaced filter lists.  0, -EBUSY
 * inside a callback, -EAGAIN when called from a signal handler that interrupted a retired
 * trampoline (it is kept for a later call).
 */
int ftrace_synchronize(void);

/*
 * Direct calls (the kernel's API).  The sites in ops' filter call addr itself instead of a
 * trampoline of the runtime, when no other ops traces them; when others do, their
 * trampoline (the regs caller) runs the others' callbacks and then enters addr as if the
 * site had called it.  addr is a direct trampoline: entered by the site's call, with the
 * traced function's arguments in their registers and its return address above the site's,
 * it must preserve them (and the callee-saved registers) and return to the site + 5 (or to
 * the caller, skipping the function, as an exit trampoline does).  See docs/runtime.md
 * ("Direct calls") and the ready ones below.
 *
 * register_ftrace_direct: ops zero-initialised apart from its filter (func must be NULL;
 * the runtime sets func, FTRACE_OPS_FL_DIRECT and FTRACE_OPS_FL_SAVE_REGS).  -EINVAL: empty
 * filter, func set, ops registered; -EBUSY: a site of the filter already has a direct call
 * or an IPMODIFY ops (and registering an IPMODIFY ops on a site with a direct call, or
 * adding such a site to a direct ops' filter, is -EBUSY too).
 * unregister_ftrace_direct: -EINVAL unless ops is registered with addr; free_filters also
 * frees ops' filter lists.  On return no new call enters addr, but a thread may still be
 * inside it (the runtime cannot see into it): free or change it only when the program
 * knows no thread is there (ready trampolines: ftrace_direct_tramp_free).
 * modify_ftrace_direct: the sites now call addr; while it runs, every call of a site enters
 * either the old or the new trampoline, exactly once (see docs/runtime.md).
 * modify_ftrace_direct_nolock: the same (the runtime has no separate direct lock: both
 * take the API lock; kept for kernel code ported as is).
 */
int register_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);
int unregister_ftrace_direct(struct ftrace_ops *ops, unsigned long addr, int free_filters);
int modify_ftrace_direct(struct ftrace_ops *ops, unsigned long addr);
int modify_ftrace_direct_nolock(struct ftrace_ops *ops, unsigned long addr);

/*
 * Ready direct trampolines (generated by trampgen with the runtime's other templates).
 *
 * ftrace_direct_count counts the calls of each site that calls it (register it as is:
 * register_ftrace_direct(&ops, (unsigned long)ftrace_direct_count)); the counts survive
 * unregistering.  Up to 4096 sites per process; the calls of sites beyond (or of sites
 * whose slot was not found within 32 probes) are counted together as
 * ftrace_direct_count_read(0).  ip: a site or a function address.
 */
extern const char ftrace_direct_count[];
unsigned long ftrace_direct_count_read(unsigned long ip);

/*
 * An entry/exit pair (the kernel's fentry/fexit): entry(ip, parent_ip, args, data) runs
 * before the traced function, which then runs with args[0..5] (x86-64; args[0..7] on
 * arm64) as its integer arguments (entry may change them), the vector arguments (and x8
 * on arm64) and up to 16 words of stack arguments as passed; exit(ip, parent_ip, args,
 * retval, data) runs after it with the same args (as entry left them) and its return
 * value (rax, x0), before the result goes back to the caller.
 * Callbacks run on the traced thread, should be ftrace_notrace, and exit must not use x87
 * (long double) state.  The traced function must not be left by longjmp or an exception (the
 * trampoline's frame has no unwind information).
 * ftrace_direct_fexit_create returns the address to register (0: -ENOMEM / -EINVAL in errno);
 * ftrace_direct_fexit_free releases it once no ops uses it (-EBUSY otherwise, or while a
 * thread is still inside a function it called: try again later); 0 or -errno.
 */
typedef void (*ftrace_direct_entry_t)(unsigned long ip, unsigned long parent_ip,
				      unsigned long *args, void *data);
typedef void (*ftrace_direct_exit_t)(unsigned long ip, unsigned long parent_ip,
				     unsigned long *args, unsigned long retval, void *data);
unsigned long ftrace_direct_fexit_create(ftrace_direct_entry_t entry, ftrace_direct_exit_t exit,
					 void *data);
int ftrace_direct_fexit_free(unsigned long addr);

/* Empty callback (for tests and as a placeholder). */
void ftrace_stub(void);

/* ---- function graph (tracer work, issue 6) goes below this line ---- */

/* --- function graph --- */
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
	struct ftrace_regs *fregs;	/* the registers at entry (arguments: ftrace_regs_get_argument) */
};

struct ftrace_graph_ret {
	unsigned long func;
	int depth;
	unsigned int flags;		/* FGRAPH_RET_* */
	unsigned long long calltime;
	unsigned long long rettime;
	unsigned long retaddr;
	/* a return (not FGRAPH_RET_UNWOUND): the registers it returned in (struct
	   ftrace_ret_regs of the architecture's ftrace_regs_*.h), else NULL */
	const struct ftrace_ret_regs *ret_regs;
	unsigned long retval;		/* the integer return register (0 when unwound) */
};

typedef int (*trace_func_graph_ent_t)(struct ftrace_graph_ent *trace,
				      struct fgraph_ops *gops);
typedef void (*trace_func_graph_ret_t)(struct ftrace_graph_ret *trace,
				       struct fgraph_ops *gops);

struct fgraph_ops {
	trace_func_graph_ent_t entryfunc;
	trace_func_graph_ret_t retfunc;
	struct ftrace_ops ops;		/* filters; func/private set by register */
	void *FTRACE_PRIVATE;
	int idx;			/* slot while registered, -1 otherwise */
};

/* 0, -EBUSY (all slots used or already registered), or the core's error. */
int register_ftrace_graph(struct fgraph_ops *gops);
void unregister_ftrace_graph(struct fgraph_ops *gops);

/* The trace clock (TSC ticks or CLOCK_MONOTONIC ns; see docs/trace-format.md). */
unsigned long long ftrace_graph_clock(void);
/* --- function graph --- */

#ifdef __cplusplus
}
#endif

#endif /* FTRACE_H */
