/*
 * arm64_insn.h - reading a site's instruction back from memory, for the arm64 test
 * programs (independent of the runtime's own decoding).
 */
#ifndef ARM64_INSN_H
#define ARM64_INSN_H

#include <stdint.h>
#include <string.h>

static inline uint32_t word(unsigned long a)
{
	uint32_t w;

	memcpy(&w, (void *)a, 4);
	return w;
}

/* Where the bl at ip goes (0: not a bl). */
static inline unsigned long bl_dest(unsigned long ip)
{
	uint32_t w = word(ip);

	if ((w & 0xfc000000u) != 0x94000000u)
		return 0;
	return ip + (unsigned long)(long)(((int32_t)(w << 6)) >> 6) * 4;
}

#endif
