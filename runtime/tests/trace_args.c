// SPDX-License-Identifier: Apache-2.0
/*
 * Arguments and return values (FTRACE_ARGS, FTRACE_RETVAL, --auto-args): functions of
 * many kinds of parameters, each called with values the program prints, so the test can
 * compare what the trace recorded with what the program saw: each prints its call the way
 * ftrace graph shows it with --auto-args (parameter names, strings quoted, enums by name).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

enum color { RED, GREEN = 5, BLUE };

struct pair {
	long a;
	int b;
};

struct big {
	long x[4];
};

/* floats only: x86-64 packs two a register, arm64 gives each member a v register */
struct vec3 {
	float x, y, z;
};

/*
 * Each function prints its call as ftrace graph shows a recorded one: the test compares.
 * lit() is a string as the reader quotes it: 64 bytes at most (the copy's bound), "..."
 * after a cut one.  Not traced (no_instrument_function): it is the test's, not the program's.
 */
__attribute__((no_instrument_function)) static const char *lit(const char *s)
{
	static char buf[4][80];
	static int k;
	char *b = buf[k++ & 3];

	if (!s)
		return "NULL";
	snprintf(b, 80, "\"%.64s\"%s", s, strlen(s) > 64 ? "..." : "");
	return b;
}

__attribute__((noinline)) int add(int a, int b)
{
	printf("add(a=%d, b=%d) = %d\n", a, b, a + b);
	return a + b;
}

__attribute__((noinline)) long neg(long v)
{
	printf("neg(v=%ld) = %ld\n", v, -v);
	return -v;
}

__attribute__((noinline)) size_t slen(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	printf("slen(s=%s) = %zu\n", lit(s), n);
	return n;
}

/* never reads s: a bad pointer is the recorder's problem only */
__attribute__((noinline)) int peek(const char *s, int n)
{
	printf("peek(s=<bad>, n=%d) = %d\n", n, n * 2);
	return n * 2;
}

__attribute__((noinline)) double scale(double x, float f)
{
	printf("scale(x=%g, f=%g) = %g\n", x, (double)f, x * f);
	return x * f;
}

__attribute__((noinline)) int paint(enum color c, _Bool on)
{
	printf("paint(c=%s, on=%s) = %d\n", c == GREEN ? "GREEN" : c == BLUE ? "BLUE" : "RED", on ? "true" : "false", (int)c + on);
	return (int)c + on;
}

__attribute__((noinline)) long sum8(long a, long b, long c, long d, long e, long f, long g, long h)
{
	long s = a + b + c + d + e + f + g + h;

	printf("sum8(a=%ld, b=%ld, c=%ld, d=%ld, e=%ld, f=%ld, g=%ld, h=%ld) = %ld\n", a, b, c, d, e, f, g, h, s);
	return s;
}

__attribute__((noinline)) struct pair mkpair(long a, int b)
{
	struct pair p = { a, b };

	printf("mkpair(a=%ld, b=%d) = {a=%ld, b=%d}\n", a, b, p.a, p.b);
	return p;
}

__attribute__((noinline)) long first(struct big b)
{
	printf("first(b={x={%ld, %ld, %ld, %ld}}) = %ld\n", b.x[0], b.x[1], b.x[2], b.x[3], b.x[0]);
	return b.x[0];
}

__attribute__((noinline)) struct vec3 vscale(struct vec3 v, float k)
{
	struct vec3 r = { v.x * k, v.y * k, v.z * k };

	printf("vscale(v={x=%g, y=%g, z=%g}, k=%g) = {x=%g, y=%g, z=%g}\n", (double)v.x, (double)v.y,
	       (double)v.z, (double)k, (double)r.x, (double)r.y, (double)r.z);
	return r;
}

__attribute__((noinline)) const char *greet(int i)
{
	static const char *const g[] = { "hello", "world" };

	printf("greet(i=%d) = %s\n", i, lit(g[i & 1]));
	return g[i & 1];
}

int main(void)
{
	/* a string that ends exactly at the end of a readable page, then one past it */
	char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char long_str[200];

	if (page == MAP_FAILED)
		return 1;
	mprotect(page + 4096, 4096, PROT_NONE);
	memcpy(page + 4096 - 6, "edge!", 6);
	memset(long_str, 'y', sizeof(long_str) - 1);
	long_str[sizeof(long_str) - 1] = 0;

	add(2, 3);
	add(-7, 4);
	neg(-1234567890123L);
	slen("GET /");
	slen(NULL);
	slen(page + 4096 - 6);
	slen(long_str);
	peek((const char *)16, 1);
	peek(page + 4096, 2);
	scale(2.5, 4.0f);
	paint(GREEN, 1);
	paint(BLUE, 0);
	sum8(1, 2, 3, 4, 5, 6, 7, 8);
	mkpair(40, -2);
	first((struct big){ { 11, 12, 13, 14 } });
	vscale((struct vec3){ 1.5f, -2.0f, 0.25f }, 2.0f);
	greet(0);
	greet(1);
	return 0;
}
