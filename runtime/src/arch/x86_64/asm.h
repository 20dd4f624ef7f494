/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asm.h - x86-64's constants and inline functions for arch.h (which documents them).
 * Included through arch.h only.
 */
#ifndef FTRT_ASM_X86_64_H
#define FTRT_ASM_X86_64_H

#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <elf.h>

#include "ftrace_frame.h"

/* The ELF machine of the objects the runtime reads. */
#define FTRT_ARCH_ELF_MACHINE	EM_X86_64

/*
 * Call sites: e8 rel32 (5 bytes), or 6 bytes where the call went through the GOT (ff 15,
 * relaxed by the linker to 67 e8): on, e8 rel32 90; off, a nop of the site's length.
 */
#define FTRT_ARCH_SITE_MAX	6
#define FTRT_ARCH_CALL_SIZE	5
/* the prologue ends site_not_at_entry looks for: up to sub $imm32,%rsp (7 bytes) */
#define FTRT_ARCH_SITE_LOOKBACK	7

static inline int ftrt_arch_site_len_ok(unsigned len)
{
	return len == 5 || len == 6;
}

/* The call is the site itself. */
static inline uintptr_t ftrt_arch_rec_ip(uintptr_t site, unsigned len)
{
	(void)len;
	return site;
}

/* No site needs preparing (ftrt_arch_site_prepare). */
#define FTRT_ARCH_SITE_PREPARE	0

/*
 * CALL_OPS: -pg -mfentry -fpatchable-function-entry=8,8 (ftrace_callops_caller); the slot
 * holds 8 one-byte nops until the runtime points it at a cell.
 */
#define FTRT_ARCH_CALLOPS	1

static inline const unsigned char *ftrt_arch_callops_nops(void)
{
	static const unsigned char nops[8] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };

	return nops;
}

/* Trampolines: within rel32 reach (2 GiB, less 1 MiB), pages filled with int3, ret. */
#define FTRT_ARCH_REACH		((1l << 31) - (1l << 20))
#define FTRT_ARCH_ARENA_HINT	(1ul << 30)
#define FTRT_ARCH_FILL		0xcc
#define FTRT_ARCH_RET_LEN	1

static inline const unsigned char *ftrt_arch_nop(unsigned len)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };

	return len == 6 ? nop6 : nop5;
}

static inline uintptr_t ftrt_arch_call_target(uintptr_t ip, int32_t rel)
{
	return ip + FTRT_ARCH_CALL_SIZE + (long)rel;
}

/*
 * CALL_OPS: the 8-byte slot before the function of the site at ip.  The function's entry is
 * the site or, after endbr64, the site - 4; the slot ends at the entry and is 8-byte
 * aligned, so it is (ip - 8) & ~7 in both cases (what ftrace_callops_caller computes).
 */
static inline uintptr_t ftrt_arch_callops_slot(uintptr_t ip)
{
	return (ip - 8) & ~(uintptr_t)7;
}

static inline int32_t ftrt_arch_call_rel(uintptr_t ip, uintptr_t target)
{
	return (int32_t)(target - (ip + FTRT_ARCH_CALL_SIZE));
}

static inline int ftrt_arch_call_reaches(uintptr_t ip, uintptr_t target)
{
	long d = (long)(target - (ip + FTRT_ARCH_CALL_SIZE));

	return d == (long)(int32_t)d;
}

static inline void ftrt_arch_make_call(unsigned char *buf, uintptr_t ip, uintptr_t target,
				       unsigned len)
{
	int32_t d = ftrt_arch_call_rel(ip, target);

	buf[0] = 0xe8;
	memcpy(buf + 1, &d, 4);
	if (len == 6)
		buf[5] = 0x90;
}

/* Live patching: sites of 5 and 6 bytes, the breakpoint protocol. */
#define FTRT_ARCH_SITE_ATOMIC	0
/* the graph tracer's return slot is where the return address stays */
#define FTRT_ARCH_RET_IN_FRAME_RECORD	0

/* Return addresses are stored as they are (no pointer authentication). */
static inline unsigned long ftrt_arch_ret_strip(unsigned long v) { return v; }
static inline unsigned long ftrt_arch_ret_resign(unsigned long v, unsigned long stored,
						 unsigned long entry_sp, unsigned long ip)
{
	(void)stored;
	(void)entry_sp;
	(void)ip;
	return v;
}
#define FTRT_ARCH_BREAKPOINT 0xcc	/* int3 */
/* ftrt_arch_probe_code's mov $0, %eax at 4: its immediate's low byte at 5 */
#define FTRT_ARCH_PROBE_OFF 5
#define FTRT_ARCH_PROBE_BYTE 0x01
/* A signal frame (rt_sigframe) starts with the handler's return address (sa_restorer). */
#define FTRT_ARCH_SIGFRAME_PC_OFF (8 + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RIP)
#define FTRT_ARCH_SIGFRAME_SP_OFF (8 + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RSP)

/*
 * ftrace_ops callbacks may be entered with %rsp % 16 == 8 (gcc's
 * -fipa-stack-alignment calls some functions with a stack that is not
 * 16-byte aligned, and __fentry__ comes first): realign.
 */
#define FTRT_ARCH_CALLBACK	__attribute__((force_align_arg_pointer))

struct ftrace_ops;
struct ftrace_regs;
/* trampgen's ftrt_lean_call (leanCall): the call out of a lean callback. */
__attribute__((visibility("hidden"))) void
ftrt_lean_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
	       struct ftrace_regs *fregs,
	       void (*fn)(unsigned long, unsigned long, struct ftrace_ops *, struct ftrace_regs *));
#define ftrt_arch_lean_call(fn, ip, parent_ip, op, fregs)	ftrt_lean_call(ip, parent_ip, op, fregs, fn)

/*
 * The traced function's return slot, from any frame, a lean caller's too: that one fills
 * no sp field, but every caller's frame lies right below the site's return address and
 * the slot (ftrt_lean_call relies on the same layout).
 */
static inline unsigned long *ftrt_arch_return_slot(struct ftrace_regs *fregs)
{
	const unsigned long *f = (const unsigned long *)fregs;

	if (f[FTRT_FRAME_FULL / 8] == FTRT_FRAME_FULL_LEAN)
		return (unsigned long *)((char *)fregs + FTRT_FRAME_SIZE + 8);
	return (unsigned long *)f[FTRT_FRAME_SP / 8];
}

/* A spin-wait hint. */
static inline void ftrt_arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

/* Serialise this core's instruction stream (cpuid: architecturally serialising at any
   privilege level; a VM exit under a hypervisor, so only off the hot paths). */
static inline void ftrt_arch_sync_core(void)
{
	unsigned a = 0, b, c = 0, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
}

/*
 * The TSC: a plain rdtsc (no lfence: events of one thread are ordered by program order,
 * and the ~20 cycles a serialising read would add per event buy nothing here).
 */
static inline uint64_t ftrt_arch_cycles(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Invariant TSC (constant rate in all P/C states): CPUID leaf 0x80000007 EDX bit 8. */
static inline int ftrt_arch_cycles_constant(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return (d >> 8) & 1;
}

/* ftrt_arch_syscall_at() (arch.h): syscall is 0f 05; the kernel steps back over it to
 * restart a call, with the number back in rax */
static inline int ftrt_arch_syscall_at(const void *ucv, long *nr)
{
	/* gregs[] indexes (REG_RAX, REG_RIP: glibc names them only under _GNU_SOURCE) */
	enum { GREG_RAX = 13, GREG_RIP = 16 };
	const greg_t *g = ((const ucontext_t *)ucv)->uc_mcontext.gregs;
	const unsigned char *pc = (const unsigned char *)g[GREG_RIP];

	if (pc[0] == 0x0f && pc[1] == 0x05) {
		*nr = (long)g[GREG_RAX];
		return 1;
	}
	if (pc[-2] == 0x0f && pc[-1] == 0x05 && g[GREG_RAX] == -4 /* -EINTR */)
		return 2;
	return 0;
}

#endif /* FTRT_ASM_X86_64_H */
