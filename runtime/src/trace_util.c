// SPDX-License-Identifier: Apache-2.0
/* Small async-signal-safe helpers for the tracers. */
#include <string.h>
#include <unistd.h>

#include "trace_internal.h"

void ft_msg(const char *a, const char *b)
{
	ssize_t r;

	r = write(2, "ftkit: ", 7);
	r = write(2, a, strlen(a));
	if (b) {
		r = write(2, b, strlen(b));
	}
	r = write(2, "\n", 1);
	(void)r;
}

size_t ft_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size) {
		size_t c = n < size - 1 ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = 0;
	}
	return n;
}

/* Writes v in decimal at p (NUL-terminated); returns the end. */
char *ft_utoa(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	*p = 0;
	return p;
}
