// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_x86_64.c - what a stack walk needs of the architecture: whether a word found on a
 * stack can be a return address (it follows a call instruction).
 */
#include <stdint.h>
#include <string.h>

#include "arch/arch.h"

int ftrt_arch_after_call(const unsigned char *b)
{
	const unsigned char *end = b + 8;

	if (end[-5] == 0xe8)
		return 1;	/* call rel32 */
	for (int k = 2; k <= 7; k++) {	/* call *r/m: ff /2, of exactly k bytes */
		const unsigned char *p = end - k;
		unsigned modrm = p[1], mod = modrm >> 6, rm = modrm & 7, len = 2;

		if (p[0] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod == 3) {
			if (k == 2)
				return 1;
			continue;
		}
		if (rm == 4) {	/* SIB; base 5 with mod 0: a disp32, no base */
			len++;
			if (mod == 0 && (p[2] & 7) == 5)
				len += 4;
		} else if (mod == 0 && rm == 5) {
			len += 4;	/* rip-relative */
		}
		len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
		if (len == (unsigned)k)
			return 1;
	}
	return 0;
}
