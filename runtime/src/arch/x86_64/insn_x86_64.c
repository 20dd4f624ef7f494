// SPDX-License-Identifier: Apache-2.0
/*
 * insn_x86_64.c - may a trampoline skip the vector registers and the frame around a callback?
 *
 * A traced function may receive arguments in xmm0..xmm7, so a trampoline must preserve them
 * across its callback; saving and restoring them costs about as much as the rest of the
 * trampoline.  A callback that provably never touches them lets the runtime use the
 * ftrace_caller_novec template instead.  The proof is a decode of the callback's own code:
 *
 *  - every instruction is in a small list of integer instructions (anything else, including
 *    every SSE/AVX/x87/MMX instruction and any prefix we do not expect, answers no);
 *  - it jumps only inside itself (no indirect jump, no jump that leaves the decoded code)
 *    and calls nothing but ftrt_lean_call (a direct call or jump), which saves the vector
 *    registers in the frame before it calls anything else and restores them after; so
 *    nothing else runs with the traced function's xmm0..xmm7 unsaved;
 *  - unless its ops says it reads no more of its frame than the integer registers (the
 *    runtime's own tracers, FTRT_OPS_FL_LEAN_FRAME), it never refers to %rcx, neither as
 *    an operand, an address register, nor implicitly (shifts by %cl, string instructions),
 *    so it cannot read its struct ftrace_regs argument: the lean template saves the integer
 *    argument registers (%rcx too) and passes a frame of them only (full =
 *    FTRT_FRAME_FULL_LEAN: its vector registers, ip and sp are not filled), which no decode
 *    can tell apart from the rest.
 *
 * The decode stops at the return after which no jump target remains; at most MAXLEN bytes
 * are read, all of them the callback's own code (it is read only up to where the decode
 * shows it continues).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "arch/arch.h"
#include "core/ftrt_core.h"

/* The C view of the frame must match what trampgen generated. */
_Static_assert(sizeof(struct ftrace_regs) == FTRT_FRAME_SIZE, "frame size");
_Static_assert(offsetof(struct ftrace_regs, xmm) == FTRT_FRAME_XMM0, "xmm");
_Static_assert(offsetof(struct ftrace_pt_regs, rdi) == FTRT_FRAME_RDI, "rdi");
_Static_assert(offsetof(struct ftrace_pt_regs, r15) == FTRT_FRAME_R15, "r15");
_Static_assert(offsetof(struct ftrace_pt_regs, rax) == FTRT_FRAME_RAX, "rax");
_Static_assert(offsetof(struct ftrace_pt_regs, ip) == FTRT_FRAME_IP, "ip");
_Static_assert(offsetof(struct ftrace_pt_regs, sp) == FTRT_FRAME_SP, "sp");
_Static_assert(offsetof(struct ftrace_pt_regs, full) == FTRT_FRAME_FULL, "full");
_Static_assert(offsetof(struct ftrace_pt_regs, flags) == FTRT_FRAME_FLAGS, "flags");

/* the longest callback scanned: the graph tracer's fused entry is about 1.3 KiB since it
   holds the time filter's and -G's inline cases too */
#define MAXLEN 2048

/* Operand forms of the accepted one- and two-byte opcodes. */
enum {
	NO = 0,		/* not accepted */
	PLAIN,		/* no operand bytes */
	M,		/* ModRM (reg field is a register) */
	MX,		/* ModRM (reg field is an opcode extension) */
	I8, IZ,		/* immediate: 8 bits; 32 (16 with 66) */
	MI8, MIZ,	/* ModRM (extension) + immediate */
	MRI8, MRIZ,	/* ModRM (register) + immediate */
	J8, J32,	/* relative jump */
	R,		/* register in the opcode's low 3 bits */
	RI8, RIV,	/* register in the opcode + imm8 / imm32 (imm64 with REX.W, 16 with 66) */
};

struct insn {
	int rex;		/* 0x10 | the REX bits when a REX prefix is present */
	int opsize16, byteop;
};

static int reg_is_rcx(int reg, int rex, int byteop)
{
	/* ch is register 5 of byte instructions without a REX prefix */
	return reg == 1 || (byteop && !rex && reg == 5);
}

/* One-byte opcodes. */
static int form1(unsigned op, int *byteop)
{
	*byteop = 0;
	if (op < 0x40 && op != 0x0f) {
		switch (op & 7) {
		case 0: case 2: *byteop = 1; return M;
		case 1: case 3: return M;
		case 4: *byteop = 1; return I8;
		case 5: return IZ;
		default: return NO;	/* segment prefixes, BCD instructions */
		}
	}
	if (op >= 0x50 && op <= 0x5f)
		return R;
	if (op >= 0x70 && op <= 0x7f)
		return J8;
	if (op >= 0x91 && op <= 0x97)
		return R;
	if (op >= 0xb0 && op <= 0xb7) {
		*byteop = 1;
		return RI8;
	}
	if (op >= 0xb8 && op <= 0xbf)
		return RIV;
	switch (op) {
	case 0x63: return M;
	case 0x68: return IZ;
	case 0x6a: return I8;
	case 0x69: return MRIZ;
	case 0x6b: return MRI8;
	case 0x80: *byteop = 1; return MI8;
	case 0x81: return MIZ;
	case 0x83: return MI8;
	case 0x84: case 0x86: case 0x88: case 0x8a: *byteop = 1; return M;
	case 0x85: case 0x87: case 0x89: case 0x8b: case 0x8d: return M;
	case 0x90: case 0x98: case 0x99: case 0xc3: case 0xc9: return PLAIN;
	case 0xa8: *byteop = 1; return I8;
	case 0xa9: return IZ;
	case 0xc0: *byteop = 1; return MI8;
	case 0xc1: return MI8;
	case 0xc6: *byteop = 1; return MI8;
	case 0xc7: return MIZ;
	case 0xd0: *byteop = 1; return MX;
	case 0xd1: return MX;
	case 0xd2: *byteop = 1; return MX;	/* shifts by %cl: with a frame only, below */
	case 0xd3: return MX;
	case 0xe8: return J32;		/* call: to ftrt_lean_call only, below */
	case 0xe9: return J32;
	case 0xeb: return J8;
	case 0xf6: *byteop = 1; return MX;	/* immediate for /0 /1, below */
	case 0xf7: return MX;
	case 0xfe: *byteop = 1; return MX;
	case 0xff: return MX;
	}
	return NO;
}

/* Two-byte opcodes (after 0f). */
static int form2(unsigned op, int *byteop)
{
	*byteop = 0;
	if (op >= 0x40 && op <= 0x4f)
		return M;		/* cmov */
	if (op >= 0x80 && op <= 0x8f)
		return J32;
	if (op >= 0x90 && op <= 0x9f) {
		*byteop = 1;
		return MX;		/* setcc */
	}
	if (op >= 0xc8 && op <= 0xcf)
		return R;		/* bswap */
	switch (op) {
	case 0x1f: return MX;		/* nop r/m */
	case 0x18: return MX;		/* prefetch */
	case 0x31: return PLAIN;	/* rdtsc */
	case 0xa3: case 0xab: case 0xb3: case 0xbb: return M;	/* bt, bts, btr, btc */
	case 0xba: return MI8;
	case 0xaf: return M;		/* imul */
	case 0xb0: case 0xc0: *byteop = 1; return M;	/* cmpxchg, xadd (8-bit) */
	case 0xb1: case 0xc1: return M;
	case 0xb6: case 0xbe: *byteop = 2; return M;	/* movzx/movsx from r/m8 */
	case 0xb7: case 0xbf: return M;
	case 0xae: return MX;		/* fences only, checked below */
	}
	return NO;
}

/*
 * Length of the ModRM operand at p (ModRM, SIB, displacement), or 0 when it names %rcx as
 * a register or an address register.  reg_checked: the reg field is a register operand.
 */
static size_t modrm(const unsigned char *p, const struct insn *in, int reg_checked,
		    int frame, int *ext)
{
	unsigned m = p[0], mod = m >> 6, rm = m & 7;
	int reg = (int)((m >> 3) & 7) | ((in->rex & 4) ? 8 : 0);
	size_t n = 1;

	*ext = (int)((m >> 3) & 7);
	if (frame)
		reg_checked = 0;
	/* byteop 2: the reg field is a full register, only r/m is a byte */
	if (reg_checked && reg_is_rcx(reg, in->rex, in->byteop == 1))
		return 0;
	if (mod == 3) {
		int r = (int)rm | ((in->rex & 1) ? 8 : 0);

		return !frame && reg_is_rcx(r, in->rex, in->byteop != 0) ? 0 : n;
	}
	if (rm == 4) {
		unsigned sib = p[1], base = sib & 7;
		int index = (int)((sib >> 3) & 7) | ((in->rex & 2) ? 8 : 0);

		n++;
		if (index == 1 && !frame)
			return 0;
		if (base == 5 && mod == 0)
			n += 4;
		else if ((int)(base | ((in->rex & 1) ? 8 : 0)) == 1 && !frame)
			return 0;
	} else if (rm == 5 && mod == 0) {
		n += 4;		/* rip-relative */
	} else if ((int)(rm | ((in->rex & 1) ? 8 : 0)) == 1 && !frame) {
		return 0;
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n;
}

static void bit_set(uint64_t *b, size_t i) { b[i / 64] |= 1ull << (i % 64); }
static int bit_has(const uint64_t *b, size_t i) { return !!(b[i / 64] & (1ull << (i % 64))); }

int ftrt_arch_scalar_leaf(const void *fn, int frame)
{
	const unsigned char *code = fn;
	uint64_t starts[MAXLEN / 64] = { 0 }, targets[MAXLEN / 64] = { 0 };
	size_t off = 0, reach = 0, i;

	if (!code)
		return 0;
	while (off + 16 <= MAXLEN) {
		const unsigned char *b = code + off;
		struct insn in = { 0 };
		size_t n = 0, k = 0;
		unsigned op, mb = 0;
		long rel = 0;
		int form, two = 0, ext = -1, regop = -1, jump = 0, end = 0;

		bit_set(starts, off);
		if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) {	/* endbr64 */
			off += 4;
			continue;
		}
		for (;; n++) {
			if (n > 4)
				return 0;
			if (b[n] == 0x66)
				in.opsize16 = 1;
			/* lock, hints, %fs (thread-local variables) */
			else if (b[n] != 0xf0 && b[n] != 0x2e && b[n] != 0x3e && b[n] != 0x64)
				break;
		}
		if ((b[n] & 0xf0) == 0x40)
			in.rex = 0x10 | (b[n++] & 0xf);	/* 0x10: present (even 40) */
		op = b[n++];
		if (op == 0x0f) {
			two = 1;
			op = b[n++];
			form = form2(op, &in.byteop);
		} else {
			form = form1(op, &in.byteop);
			if (op == 0xc3)
				end = 1;
			if (op == 0xe9 || op == 0xeb)
				end = 1;	/* unconditional: what follows is reached by jumps only */
		}
		if (form == NO)
			return 0;
		jump = form == J8 || form == J32;
		if (form == R || form == RI8 || form == RIV) {
			regop = (int)(op & 7) | ((in.rex & 1) ? 8 : 0);
			if (!frame && reg_is_rcx(regop, in.rex, in.byteop))
				return 0;
		}
		if (form == M || form == MRI8 || form == MRIZ || form == MX || form == MI8 || form == MIZ) {
			mb = b[n];
			k = modrm(b + n, &in, form == M || form == MRI8 || form == MRIZ, frame, &ext);
			if (!k)
				return 0;
			n += k;
		}
		/* opcode extensions that are not plain integer instructions */
		if (!two) {
			if (op == 0xff && ext != 0 && ext != 1 && ext != 6)
				return 0;	/* call, jmp (indirect) */
			if (op == 0xfe && ext > 1)
				return 0;
			if ((op == 0xc6 || op == 0xc7) && ext != 0)
				return 0;
			if ((op == 0xc0 || op == 0xc1 || op == 0xd0 || op == 0xd1 || op == 0xd2 ||
			     op == 0xd3) && ext == 6)
				return 0;	/* undefined shift */
			if ((op == 0xd2 || op == 0xd3) && !frame)
				return 0;	/* reads %cl */
			if ((op == 0xf6 || op == 0xf7) && ext == 1)
				return 0;
			if (op == 0xf6 && ext == 0)
				n += 1;		/* test r/m8, imm8 */
			if (op == 0xf7 && ext == 0)
				n += in.opsize16 ? 2 : 4;
		} else {
			if (op == 0xae && (mb >> 6 != 3 || ext < 5))
				return 0;	/* lfence, mfence, sfence only */
			if (op == 0x18 && ext > 3)
				return 0;
			if (op == 0xba && ext < 4)
				return 0;
		}
		switch (form) {
		case I8: case MI8: case MRI8: case RI8:
			n += 1;
			break;
		case IZ: case MIZ: case MRIZ:
			n += in.opsize16 ? 2 : 4;
			break;
		case RIV:
			n += (in.rex & 8) ? 8 : in.opsize16 ? 2 : 4;
			break;
		case J8:
			rel = (signed char)b[n];
			n += 1;
			break;
		case J32: {
			int32_t r;

			memcpy(&r, b + n, 4);
			rel = r;
			n += 4;
			break;
		}
		}
		if (!two && (op == 0xe8 || op == 0xe9) &&
		    (uintptr_t)(b + n) + (uintptr_t)rel == (uintptr_t)ftrt_lean_call) {
			off += n;	/* the call (or tail call) out: ftrt_lean_call keeps xmm0..7 */
			if (end && off > reach)
				break;
			continue;
		}
		if (op == 0xe8 && !two)
			return 0;	/* any other call */
		if (jump) {
			long to = (long)(off + n) + rel;

			if (to < 0 || to + 16 > MAXLEN)
				return 0;
			bit_set(targets, (size_t)to);
			if ((size_t)to > reach)
				reach = (size_t)to;
		}
		off += n;
		if (end && off > reach)
			break;		/* nothing after this is reached */
	}
	if (off + 16 > MAXLEN)
		return 0;
	for (i = 0; i < MAXLEN; i++)
		if (bit_has(targets, i) && !bit_has(starts, i))
			return 0;	/* a jump into the middle of an instruction */
	return 1;
}
