/*
 * check.h - helpers of the runtime's C test programs: checks that report and count
 * failures, and decoding of what a call site really calls (site bytes, trampoline op slot
 * and call target), independent of the runtime's own bookkeeping.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftrace.h>

static int failures;

#define CHECK(cond) do { if (!(cond)) { failures++; \
	fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); if (_a != _b) { \
	failures++; fprintf(stderr, "%s:%d: FAIL: %s == %lld, want %s == %lld\n", __FILE__, \
	__LINE__, #a, _a, #b, _b); } } while (0)

#define NOINLINE __attribute__((noinline))
#define CB ftrace_notrace __attribute__((unused))

/* Template symbols (ftrace_x86_64.S) and runtime internals the tests decode against. */
extern const unsigned char ftrace_caller[], ftrace_caller_op_ptr[], ftrace_call[],
	ftrace_regs_caller[], ftrace_regs_caller_op_ptr[], ftrace_regs_call[],
	ftrace_caller_novec[], ftrace_caller_novec_op_ptr[], ftrace_novec_call[];
extern const unsigned char ftrace_multi_caller[], ftrace_multi_caller_seg[],
	ftrace_multi_caller_seg_op[], ftrace_multi_caller_call[], ftrace_multi_caller_done[],
	ftrace_multi_caller_novec[], ftrace_multi_caller_novec_seg[],
	ftrace_multi_caller_novec_seg_op[], ftrace_multi_caller_novec_call[],
	ftrace_multi_caller_novec_done[], ftrace_regs_multi_caller[],
	ftrace_regs_multi_caller_seg[], ftrace_regs_multi_caller_seg_op[],
	ftrace_regs_multi_caller_call[], ftrace_regs_multi_caller_done[];
extern struct ftrace_ops ftrt_list_ops;
void ftrt_list_func(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *);
void ftrt_recursion_assist(unsigned long, unsigned long, struct ftrace_ops *,
			   struct ftrace_regs *);

static CB int32_t rd32(const unsigned char *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* Follow an e8 rel32 (and the trampoline's "jmp *0(%rip)" stub if it leads there). */
static CB uintptr_t call_dest(const unsigned char *insn)
{
	uintptr_t d;

	if (insn[0] != 0xe8)
		return 0;
	d = (uintptr_t)insn + 5 + rd32(insn + 1);
	if (((unsigned char *)d)[0] == 0xff && ((unsigned char *)d)[1] == 0x25 && !rd32((unsigned char *)d + 2))
		memcpy(&d, (unsigned char *)d + 6, 8);
	return d;
}

struct decoded {
	uintptr_t site, target;		/* what the site calls (0: nop) */
	int regs;			/* target is a clone of the regs caller */
	int novec;			/* target is a clone of ftrace_caller_novec */
	struct ftrace_ops *slot;	/* the ops its op_ptr instruction loads */
	uintptr_t func;			/* what its call instruction calls */
	int len;
};

/* Decode the site of function fn from memory. */
static CB struct decoded decode(void *fn)
{
	struct decoded d;

	memset(&d, 0, sizeof(d));
	struct ftrace_func_info fi;
	const unsigned char *s, *t;
	size_t op_off, call_off;

	if (ftrace_lookup_function((unsigned long)fn, &fi)) {
		fprintf(stderr, "no site for %p\n", fn);
		return d;
	}
	d.site = fi.ip;
	s = (const unsigned char *)fi.ip;
	d.len = fi.len;
	if (s[0] != 0xe8)
		return d;
	d.target = (uintptr_t)s + 5 + rd32(s + 1);
	t = (const unsigned char *)d.target;
	d.regs = !memcmp(t, ftrace_regs_caller, 16);
	d.novec = !memcmp(t, ftrace_caller_novec, 16);
	if (d.regs) {
		op_off = (size_t)(ftrace_regs_caller_op_ptr - ftrace_regs_caller);
		call_off = (size_t)(ftrace_regs_call - ftrace_regs_caller);
	} else if (d.novec) {
		op_off = (size_t)(ftrace_caller_novec_op_ptr - ftrace_caller_novec);
		call_off = (size_t)(ftrace_novec_call - ftrace_caller_novec);
	} else if (!memcmp(t, ftrace_caller, 16)) {
		op_off = (size_t)(ftrace_caller_op_ptr - ftrace_caller);
		call_off = (size_t)(ftrace_call - ftrace_caller);
	} else {
		return d;
	}
	if (t[op_off] != 0x48 || t[op_off + 1] != 0x8b || t[op_off + 2] != 0x15)
		return d;
	memcpy(&d.slot, t + op_off + 7 + rd32(t + op_off + 3), sizeof(d.slot));
	d.func = call_dest(t + call_off);
	return d;
}

/* fn's site is a nop of its length. */
static CB int is_nop(void *fn)
{
	struct decoded d = decode(fn);
	const unsigned char *s = (const unsigned char *)d.site;

	if (!s)
		return 0;
	if (d.len == 5)
		return !memcmp(s, "\x0f\x1f\x44\x00\x00", 5);
	return !memcmp(s, "\x66\x0f\x1f\x44\x00\x00", 6) || !memcmp(s, "\x0f\x1f\x44\x00\x00\x90", 6);
}

/* ---- CALL_OPS (programs built with -fpatchable-function-entry=8,8) --------------------- */

extern const unsigned char ftrace_callops_caller[], ftrace_callops_caller_end[],
	ftrace_callops_caller_novec[], ftrace_callops_caller_novec_end[];
void ftrt_callops_func(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *);
void ftrace_callops_set_novec(unsigned long, unsigned long, struct ftrace_ops *,
			      struct ftrace_regs *);
extern struct ftrace_ops ftrt_callops_stub;
int ftrt_debug_callops_set(unsigned long ip, struct ftrace_ops *ops);
/* the runtime's set of ops in a cell (ftrace_core.c, struct ftrt_callops) */
struct callops_set {
	struct ftrace_ops ops;
	void *next;
	unsigned long refs;
	unsigned n;
	int lean;
	struct ftrace_ops *vec[];
};

/* What the cell of fn's CALL_OPS site holds, read through the slot before fn; 0 if fn's
 * site does not call the CALL_OPS caller. */
static CB struct ftrace_ops *callops_cell(void *fn)
{
	struct decoded d = decode(fn);
	uintptr_t *cell;

	/* copied whole (their first bytes are ftrace_caller's / ftrace_caller_novec's) */
	if (!d.target || (memcmp((const void *)d.target, ftrace_callops_caller,
				 (size_t)(ftrace_callops_caller_end - ftrace_callops_caller)) &&
			  memcmp((const void *)d.target, ftrace_callops_caller_novec,
				 (size_t)(ftrace_callops_caller_novec_end -
					  ftrace_callops_caller_novec))))
		return NULL;
	memcpy(&cell, (const void *)((d.site - 8) & ~(uintptr_t)7), sizeof(cell));
	return (struct ftrace_ops *)__atomic_load_n(cell, __ATOMIC_ACQUIRE);
}

/* fn's site calls the CALL_OPS caller and its cell runs exactly the n ops of want. */
static CB int calls_callops(void *fn, int n, struct ftrace_ops **want)
{
	struct ftrace_ops *v = callops_cell(fn);
	const struct callops_set *c = (const struct callops_set *)v;
	int i;

	if (!v)
		return 0;
	if (n == 1 && !(want[0]->flags & FTRACE_OPS_FL_RECURSION))
		return v == want[0];
	if ((v->func != ftrt_callops_func && v->func != ftrace_callops_set_novec) ||
	    c->n != (unsigned)n || v->FTRACE_PRIVATE != (void *)c->vec)
		return 0;
	for (i = 0; i < n; i++)
		if (c->vec[i] != want[i])
			return 0;
	return !c->vec[n];
}

/* Built for CALL_OPS and not turned off with FTRT_CALLOPS=0. */
static CB int callops_on(void)
{
#ifdef FTRT_TEST_CALLOPS
	const char *e = getenv("FTRT_CALLOPS");

	return !(e && !strcmp(e, "0"));
#else
	return 0;
#endif
}

#define CALLOPS_NOT (FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED | \
		     FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_DIRECT)

/* fn's site calls ops' own trampoline, which passes ops and calls its callback (a CALL_OPS
 * site: the CALL_OPS caller with ops in its cell). */
static CB int calls_tramp_of(void *fn, struct ftrace_ops *ops)
{
	struct decoded d = decode(fn);

	if (callops_on() && !(ops->flags & CALLOPS_NOT))
		return calls_callops(fn, 1, &ops);
	uintptr_t want = (ops->flags & FTRACE_OPS_FL_RECURSION) ?
		(uintptr_t)ftrt_recursion_assist : (uintptr_t)ops->func;

	return d.target && d.slot == ops && d.func == want &&
	       d.regs == !!(ops->flags & (FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED));
}

/* fn's site calls a shared caller running the list function. */
static CB int calls_list(void *fn, int regs)
{
	struct decoded d = decode(fn);

	return d.target && d.slot == &ftrt_list_ops && d.func == (uintptr_t)ftrt_list_func &&
	       d.regs == regs;
}

/*
 * fn's site calls a multi-ops trampoline running exactly the n ops of want (in this order),
 * each with its own callback (want NULL: any n ops); regs: the regs variant.  Decoded from the clone's segments.
 */
static CB int calls_multi(void *fn, int regs, int n, struct ftrace_ops **want)
{
	static const struct {
		const unsigned char *start, *seg, *seg_op, *call, *done;
	} k[3] = {
		{ ftrace_multi_caller, ftrace_multi_caller_seg, ftrace_multi_caller_seg_op,
		  ftrace_multi_caller_call, ftrace_multi_caller_done },
		{ ftrace_multi_caller_novec, ftrace_multi_caller_novec_seg,
		  ftrace_multi_caller_novec_seg_op, ftrace_multi_caller_novec_call,
		  ftrace_multi_caller_novec_done },
		{ ftrace_regs_multi_caller, ftrace_regs_multi_caller_seg,
		  ftrace_regs_multi_caller_seg_op, ftrace_regs_multi_caller_call,
		  ftrace_regs_multi_caller_done },
	};
	struct decoded d = decode(fn);
	const unsigned char *t = (const unsigned char *)d.target, *p;
	int i, j;

	if (!t)
		return 0;
	for (i = 0; i < 3; i++)
		if (!memcmp(t, k[i].start, 16))
			break;
	if (i == 3 || (i == 2) != !!regs)
		return 0;
	{
		size_t pro = (size_t)(k[i].seg - k[i].start), seg = (size_t)(k[i].done - k[i].seg);
		size_t imm = (size_t)(k[i].seg_op - k[i].seg), call = (size_t)(k[i].call - k[i].seg);

		p = t + pro;
		for (j = 0; j < n; j++, p += seg) {
			struct ftrace_ops *op;
			uintptr_t want_fn;

			if (memcmp(p, k[i].seg, imm + 2))
				return 0;
			memcpy(&op, p + imm + 2, sizeof(op));
			if (!want) {	/* any ops: its own callback */
				want_fn = (op->flags & FTRACE_OPS_FL_RECURSION) ?
					(uintptr_t)ftrt_recursion_assist : (uintptr_t)op->func;
				if (call_dest(p + call) != want_fn)
					return 0;
				continue;
			}
			want_fn = (want[j]->flags & FTRACE_OPS_FL_RECURSION) ?
				(uintptr_t)ftrt_recursion_assist : (uintptr_t)want[j]->func;
			if (op != want[j] || call_dest(p + call) != want_fn)
				return 0;
		}
		/* no further segment: the epilogue follows */
		return !memcmp(p, k[i].done, 8);
	}
}

/* Multi-ops trampolines turned off (FTRT_MULTI=0): shared sites run the list function. */
static CB int multi_off(void)
{
	const char *e = getenv("FTRT_MULTI");

	return e && !strcmp(e, "0");
}

/* fn's site runs exactly the ops listed (in the runtime's list order: latest first). */
#define CALLS_SET(fn, regs, ...) ( \
	callops_on() && !(regs) ? calls_callops((void *)(fn), \
		(int)(sizeof((struct ftrace_ops *[]){ __VA_ARGS__ }) / sizeof(struct ftrace_ops *)), \
		(struct ftrace_ops *[]){ __VA_ARGS__ }) : \
	multi_off() ? calls_list((void *)(fn), regs) : \
	calls_multi((void *)(fn), regs, (int)(sizeof((struct ftrace_ops *[]){ __VA_ARGS__ }) / \
		sizeof(struct ftrace_ops *)), (struct ftrace_ops *[]){ __VA_ARGS__ }))

/* ---- /proc/self/maps ------------------------------------------------------------------ */

/*
 * Count the mappings that are writable and executable at once (W^X broken); the first one
 * is described in bad (if not NULL).  -1 if the maps cannot be read.
 */
static CB int maps_wx(char *bad, size_t badlen)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char perm[8];

		if (sscanf(line, "%*x-%*x %7s", perm) != 1)
			continue;
		if (perm[1] == 'w' && perm[2] == 'x') {
			if (!n++ && bad)
				snprintf(bad, badlen, "%s", line);
		}
	}
	fclose(f);
	return n;
}

/* The permissions ("r-xp", "---p", ...) of the mapping holding addr, into perm[5]; 0 or -1. */
static CB int maps_perm(uintptr_t addr, char perm[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char p[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, p) == 3 && addr >= lo && addr < hi) {
			memcpy(perm, p, 4);
			perm[4] = 0;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

#define DONE() do { if (failures) { fprintf(stderr, "%d failure(s)\n", failures); return 1; } \
	printf("ok\n"); return 0; } while (0)

#endif
