// SPDX-License-Identifier: Apache-2.0
/*
 * poke_x86_64.c - the x86-64 part of live patching: which instruction transitions are
 * safe, and emulating the new instruction for a thread that hit the breakpoint.
 *
 * Only the handful of instructions the runtime writes at call sites are known; anything
 * else is refused before a byte is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <ucontext.h>

#include "arch/arch.h"
#include "core/poke.h"

enum insn_kind { INSN_BAD, INSN_CALL, INSN_CALL_IND, INSN_JMP, INSN_NOP };

struct insn {
	enum insn_kind kind;
	unsigned len;
	int disp_off;		/* nop: offset of its 8-bit displacement (free byte), else -1 */
	int32_t rel;
};

static int32_t rel32(const unsigned char *b)
{
	int32_t v;

	memcpy(&v, b, 4);
	return v;
}

/* Decode one instruction of the known forms from b[0..avail). */
static struct insn decode(const unsigned char *b, unsigned avail)
{
	struct insn in = { INSN_BAD, 0, -1, 0 };

	if (avail >= 5 && b[0] == 0xe8) {
		in = (struct insn){ INSN_CALL, 5, -1, rel32(b + 1) };
	} else if (avail >= 5 && b[0] == 0xe9) {
		in = (struct insn){ INSN_JMP, 5, -1, rel32(b + 1) };
	} else if (avail >= 6 && b[0] == 0x67 && b[1] == 0xe8) {
		in = (struct insn){ INSN_CALL, 6, -1, rel32(b + 2) };
	} else if (avail >= 6 && b[0] == 0xff && b[1] == 0x15) {
		in = (struct insn){ INSN_CALL_IND, 6, -1, rel32(b + 2) };
	} else if (avail >= 5 && b[0] == 0x0f && b[1] == 0x1f && b[2] == 0x44 && b[3] == 0x00) {
		in = (struct insn){ INSN_NOP, 5, 4, 0 };	/* nopl disp8(%rax,%rax,1) */
	} else if (avail >= 6 && b[0] == 0x66 && b[1] == 0x0f && b[2] == 0x1f && b[3] == 0x44 &&
		   b[4] == 0x00) {
		in = (struct insn){ INSN_NOP, 6, 5, 0 };	/* nopw disp8(%rax,%rax,1) */
	} else if (avail >= 1 && b[0] == 0x90) {
		in = (struct insn){ INSN_NOP, 1, -1, 0 };
	}
	return in;
}

/* Mark the instruction boundaries of b[0..len) in bound[]; false if b is not a sequence. */
static int boundaries(const unsigned char *b, unsigned len, unsigned char bound[9])
{
	unsigned off = 0;

	memset(bound, 0, 9);
	while (off < len) {
		struct insn in = decode(b + off, len - off);

		if (in.kind == INSN_BAD)
			return 0;
		bound[off] = 1;
		off += in.len;
	}
	bound[len] = 1;
	return off == len;
}

/*
 * The rules, whatever the transition (x86-64: sites are instruction sequences written
 * under a breakpoint).  ftrt_arch_check answers its common cases first with the same
 * verdict; TestPokeRules compares the two on every pairing of the site forms.
 */
int ftrt_arch_check_rules(const unsigned char *old, const unsigned char *new, unsigned len,
			  unsigned *early, const char **why)
{
	unsigned char bo[9], bn[9];
	struct insn first;
	unsigned k;

	*early = 0;
	if (len < 1 || len > 8) {
		*why = "length not in 1..8";
		return -EINVAL;
	}
	if (!boundaries(old, len, bo)) {
		*why = "old bytes are not a known instruction sequence";
		return -EINVAL;
	}
	if (!boundaries(new, len, bn)) {
		*why = "new bytes are not a known instruction sequence";
		return -EINVAL;
	}
	/*
	 * A thread may sit at an inner boundary of old (e.g. returned from "e8 rel32" to the
	 * "90" after it): that must stay a boundary with the same bytes after it.
	 */
	for (k = 1; k < len; k++) {
		if (bo[k] && (!bn[k] || memcmp(old + k, new + k, len - k))) {
			*why = "a thread may be stopped inside the old sequence where the new one changes";
			return -EINVAL;
		}
	}
	/*
	 * A thread that runs (or is emulated through) the first new instruction continues at its
	 * inner boundaries: those bytes must already be in memory.  When they differ from old,
	 * they may be written early only if they are the free displacement byte of an old nop
	 * (any value there leaves the old nop a nop of the same length).
	 */
	first = decode(old, len);
	for (k = 1; k < len; k++) {
		if (!bn[k] || !memcmp(old + k, new + k, len - k))
			continue;
		if (first.kind == INSN_NOP && first.len == len && first.disp_off == (int)k &&
		    k == len - 1) {
			*early = k;
			break;
		}
		*why = "the new sequence needs bytes inside the old instruction before it can run";
		return -EINVAL;
	}
	return 0;
}

/* Is b one 5-byte instruction of the known forms (what decode(b, 5).len == 5 says)? */
static inline int one5(const unsigned char *b)
{
	return b[0] == 0xe8 || b[0] == 0xe9 ||
	       (b[0] == 0x0f && b[1] == 0x1f && b[2] == 0x44 && b[3] == 0x00);
}

int ftrt_arch_check(const unsigned char *old, const unsigned char *new, unsigned len,
		    unsigned *early, const char **why)
{
	struct insn first;

	if (len < 1 || len > 8)
		return ftrt_arch_check_rules(old, new, len, early, why);
	*early = 0;
	/* a nop for a call or back: one instruction each, no inner boundary to keep */
	if (len == 5 && one5(old) && one5(new))
		return 0;	/* the most common cases, without a call (300k sites a batch) */
	if (len == 6 && old[0] == 0x66 && old[1] == 0x0f && old[2] == 0x1f && old[3] == 0x44 &&
	    old[4] == 0x00 && one5(new) && new[5] == 0x90) {
		*early = old[5] != new[5] ? 5 : 0;	/* the first enable below */
		return 0;
	}
	first = decode(old, len);
	if (first.len == len && decode(new, len).len == len)
		return 0;
	/* a first enable of a 6-byte site: its nop for a 5-byte call and a nop, the free byte
	   of the old nop written early if it changes */
	if (first.kind == INSN_NOP && first.len == len && first.disp_off == (int)len - 1 &&
	    decode(new, len - 1).len == len - 1 && decode(new + len - 1, 1).len == 1) {
		*early = old[len - 1] != new[len - 1] ? len - 1 : 0;
		return 0;
	}
	return ftrt_arch_check_rules(old, new, len, early, why);
}

/* Does an instruction of the forms the runtime writes start at p?  Async-signal-safe. */
int ftrt_arch_site_insn(const unsigned char *p)
{
	return decode(p, 8).kind != INSN_BAD;
}

/* ftrt_arch_probe_code (arch.h): endbr64; mov $0, %eax; ret (1 once byte 5 is 1) */
__asm__(".text\n"
	".globl ftrt_arch_probe_code\n"
	".hidden ftrt_arch_probe_code\n"
	".type ftrt_arch_probe_code, @function\n"
	"ftrt_arch_probe_code:\n"
	".byte 0xf3, 0x0f, 0x1e, 0xfa\n"
	"movl $0, %eax\n"
	"ret\n"
	".size ftrt_arch_probe_code, . - ftrt_arch_probe_code\n");

uintptr_t ftrt_arch_pc(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
}

void ftrt_arch_set_pc(void *uc, uintptr_t pc)
{
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

uintptr_t ftrt_arch_sp(const void *uc)
{
	return (uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
}

/*
 * Runs in the SIGTRAP handler: no locks, no allocation.  The push goes where the real call
 * would have pushed (the interrupted code is at a call site, it keeps nothing below rsp).
 */
void ftrt_arch_emulate(const struct ftrt_poke_site *site, void *ucv)
{
	ucontext_t *uc = ucv;
	struct insn in = decode(site->new, site->len);
	uintptr_t next = site->addr + in.len, target = 0;
	greg_t *g = uc->uc_mcontext.gregs;

	switch (in.kind) {
	case INSN_CALL:
	case INSN_JMP:
		target = next + (intptr_t)in.rel;
		break;
	case INSN_CALL_IND:
		memcpy(&target, (const void *)(next + (intptr_t)in.rel), sizeof(target));
		break;
	case INSN_NOP:
		g[REG_RIP] = (greg_t)next;
		return;
	case INSN_BAD:		/* refused by ftrt_arch_check(); unreachable */
		g[REG_RIP] = (greg_t)site->addr;
		return;
	}
	if (in.kind != INSN_JMP) {
		g[REG_RSP] -= 8;
		*(uintptr_t *)g[REG_RSP] = next;
	}
	g[REG_RIP] = (greg_t)target;
}

int ftrt_arch_code_prot(uintptr_t addr)
{
	(void)addr;
	return 0;
}
