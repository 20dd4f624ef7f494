/* Functions of every argument shape fnargs models; each prints what it received, in
 * the form `ftrace graph` prints arguments, so a test compares the two. */
#include <stdbool.h>
#include <stdio.h>

enum color { RED, GREEN = 5, BLUE = -1 };
typedef unsigned long size_type;
struct point { int x, y; };
struct mixed { double d; long l; };
struct fpair { float a, b; };
struct big { long a, b, c; };
struct small3 { char c; short s; int i; };
struct flags { bool on : 1; int mode : 3; unsigned n : 12; enum color c; };

#define N __attribute__((noinline))

N int parse(const char *buf, size_type len) { printf("parse(buf=\"%s\", len=%lu) = %d\n", buf, len, (int)len - 6); return (int)len - 6; }
N double scale(double v, float f, int n) { printf("scale(v=%g, f=%g, n=%d) = %g\n", v, f, n, v * f * n); return v * f * n; }
N bool paint(enum color c, bool on, char ch, unsigned char uc) { printf("paint(c=%s, on=%s, ch='%c', uc=%u) = %s\n", c == RED ? "RED" : c == GREEN ? "GREEN" : "BLUE", on ? "true" : "false", ch, uc, on ? "false" : "true"); return !on; }
N struct point move(struct point p, int dx) { struct point r = {p.x + dx, p.y}; printf("move(p={x=%d, y=%d}, dx=%d) = {x=%d, y=%d}\n", p.x, p.y, dx, r.x, r.y); return r; }
N long mix(struct mixed m, struct fpair fp, long tail) { printf("mix(m={d=%g, l=%ld}, fp={a=%g, b=%g}, tail=%ld) = %ld\n", m.d, m.l, fp.a, fp.b, tail, m.l + tail); return m.l + tail; }
N struct big make_big(long a, struct big in) { struct big r = {a, in.b, in.c}; printf("make_big(a=%ld, in={a=%ld, b=%ld, c=%ld}) = <memory>\n", a, in.a, in.b, in.c); return r; }
N long many(long a, long b, long c, long d, long e, long f, long g, double x1, double x2, double x3, double x4, double x5, double x6, double x7, double x8, double x9, long h) { long r = a + b + c + d + e + f + g + h + (long)(x1 + x9); printf("many(a=%ld, b=%ld, c=%ld, d=%ld, e=%ld, f=%ld, g=%ld, x1=%g, x2=%g, x3=%g, x4=%g, x5=%g, x6=%g, x7=%g, x8=%g, x9=%g, h=%ld) = %ld\n", a, b, c, d, e, f, g, x1, x2, x3, x4, x5, x6, x7, x8, x9, h, r); return r; }
N struct small3 pack3(struct small3 s, void *p) { printf("pack3(s={c='%c', s=%d, i=%d}, p=%p) = {c='%c', s=%d, i=%d}\n", s.c, s.s, s.i, p, s.c, s.s, s.i); return s; }
N const char *name_of(int i, const char *fallback) { const char *r = i ? "one" : fallback; printf("name_of(i=%d, fallback=\"%s\") = \"%s\"\n", i, fallback, r); return r; }

N int bits(struct flags f, long double scale) { int r = f.mode * (int)scale; printf("bits(f={on=%s, mode=%d, n=%u, c=%s}, scale=%s) = %d\n", f.on ? "true" : "false", f.mode, f.n, f.c == BLUE ? "BLUE" : "?", scale == 2.0L ? "2" : "?", r); return r; }

int main(int argc, char **argv)
{
	(void)argv;
	struct point p = {3, -4};
	struct mixed m = {2.5, 7};
	struct fpair fp = {1.5f, -0.25f};
	struct big b = {1, 2, 3};
	struct small3 s3 = {'z', -2, 99};
	long t = parse("GET /", 5);
	t += (long)scale(1.5, 2.0f, argc + 2);
	t += paint(GREEN, argc > 0, 'q', 200) + paint(BLUE, false, 'Z', 7);
	t += move(p, argc).x;
	t += mix(m, fp, -9);
	t += make_big(42, b).a;
	t += many(1, 2, 3, 4, 5, 6, 7, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 8);
	t += pack3(s3, &p).i;
	t += name_of(0, "none")[0];
	t += bits((struct flags){true, -3, 4000, BLUE}, 2.0L);
	return t == 0;
}
