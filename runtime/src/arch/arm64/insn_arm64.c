// SPDX-License-Identifier: Apache-2.0
/*
 * insn_arm64.c - arm64 has no decoder proving a callback lean yet: every callback gets the
 * full frame (ftrace_caller_novec is ftrace_caller's twin).  Also checks the frame layout
 * trampgen generated against struct ftrace_regs.
 */
#include <ftrace.h>

#include "arch/arch.h"

_Static_assert(offsetof(struct ftrace_pt_regs, x) == FTRT_FRAME_X0, "frame x0");
_Static_assert(offsetof(struct ftrace_pt_regs, x[8]) == FTRT_FRAME_X8, "frame x8");
_Static_assert(offsetof(struct ftrace_pt_regs, fp) == FTRT_FRAME_FP, "frame fp");
_Static_assert(offsetof(struct ftrace_pt_regs, ip) == FTRT_FRAME_IP, "frame ip");
_Static_assert(offsetof(struct ftrace_pt_regs, sp) == FTRT_FRAME_SP, "frame sp");
_Static_assert(offsetof(struct ftrace_pt_regs, full) == FTRT_FRAME_FULL, "frame full");
_Static_assert(offsetof(struct ftrace_pt_regs, direct) == FTRT_FRAME_DIRECT, "frame direct");
_Static_assert(offsetof(struct ftrace_regs, q) == FTRT_FRAME_Q0, "frame q0");
_Static_assert(sizeof(struct ftrace_regs) == FTRT_FRAME_SIZE, "frame size");

int ftrt_arch_scalar_leaf(const void *func, int frame)
{
	(void)func;
	(void)frame;
	return 0;
}
