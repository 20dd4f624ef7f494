// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_arm64.c - what a stack walk needs of the architecture: whether a word found on a
 * stack can be a return address (it follows a call instruction).
 */
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"

int ftrt_arch_after_call(const unsigned char *b)
{
	uint32_t insn;

	memcpy(&insn, b + 4, 4);
	return (insn & 0xfc000000u) == 0x94000000u ||	/* bl */
	       (insn & 0xfffffc1fu) == 0xd63f0000u ||	/* blr */
	       (insn & 0xfefff800u) == 0xd63f0800u;	/* blraa, blrab, blraaz, blrabz */
}
