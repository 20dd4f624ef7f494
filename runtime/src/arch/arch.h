/* SPDX-License-Identifier: Apache-2.0 */
/*
 * arch.h - what an architecture gives the core (src/core) and the tracers (src/tracers).
 *
 * Each architecture lives in src/arch/<arch>/ (the Makefile picks it from the compiler's
 * target and puts it on the include path): its asm.h holds the constants and inline
 * functions below, its .c and .S files the rest.  Nothing outside src/arch/<arch> knows an
 * instruction encoding, a register name or a signal frame layout; a new architecture
 * implements every item of this file, the generated trampoline templates
 * (ftrt_core.h: "Template symbols") and the assembly entry points listed at the end.
 *
 * Constants and inline functions asm.h provides:
 *
 *   FTRT_ARCH_ELF_MACHINE	the e_machine of the objects the runtime reads
 *
 *   Call sites (what -pg -mfentry leaves at a function's entry):
 *   FTRT_ARCH_SITE_MAX		largest site, in bytes
 *   ftrt_arch_site_len_ok(len)	is len a site length the tables may record?
 *   ftrt_arch_nop(len)		the nop a site of len bytes holds when off
 *   ftrt_arch_make_call(buf, ip, target, len)
 *				the bytes of a len-byte site at ip calling target
 *   ftrt_arch_call_target(ip, rel), ftrt_arch_call_rel(ip, target),
 *   ftrt_arch_call_reaches(ip, target)
 *				a site's call as the record keeps it: its displacement
 *				(struct ftrt_rec.rel), and whether target is in reach
 *   ftrt_arch_callops_slot(ip)	the CALL_OPS slot of the site at ip (the 8 bytes
 *				before its function), as the CALL_OPS caller finds it
 *
 *   ftrt_arch_rec_ip(site, len)	the address of the instruction the runtime switches
 *				between nop and call, for the table's site of len bytes
 *				(x86-64: the site; arm64: its last 4-byte nop)
 *   FTRT_ARCH_SITE_PREPARE	1: sites need ftrt_arch_site_prepare() when loaded
 *   FTRT_ARCH_CALLOPS		can a site use the CALL_OPS caller (1) or not (0)?
 *   ftrt_arch_callops_nops()	the 8 bytes a CALL_OPS slot holds before it is used
 *
 *   Trampolines (core/ftrace_tramp.c, tramp_<arch>.c):
 *   FTRT_ARCH_REACH		how far from a site its call reaches, less a margin
 *   FTRT_ARCH_ARENA_HINT	distance below the objects to ask for an arena at, as a
 *				last resort
 *   FTRT_ARCH_FILL		the byte a trampoline page is filled with (a trap)
 *   FTRT_ARCH_RET_LEN		length of the return ftrt_arch_put_ret() writes
 *
 *   Live patching (core/poke.c, core/sync.c):
 *   FTRT_ARCH_SITE_ATOMIC	1: every transition is one aligned store of the whole site
 *				(a 4-byte instruction, single-copy atomic): no breakpoint,
 *				written, cache made coherent (__builtin___clear_cache) and
 *				all threads context-synchronised; 0: the breakpoint protocol
 *   FTRT_ARCH_BREAKPOINT	the one-byte trap written on a site's first byte (unused
 *				when FTRT_ARCH_SITE_ATOMIC)
 *   FTRT_ARCH_SIGFRAME_PC_OFF, FTRT_ARCH_SIGFRAME_SP_OFF
 *				where the interrupted pc and stack pointer lie in a
 *				signal frame, from the frame's start
 *
 *   Tracers:
 *   FTRT_ARCH_RET_IN_FRAME_RECORD	1: a hooked function keeps its return address in its
 *				frame record ({fp, lr} on the frame-pointer chain), not in the
 *				return slot the trampoline gave the graph tracer
 *   ftrt_arch_ret_strip(v)	a return address as a function saved it in its frame
 *				record, without its pointer authentication code (arm64 pac-ret)
 *   ftrt_arch_ret_resign(v, stored, entry_sp, ip)
 *				what to store over stored, the return address the function
 *				at ip saved, for it to read v: signed as stored was (x86-64: v)
 *   FTRT_ARCH_CALLBACK		attribute of an ftrace_ops callback (what the entry
 *				from a trampoline needs, e.g. realigning the stack)
 *   ftrt_arch_lean_call(fn, ip, parent_ip, op, fregs)
 *				how a callback that may be run by the lean template calls
 *				fn (its slow path) with its own arguments: the arch saves
 *				first what that template left out (x86-64: xmm0..xmm7, the
 *				frame's ip and sp) and realigns the stack
 *   ftrt_arch_return_slot(fregs)	the traced function's return slot from any caller's
 *				frame, a lean one too (which fills no sp field)
 *   ftrt_arch_cpu_relax()	the spin-wait hint (pause, yield)
 *   ftrt_arch_sync_core()	serialise this core's instruction fetch (cpuid, isb): a
 *				thread parked while code changed, before it runs on
 *   ftrt_arch_cycles()		the cycle counter (the trace clock's fast source)
 *   ftrt_arch_cycles_constant()	does it tick at a constant rate in every power state?
 *
 *   ftrace_frame.h (generated with the templates): the trampolines' register frame,
 *   FTRT_FRAME_*, and the ready direct trampolines' parameters, FTRT_DIRECT_*.
 */
#ifndef FTRT_ARCH_H
#define FTRT_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "asm.h"		/* src/arch/<arch>/asm.h */

struct ftrt_poke_site;
struct ftrt_object;
struct ftrace_regs;

/* ---- call sites (site_<arch>.c) -------------------------------------------------------- */

/*
 * The one-time change the site whose record is at ip needs before its first enable, written
 * when its object is loaded (arm64: the nop before it becomes mov x9, x30), as one poke:
 * 1, or 0 when none is needed (x86-64, or already done).
 */
struct ftrt_poke;
int ftrt_arch_site_prepare(uintptr_t ip, struct ftrt_poke *pk);

/*
 * The length of the site at b if it holds a call that may be one to __fentry__ or the nop
 * the tools leave (*isnop set), else 0.  want: the length the table says the site had in
 * the object file, or -1 when the table does not say.
 */
unsigned ftrt_arch_fentry_site(const unsigned char *b, int want, int *isnop);

/*
 * Where the call of len bytes at b goes: its target, or with *via_got set the address of
 * the GOT slot it calls through.
 */
uintptr_t ftrt_arch_site_call_dest(const unsigned char *b, unsigned len, int *via_got);

/* Is t a PLT stub (a jump through a GOT slot)? */
int ftrt_arch_plt_stub(const unsigned char *t);

/*
 * A PLT entry at b (after any entry marker): 1 and the GOT slot it jumps through, or 0.
 * ftrt_arch_skip_entry_marker(): b past a function's entry marker (endbr64, bti), or b.
 */
int ftrt_arch_plt_slot(const unsigned char *b, uintptr_t *slot);
const unsigned char *ftrt_arch_skip_entry_marker(const unsigned char *b);

/*
 * Why the site at b is not at the entry of its function (so the return address is not at
 * the top of the stack there), or NULL.  before: how many bytes before b are code of the
 * same segment, at most FTRT_ARCH_SITE_LOOKBACK.
 */
const char *ftrt_arch_site_not_at_entry(const unsigned char *b, unsigned before);

/* ---- trampolines (insn_<arch>.c) ------------------------------------------------------- */

/*
 * Does func provably need none of what the lean template (ftrace_caller_novec) leaves out
 * (on x86-64: the vector registers; the frame unless frame is set: its owner says it reads
 * only the integer registers of it) and call nothing but through ftrt_arch_lean_call?
 */
int ftrt_arch_scalar_leaf(const void *func, int frame);

/*
 * Clones of the templates (tramp_<arch>.c), in a page ftrace_tramp.c has filled with
 * FTRT_ARCH_FILL:
 * ftrt_arch_put_ret(): the return instruction (FTRT_ARCH_RET_LEN bytes) at p.
 * ftrt_arch_tramp_size(): the bytes a per-ops clone of [start, start + size) takes (op-slot
 * load at op_off, call at call_off), or 0 when the template is not what the code expects.
 * ftrt_arch_tramp_fill(): write it: the load re-pointed at slot, the call aimed at func
 * (through a stub after the code when func is out of reach), the return after the end.
 * ftrt_arch_multi_size(), ftrt_arch_multi_fill(): the same for a multi-ops trampoline of n
 * ops (ftrace_tramp.c); size 0: the architecture has none; *bad: the template is not what
 * the code expects; fill: -1 when fallback is out of reach.
 * ftrt_arch_fexit_ok(), ftrt_arch_fexit_fill(): the block load at ftrace_direct_fexit_data.
 */
struct ftrace_ops;
typedef void (*ftrt_arch_func_t)(unsigned long, unsigned long, struct ftrace_ops *,
				 struct ftrace_regs *);
struct ftrt_multi_tmpl {
	const unsigned char *start, *op_ptr, *seg, *seg_op, *call, *done, *end, *fb, *fb_end;
};
/*
 * Where the pieces of a multi-ops clone of n segments lie, from its template: the
 * prologue, n segments, the epilogue, the return (FTRT_ARCH_RET_LEN), the fallback, then a
 * 16-byte stub per ops from the first 8-aligned offset (the same on every architecture).
 */
struct ftrt_multi_layout {
	size_t pro, seg, epi;		/* prologue, one segment, epilogue (without the return) */
	size_t op_off;			/* the prologue's op-slot load */
	size_t imm_off, call_off;	/* a segment's ops immediate and call */
	size_t fbl;			/* the fallback */
	size_t stubs;			/* the first stub */
};

static inline void ftrt_multi_layout(const struct ftrt_multi_tmpl *m, unsigned n,
				     struct ftrt_multi_layout *l)
{
	l->pro = (size_t)(m->seg - m->start);
	l->seg = (size_t)(m->done - m->seg);
	l->epi = (size_t)(m->end - m->done);
	l->op_off = (size_t)(m->op_ptr - m->start);
	l->imm_off = (size_t)(m->seg_op - m->seg);
	l->call_off = (size_t)(m->call - m->seg);
	l->fbl = (size_t)(m->fb_end - m->fb);
	l->stubs = (l->pro + n * l->seg + l->epi + FTRT_ARCH_RET_LEN + l->fbl + 7) & ~(size_t)7;
}

void ftrt_arch_put_ret(unsigned char *p);
size_t ftrt_arch_tramp_size(const unsigned char *start, size_t size, size_t op_off,
			    size_t call_off);
void ftrt_arch_tramp_fill(unsigned char *code, const unsigned char *start, size_t size,
			  size_t op_off, size_t call_off, uintptr_t slot, uintptr_t func);
size_t ftrt_arch_multi_size(const struct ftrt_multi_tmpl *m, unsigned n, int *bad);
int ftrt_arch_multi_fill(unsigned char *code, const struct ftrt_multi_tmpl *m, unsigned n,
			 uintptr_t slot, struct ftrace_ops *const *vec,
			 const ftrt_arch_func_t *funcs, uintptr_t fallback);
int ftrt_arch_fexit_ok(const unsigned char *data);
void ftrt_arch_fexit_fill(unsigned char *data, uintptr_t block);

/* ---- live patching (poke_<arch>.c) ----------------------------------------------------- */

/*
 * ftrt_arch_check(): validate one transition; returns 0 and sets *early (0 or the offset
 * from which bytes of new may and must be written before the breakpoint), or -EINVAL with
 * a static reason in *why.  ftrt_arch_check_rules() (x86-64): the same verdict without the
 * shortcuts for common transitions (for the tests).
 * ftrt_arch_emulate(): make the interrupted context (ucontext_t *) execute the first
 * instruction of site->new at site->addr.  Async-signal-safe.
 * ftrt_arch_site_insn(): is p the first byte of an instruction the runtime writes at sites?
 * ftrt_arch_pc(), ftrt_arch_set_pc(), ftrt_arch_sp(): a ucontext_t's pc and stack pointer.
 * ftrt_arch_code_prot(): protection bits besides PROT_READ | PROT_EXEC that the code mapping
 * holding addr has and mprotect must be given to keep (arm64: PROT_BTI), or 0.
 * ftrt_arch_probe_code(): a function of the runtime's text that returns 0 until the byte
 * at FTRT_ARCH_PROBE_OFF in it is written with FTRT_ARCH_PROBE_BYTE, then 1: the probe
 * that code written through /proc/self/mem is what the CPU (or emulator) runs.
 */
int ftrt_arch_check(const unsigned char *old, const unsigned char *new, unsigned len,
		    unsigned *early, const char **why);
int ftrt_arch_check_rules(const unsigned char *old, const unsigned char *new, unsigned len,
			  unsigned *early, const char **why);
void ftrt_arch_emulate(const struct ftrt_poke_site *site, void *uc);
int ftrt_arch_site_insn(const unsigned char *p);
uintptr_t ftrt_arch_pc(const void *uc);
void ftrt_arch_set_pc(void *uc, uintptr_t pc);
uintptr_t ftrt_arch_sp(const void *uc);
int ftrt_arch_code_prot(uintptr_t addr);
int ftrt_arch_probe_code(void);

/* ---- stack walks (unwind_<arch>.c) ----------------------------------------------------- */

/*
 * ftrt_arch_after_call(): do the 8 bytes b, which end where a word found on a stack points,
 * end with a call instruction?  (A frame-pointer walk through code that keeps no frame
 * pointers reads other words: they rarely follow a call.)
 */
int ftrt_arch_after_call(const unsigned char *b);

/*
 * ftrt_arch_syscall_at() (inline, asm.h): was the interrupted context (ucontext_t *) in a
 * system call?  Returns 1 with *nr when its pc is at a system-call instruction (the kernel
 * restarts it there, or it was about to be made) and *nr is the call's number; 2 when the
 * call was interrupted and returns -EINTR (the number is gone; only blocking waits do
 * that); else 0.  Async-signal-safe (reads the code before pc).
 */

/* ---- arguments and return values (args_<arch>.c) --------------------------------------- */

struct ftrace_regs;
struct ftrace_ret_regs;

/*
 * Locations of the argument recorder (tracers/args.c): small integers the arch defines.
 * ftrt_arch_arg_reg(): the location of a register named as specs write it ("rdi",
 * "xmm1"; ret: one a value is returned in), or -1.
 * ftrt_arch_arg_int(): the N-th (from 1) integer argument's register, or -1 with
 * *stack_off set to its stack word's offset from the entry stack pointer.
 * ftrt_arch_arg_stack_off(): the offset from the entry stack pointer of the N-th (from 1)
 * stack word of arguments (a spec's %stack+N).
 * ftrt_arch_arg_fp(): the N-th floating argument's register, or -2 (none).
 * ftrt_arch_ret_loc(): where an integer (fp = 0) or floating (fp = 1) result is.
 * ftrt_arch_arg_off(), ftrt_arch_ret_off(): where a location's 8 bytes (the low 8 of a
 * vector register) are, as a byte offset into the trampoline's frame at entry (struct
 * ftrace_regs), into return_to_handler's at exit (struct ftrace_ret_regs); -1 for none.
 * Found once per plan, so recording a value is one load.
 * ftrt_arch_arg_sp(): the stack pointer at entry (stack-passed arguments are above it).
 * ftrt_arch_ret_entry_off(): for a result location that names a register of the entry
 * (arm64's x8: the address of a result returned in memory, which the callee need not keep
 * in a register), that register's byte offset in struct ftrace_regs, else -1: the
 * tracer keeps its entry value in the call's frame and reads it there at exit.
 */
int ftrt_arch_arg_reg(const char *name, size_t len, int ret);
int ftrt_arch_arg_int(unsigned n, unsigned *stack_off);
unsigned ftrt_arch_arg_stack_off(unsigned n);
int ftrt_arch_arg_fp(unsigned n);
int ftrt_arch_ret_loc(int fp);
int ftrt_arch_arg_off(int loc);
int ftrt_arch_ret_off(int loc);
unsigned long ftrt_arch_arg_sp(const struct ftrace_regs *fregs);
int ftrt_arch_ret_entry_off(int loc);

/*
 * Assembly entry points (<arch>'s .S files):
 *   __fentry__, ftrace_stub, the trampoline templates	(ftrace_<arch>.S, by trampgen)
 *   return_to_handler: where a hooked return lands; calls fgraph_return_hook(sp, regs)
 *	(fgraph_return of fgraph.c, or a fused user's: fgraph_fast.h) and returns to what it
 *	answers, the return value registers kept			(fgraph_<arch>.S)
 *   dlopen, dlclose: the runtime's, calling ftrt_dlopen_hooked / ftrt_dlclose_hooked
 *	(ftrace_core.c) around the C library's			(ftrace_dl_<arch>.S)
 */
extern void return_to_handler(void);

#endif /* FTRT_ARCH_H */
