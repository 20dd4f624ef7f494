/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ftrt_core.h - internal interface of the runtime core (ftrace_core.c, ftrace_elf.c,
 * ftrace_tramp.c).  Not installed.
 */
#ifndef FTRT_CORE_H
#define FTRT_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "ftrace.h"

#define FTRT_TLS __attribute__((tls_model("initial-exec")))

/*
 * Services of the core to the tracers (trace.c).  FTRT_OPS_FL_LIVE_LISTS marks an ops
 * that is never registered but whose lists callbacks read (ftrt_ops_match) while they are
 * changed: a replaced list is freed after a grace period, as for a registered ops.
 */
#define FTRT_OPS_FL_LIVE_LISTS	(1UL << 31)
/*
 * FTRT_OPS_FL_LEAN_FRAME: the callback reads no more of its struct ftrace_regs than the
 * integer argument registers and passes it on only to ftrt_arch_lean_call (arch.h), so
 * the lean template may run it even though it refers to the frame.
 */
#define FTRT_OPS_FL_LEAN_FRAME	(1UL << 29)
/* Does ops's filter/notrace rule take the site at ip?  Lock-free. */
int ftrt_ops_match(struct ftrace_ops *ops, unsigned long ip);
/*
 * Length of the glob list item at s: up to its first character in seps outside (), <>,
 * [] and {} (C++ parameter and template lists hold commas and spaces; "operator<" and the
 * like are no brackets).
 */
size_t ftrt_glob_item(const char *s, const char *seps);
/*
 * If an operator name starts at p in s ("operator<", "operator()", "operator new"; not
 * inside a longer identifier), the last character of its symbol (a scan goes on after
 * it: its '<' or ',' is no bracket nor separator), else NULL (ftrace_elf.c).
 */
const char *ftrt_operator_end(const char *s, const char *p);

/*
 * One call site: 16 bytes.  ip is the site address; rel the rel32 of the call the site
 * holds while REC_CALL is set; flags hold the number of registered ops matching the site
 * and the state bits below.
 */
struct ftrt_rec {
	uintptr_t	ip;
	int32_t		rel;
	uint32_t	flags;
};

#define REC_COUNT_MASK	0x000fffffu	/* matching registered ops */
#define REC_LEN6	(1u << 20)	/* 6-byte site */
#define REC_CALL	(1u << 21)	/* the site is e8 rel32 (+90) */
#define REC_NOP6	(1u << 22)	/* the 6-byte site still holds 66 0f 1f 44 00 00 */
#define REC_REFUSED	(1u << 23)	/* unexpected bytes: never touched again */
#define REC_DIRTY	(1u << 24)	/* target must be recomputed (during an update) */
/*
 * CALL_OPS (docs/runtime.md, "Per-call-site ops"): the function has an 8-byte slot right
 * before its entry (ftrt_arch_callops_slot), so the site may call the arena's CALL_OPS
 * caller; REC_SLOT: the slot holds the address of the site's cell (written once).
 */
#define REC_CALLOPS	(1u << 25)
#define REC_SLOT	(1u << 26)
#define REC_CO_LEAN	(1u << 27)	/* the last CALL_OPS caller it called was the lean one */

/* A sorted symbol table of one object (loaded on first use). */
struct ftrt_sym {
	uintptr_t	addr;		/* run-time address */
	uintptr_t	size;
	const char	*name;
	const char	*demangled;	/* NULL unless a C++ name */
	const char	*shortname;	/* demangled without a template's return type */
	int		rank;		/* among aliases at one address: the highest names it */
	unsigned	plen;		/* shortname's length before its parameter list (0: none) */
};

struct ftrt_syms {
	struct ftrt_sym	*v;
	size_t		n;
	char		*strtab;
	char		**demangled;	/* allocations to free */
	size_t		ndemangled;
	int		demangle_done;	/* C++ names demangled (or none to demangle) */
};

struct ftrt_arena;

/* One loaded object (the executable or a shared library). */
struct ftrt_object {
	struct ftrt_object	*next;
	char			*name;		/* dlpi_name ("" for the executable) */
	char			*path;		/* file read ("/proc/self/exe" for the executable) */
	uintptr_t		bias;
	const void		*phdr;
	unsigned		phnum;
	uintptr_t		lo, hi;		/* extent of its PT_LOAD segments */
	struct ftrt_rec		*recs;		/* sorted by ip */
	size_t			nrecs;
	size_t			recs_cap;	/* allocated records */
	size_t			dirty_lo, dirty_end;	/* records an update marked dirty (end 0: none) */
	struct ftrt_arena	*arena;		/* trampolines reachable from its sites */
	struct ftrt_syms	*syms;
	struct cell_chunk	*cells;		/* its CALL_OPS sites' cells (ftrace_core.c) */
	int			seen;
	int			table_format;	/* FTRT_TABLE_* */
};

enum { FTRT_TABLE_NONE, FTRT_TABLE_LINKED, FTRT_TABLE_RECORDED, FTRT_TABLE_GCC };

/* A trampoline: a clone of a template for one ops (or the list function) in one arena. */
struct ftrt_tramp {
	struct ftrt_tramp	*next;		/* in its ops' list, then in the quarantine */
	struct ftrt_arena	*arena;
	uintptr_t		*slot;		/* op slot in the arena's data page */
	unsigned char		*code;
	size_t			size;
	struct ftrace_ops	*ops;
	int			regs;
	/* multi-ops trampolines (ftrt_tramp_create_multi): the set they run, in list order */
	struct ftrace_ops	**vec;
	unsigned		nvec;
	int			kind;		/* FTRT_MULTI_* */
	unsigned long		refs;		/* sites calling it */
	struct ftrt_direct_block *block;	/* a clone of ftrace_direct_fexit */
	int			retired;
};

/* Multi-ops trampolines: kinds (templates) and the largest set one serves. */
enum { FTRT_MULTI_PLAIN, FTRT_MULTI_NOVEC, FTRT_MULTI_REGS };
#define FTRT_MULTI_MAX	32

/* Executable memory reserved near some objects (page 0: the op slots of the others). */
struct ftrt_arena {
	struct ftrt_arena	*next;
	uintptr_t		base;
	size_t			npages;
	unsigned char		*used;		/* one byte per page */
	struct ftrt_tramp	*caller, *regs_caller;	/* shared callers (list function) */
	struct ftrt_tramp	*callops[2];	/* the CALL_OPS callers: full, lean (_novec) */
	struct ftrt_tramp	*multis;	/* multi-ops trampolines, by ops set */
	unsigned		nmultis;
	struct ftrt_tramp	**page_tramp;	/* trampoline on each page (NULL: none) */
};

/* ftrace_elf.c */
int ftrt_elf_find_table(const char *path, uintptr_t *addr, size_t *size);
struct ftrt_syms *ftrt_elf_load_syms(const char *path, uintptr_t bias);
void ftrt_syms_free(struct ftrt_syms *s);
/* Demangle s's C++ names if not done yet and the process now has a demangler. */
void ftrt_syms_demangle(struct ftrt_syms *s);
/*
 * text (len bytes: filter globs, argument specs) names C++ functions ("::" or a parameter
 * list): make sure the process has a demangler to match them with, if it has C++ names to
 * match (ftrt_objects_need_demangler). Call without the core lock (it may dlopen).
 */
void ftrt_demangler_want(const char *text, size_t len);
/*
 * Does a loaded object with call sites have C++ names not demangled yet (the process has
 * no demangler)?  Takes the core lock: 0 inside a callback.
 */
int ftrt_objects_need_demangler(void);
/* Does the process have a demangler (C++ names match in their demangled form)? */
int ftrt_have_demangler(void);
const struct ftrt_sym *ftrt_syms_lookup(const struct ftrt_syms *s, uintptr_t addr);
/*
 * The length of a demangled function name before its parameter list ("ns::f<int>" of
 * "ns::f<int>(char const*) const"), 0 if it has none: C++ functions match a glob without
 * their parameters too, as ftrace's readers and uftrace match them.
 */
size_t ftrt_name_plen(const char *d);
/* Does pat match the first n characters of name (as a glob, or as the very name)? */
int ftrt_prefix_matches(const char *pat, const char *name, size_t n);
int ftrt_mangled_plain_matches(const char *pat, const char *sym);
/* Cut every "[abi:…]" tag out of the name s; whether it had one. */
int ftrt_cut_abi_tags(char *s);

/* ftrace_tramp.c */
struct ftrt_arena *ftrt_arena_for(uintptr_t lo, uintptr_t hi);
/* Templates a trampoline is cloned from (arch/<arch>/ftrace_<arch>.S, by trampgen). */
enum { FTRT_TMPL_CALLER, FTRT_TMPL_REGS, FTRT_TMPL_NOVEC };
struct ftrt_tramp *ftrt_tramp_create(struct ftrt_arena *a, struct ftrace_ops *ops,
				     ftrace_func_t func, int tmpl);
int ftrt_tramp_novec_ok(ftrace_func_t func, unsigned long flags);
/*
 * A comparison switch FTRT_<...> that "0" turns off (on otherwise, and in secure-execution
 * mode, where the environment is not read): read once, into *cache (-1 until then).
 */
int ftrt_env_on(const char *name, int *cache);
struct ftrt_tramp *ftrt_tramp_create_multi(struct ftrt_arena *a, struct ftrace_ops **vec,
					   const ftrace_func_t *funcs, unsigned n, int kind,
					   uintptr_t fallback);
struct ftrt_tramp *ftrt_tramp_create_callops(struct ftrt_arena *a, int lean);
struct ftrt_tramp *ftrt_fexit_create(struct ftrt_arena *a, ftrace_direct_entry_t entry,
				     ftrace_direct_exit_t exit, void *data);
struct ftrt_tramp *ftrt_fexit_find(uintptr_t addr);
int ftrt_fexit_free(struct ftrt_tramp *t, long limit_us);
struct ftrt_tramp *ftrt_multis_take(struct ftrace_ops *ops);
int ftrt_multis_unused(void);
/* The trampoline whose code starts at addr in arena a, or NULL. */
struct ftrt_tramp *ftrt_tramp_at(struct ftrt_arena *a, uintptr_t addr);
void ftrt_tramp_kill(struct ftrt_tramp *t);
void ftrt_tramp_retire(struct ftrt_tramp *t);
int ftrt_tramp_release(long limit_us);
extern unsigned long ftrt_nr_trampolines, ftrt_nr_quarantined, ftrt_nr_released;

/* ftrace_core.c */
void ftrt_list_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		    struct ftrace_regs *fregs);
void ftrt_call_direct_funcs(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			    struct ftrace_regs *fregs);
void ftrt_recursion_assist(unsigned long ip, unsigned long parent_ip,
			   struct ftrace_ops *op, struct ftrace_regs *fregs);
extern struct ftrace_ops ftrt_list_ops;
/*
 * The i-th (0, 1, …) other name of the function of site ip: the symbols at its address
 * that lost to the one ftrace_func_info names (gcc's identical code folding, alias
 * attributes).  Sets *name, *symbol and *demangled as ftrace_func_info has them; -ENOENT
 * past the last.  Only from a ftrace_for_each_function callback (it needs the core lock).
 */
int ftrt_func_alias(unsigned long ip, unsigned i, const char **name, const char **symbol,
		    const char **demangled);
/* CALL_OPS (ftrace_core.c): the callback of a set of ops in a cell, the stub of no ops */
void ftrt_callops_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		       struct ftrace_regs *fregs);
extern struct ftrace_ops ftrt_callops_stub;
int ftrt_debug_callops_set(unsigned long ip, struct ftrace_ops *ops);
long ftrt_debug_reload(void);
long ftrt_debug_cells(void);	/* cells allocated and not released (tests) */

/* Template symbols (arch/<arch>/ftrace_<arch>.S, generated by trampgen). */
extern const unsigned char ftrace_caller[], ftrace_caller_op_ptr[], ftrace_call[],
	ftrace_caller_end[], ftrace_regs_caller[], ftrace_regs_caller_op_ptr[],
	ftrace_regs_call[], ftrace_regs_caller_end[], ftrace_caller_novec[],
	ftrace_caller_novec_op_ptr[], ftrace_novec_call[], ftrace_caller_novec_end[];
extern const unsigned char ftrace_multi_caller[], ftrace_multi_caller_op_ptr[],
	ftrace_multi_caller_seg[], ftrace_multi_caller_seg_op[], ftrace_multi_caller_call[],
	ftrace_multi_caller_done[], ftrace_multi_caller_end[],
	ftrace_multi_caller_novec[], ftrace_multi_caller_novec_op_ptr[],
	ftrace_multi_caller_novec_seg[], ftrace_multi_caller_novec_seg_op[],
	ftrace_multi_caller_novec_call[], ftrace_multi_caller_novec_done[],
	ftrace_multi_caller_novec_end[],
	ftrace_regs_multi_caller[], ftrace_regs_multi_caller_op_ptr[],
	ftrace_regs_multi_caller_seg[], ftrace_regs_multi_caller_seg_op[],
	ftrace_regs_multi_caller_call[], ftrace_regs_multi_caller_done[],
	ftrace_regs_multi_caller_end[], ftrace_multi_caller_fallback[],
	ftrace_multi_caller_fallback_end[], ftrace_multi_caller_novec_fallback[],
	ftrace_multi_caller_novec_fallback_end[], ftrace_regs_multi_caller_fallback[],
	ftrace_regs_multi_caller_fallback_end[],
	ftrace_direct_fexit[], ftrace_direct_fexit_data[], ftrace_direct_fexit_end[],
	ftrace_callops_caller[], ftrace_callops_caller_end[],
	ftrace_callops_caller_novec[], ftrace_callops_caller_novec_end[];
/* the callback of a set in a cell served by the lean CALL_OPS caller (ops.private: its
 * NULL-terminated array of ops) */
void ftrace_callops_set_novec(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			      struct ftrace_regs *fregs);

void ftrt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));


/*
 * The signal the core's rounds (synchronise, park) send to every thread, or 0 where none
 * can be had.  A thread of the runtime that blocks the program's signals leaves this one
 * unblocked: it answers the rounds at once instead of being judged from /proc, and it
 * can be parked while code changes.
 */
int ftrt_sync_signal(void);

/*
 * Called after a rescan that found objects loaded or unloaded (not after the first scan),
 * under the core's lock: the tracers record the memory map then (trace_buf.c). Weak: the
 * core works without the tracers.
 */
void ftrt_objects_changed(void) __attribute__((weak));

/*
 * Called after a dlopen (or ftrace_dlopen/ftrace_rescan) that loaded objects with call
 * sites, once the core's lock is released: the tracers apply their name lists again, so
 * names of a library loaded later match (trace.c).  Weak, as above.
 */
void ftrt_objects_added(void) __attribute__((weak));

#endif /* FTRT_CORE_H */
