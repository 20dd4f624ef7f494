/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asm.h - arm64 (aarch64) constants and inline functions for arch.h (which documents them).
 * Included through arch.h only.
 *
 * Sites: gcc has no -mfentry on aarch64; functions are built with
 * -fpatchable-function-entry=2 (the kernel's DYNAMIC_FTRACE_WITH_ARGS layout): two nops at
 * the entry, after bti c when there is one.  The table's site is the first nop (8 bytes of
 * nops); the runtime's record is the second (ftrt_arch_rec_ip).  At load time the first
 * becomes mov x9, x30 (ftrt_arch_site_prepare, as the kernel's ftrace_init_nop); the second
 * is switched between nop and bl <trampoline>, one aligned 4-byte store each time.
 * -fpatchable-function-entry=4,2 adds the CALL_OPS slot: two nops before the function.
 */
#ifndef FTRT_ASM_ARM64_H
#define FTRT_ASM_ARM64_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <elf.h>

#include "ftrace_frame.h"

/* The ELF machine of the objects the runtime reads. */
#define FTRT_ARCH_ELF_MACHINE	EM_AARCH64

#define FTRT_ARM64_NOP		0xd503201fu	/* nop */
#define FTRT_ARM64_MOV_X9_X30	0xaa1e03e9u	/* mov x9, x30 (orr x9, xzr, x30) */
#define FTRT_ARM64_BL		0x94000000u	/* bl imm26 */
#define FTRT_ARM64_BTI_C	0xd503245fu	/* bti c */

/* The patched instruction is one word; the table's sites are 8 bytes (two nops). */
#define FTRT_ARCH_SITE_MAX	8
#define FTRT_ARCH_CALL_SIZE	4
/* nothing before a site tells it is not at its function's entry (recordmcount checked) */
#define FTRT_ARCH_SITE_LOOKBACK	0

static inline int ftrt_arch_site_len_ok(unsigned len)
{
	return len == 8;
}

/* The bl goes on the last nop of the site: the kernel's rec->ip. */
static inline uintptr_t ftrt_arch_rec_ip(uintptr_t site, unsigned len)
{
	return site + len - 4;
}

static inline const unsigned char *ftrt_arch_nop(unsigned len)
{
	static const unsigned char nop[8] = { 0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5 };

	(void)len;
	return nop;
}

/* bl's displacement is from the bl itself, in words, 26 bits signed (±128 MiB). */
static inline uintptr_t ftrt_arch_call_target(uintptr_t ip, int32_t rel)
{
	return ip + (long)rel;
}

static inline int32_t ftrt_arch_call_rel(uintptr_t ip, uintptr_t target)
{
	return (int32_t)(target - ip);
}

static inline int ftrt_arch_call_reaches(uintptr_t ip, uintptr_t target)
{
	long d = (long)(target - ip);

	return !(d & 3) && d >= -(1l << 27) && d < (1l << 27);
}

static inline uint32_t ftrt_arm64_bl(uintptr_t ip, uintptr_t target)
{
	return FTRT_ARM64_BL | ((uint32_t)((long)(target - ip) >> 2) & 0x03ffffffu);
}

static inline void ftrt_arch_make_call(unsigned char *buf, uintptr_t ip, uintptr_t target,
				       unsigned len)
{
	uint32_t w = ftrt_arm64_bl(ip, target);

	(void)len;
	memcpy(buf, &w, 4);
}

/*
 * CALL_OPS: -fpatchable-function-entry=4,2 puts two more nops right before the function
 * symbol: the 8-byte slot (8-aligned when the function is).  The site's bl is the
 * function's entry + 4, or + 8 behind bti c, so its return address (x30 in
 * ftrace_callops_caller) is the entry + 8 or + 12: rounded down to 8 bytes and less 16 it
 * is the slot either way (as the kernel's ftrace_caller finds its ops literal).  A function
 * that is not 8-aligned gets another address, which rec_callops (ftrace_core.c) sees: its
 * site is served as the others.
 */
#define FTRT_ARCH_CALLOPS	1

static inline uintptr_t ftrt_arch_callops_slot(uintptr_t ip)
{
	return ((ip + 4) & ~(uintptr_t)7) - 16;
}

static inline const unsigned char *ftrt_arch_callops_nops(void)
{
	return ftrt_arch_nop(8);
}

/* mov x9, x30 goes before each site's bl once (ftrt_arch_site_prepare). */
#define FTRT_ARCH_SITE_PREPARE	1

/*
 * Trampolines: within bl reach (128 MiB, less 1 MiB); pages filled with zeros (udf #0);
 * the return after a template's end marker is ret x9 (4 bytes).
 */
#define FTRT_ARCH_REACH		((1l << 27) - (1l << 20))
#define FTRT_ARCH_ARENA_HINT	(1ul << 26)
#define FTRT_ARCH_FILL		0x00
#define FTRT_ARCH_RET_LEN	4

/*
 * Live patching: one aligned word per transition (single-copy atomic), no breakpoint.
 * FTRT_ARCH_BREAKPOINT is never written (poke.c's trap path is not used).
 */
#define FTRT_ARCH_SITE_ATOMIC	1
#define FTRT_ARCH_BREAKPOINT	0x00

/* ftrt_arch_probe_code's movz w0, #0 at 4: its low byte 0x20 makes it movz w0, #1 */
#define FTRT_ARCH_PROBE_OFF	4
#define FTRT_ARCH_PROBE_BYTE	0x20

/*
 * The graph tracer's return slot (entry sp - 8) is the trampoline's: once the function has
 * run its prologue, the return address (return_to_handler) it saved lives in its frame
 * record {x29, x30}, found by walking the frame-pointer chain (fgraph.c) when the real
 * addresses must be put back for an unwinder.
 */
#define FTRT_ARCH_RET_IN_FRAME_RECORD	1

/*
 * Pointer authentication (-mbranch-protection=standard, pac-ret): a function signs the
 * return address it saves in its frame record (paciasp or pacibsp: key A or B, modifier
 * its entry sp), so the saved return_to_handler reads signed there, and a real address
 * put back for an unwinder or a resumed context must be signed the same way (it
 * authenticates with its entry sp, the CFA).  The instructions used are in the hint
 * space: without the feature they do nothing, and every value reads unsigned.
 */
static inline unsigned long ftrt_arch_ret_strip(unsigned long v)
{
	register unsigned long x30 __asm__("x30") = v;

	__asm__("hint #7" : "+r"(x30));		/* xpaclri */
	return x30;
}

static inline unsigned long ftrt_arm64_pac(unsigned long v, unsigned long mod, int key_b)
{
	register unsigned long x17 __asm__("x17") = v;
	register unsigned long x16 __asm__("x16") = mod;

	if (key_b)
		__asm__("hint #10" : "+r"(x17) : "r"(x16));	/* pacib1716 */
	else
		__asm__("hint #8" : "+r"(x17) : "r"(x16));	/* pacia1716 */
	return x17;
}

/*
 * Does the function whose patch site is at ip sign its return address in its prologue
 * (paciasp 0xd503233f, pacibsp 0xd503237f, within a few instructions of the site)?
 * 0 no, 1 key A, 2 key B.  Code of a live frame's function: mapped.
 */
static inline int ftrt_arm64_pac_key(unsigned long ip)
{
	const unsigned int *p = (const unsigned int *)ip;

	if (!ip)
		return 0;	/* not known (an orphan's slot): taken as unsigned */
	for (int i = 0; i < 16; i++) {
		if (p[i] == 0xd503233f)
			return 1;
		if (p[i] == 0xd503237f)
			return 2;
	}
	return 0;
}

/*
 * Does this CPU (or qemu) authenticate pointers?  Without the feature the hint
 * instructions do nothing: every value would look signed with a zero code.  Two values,
 * both keys: all four codes zero by chance is one in 2^28 at the least.
 */
static inline int ftrt_arm64_pac_enabled(void)
{
	static int on = -1;

	if (on < 0) {
		unsigned long a = 0x400000UL, b = 0x7f0000001000UL;

		on = ftrt_arm64_pac(a, b, 0) != a || ftrt_arm64_pac(b, a, 0) != b ||
		     ftrt_arm64_pac(a, b, 1) != a || ftrt_arm64_pac(b, a, 1) != b;
	}
	return on;
}

/*
 * What to store over stored, the return address the function at ip (entered with
 * entry_sp) saved in its frame record, so that it reads v: v signed as stored was.  A
 * signed value tells its key by which one reproduces it.  An unsigned-looking one is
 * signed too when its code (a code of zero: one signature in 2^7 to 2^15 looks
 * unsigned) is what the function's key gives, and the function signs at all.
 */
static inline unsigned long ftrt_arch_ret_resign(unsigned long v, unsigned long stored,
						 unsigned long entry_sp, unsigned long ip)
{
	unsigned long plain = ftrt_arch_ret_strip(stored);
	int key;

	if (!ftrt_arm64_pac_enabled())
		return v;

	if (plain != stored) {
		key = ftrt_arm64_pac(plain, entry_sp, 0) == stored ? 1 :
		      ftrt_arm64_pac(plain, entry_sp, 1) == stored ? 2 : ftrt_arm64_pac_key(ip);
		return ftrt_arm64_pac(v, entry_sp, key == 2);
	}
	if ((ftrt_arm64_pac(plain, entry_sp, 0) == plain || ftrt_arm64_pac(plain, entry_sp, 1) == plain) &&
	    (key = ftrt_arm64_pac_key(ip)) != 0 && ftrt_arm64_pac(plain, entry_sp, key == 2) == plain)
		return ftrt_arm64_pac(v, entry_sp, key == 2);
	return v;
}

/*
 * A signal frame (struct rt_sigframe) starts with the siginfo (128 bytes), then the
 * ucontext; the handler is entered with sp at the frame.
 */
#define FTRT_ARCH_SIGFRAME_PC_OFF (128 + offsetof(ucontext_t, uc_mcontext.pc))
#define FTRT_ARCH_SIGFRAME_SP_OFF (128 + offsetof(ucontext_t, uc_mcontext.sp))

/* The trampolines keep sp 16-byte aligned: callbacks need no attribute. */
#define FTRT_ARCH_CALLBACK

/* No callback is run by a lean caller here (ftrt_arch_scalar_leaf says no): a plain call. */
#define ftrt_arch_lean_call(fn, ip, parent_ip, op, fregs)	(fn)(ip, parent_ip, op, fregs)

/* The traced function's return slot (no lean frames here). */
#define ftrt_arch_return_slot(fregs)	ftrace_regs_get_return_slot(fregs)

/* A spin-wait hint. */
static inline void ftrt_arch_cpu_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}

/* A context synchronisation event on this core (code written by others is seen). */
static inline void ftrt_arch_sync_core(void)
{
	__asm__ volatile("isb" ::: "memory");
}

/*
 * The generic timer's virtual count (cntvct_el0, readable from EL0 on Linux): its
 * frequency (cntfrq_el0) is fixed by the system, and it ticks in every power state.
 */
static inline uint64_t ftrt_arch_cycles(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static inline int ftrt_arch_cycles_constant(void)
{
	return 1;
}

/* ftrt_arch_syscall_at() (arch.h): svc #0, the number in x8, which a restart leaves as
 * it was */
static inline int ftrt_arch_syscall_at(const void *ucv, long *nr)
{
	const mcontext_t *m = &((const ucontext_t *)ucv)->uc_mcontext;
	const uint32_t *pc = (const uint32_t *)m->pc;

	if (pc[0] == 0xd4000001) {
		*nr = (long)m->regs[8];
		return 1;
	}
	if (pc[-1] == 0xd4000001 && (long)m->regs[0] == -4 /* -EINTR */)
		return 2;
	return 0;
}

#endif /* FTRT_ASM_ARM64_H */
