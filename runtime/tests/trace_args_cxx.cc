// SPDX-License-Identifier: Apache-2.0
/*
 * --auto-args on C++: a function template's instances, a class passed by reference and
 * by value, a member function (its this), an enum class (noipa: no clone with another
 * signature, which --auto-args leaves out).  Each call prints itself the way
 * ftrace graph shows it; the test compares the two.
 */
#include <cstdio>

enum class Mode { Fast = 1, Slow = 2 };

struct Point {
	int x, y;
};

template <typename T> __attribute__((noipa)) T twice(T v)
{
	T r = v + v;
	if constexpr (sizeof(T) == sizeof(double))
		std::printf("twice<double>(v=%g) = %g\n", v, r);
	else
		std::printf("twice<int>(v=%d) = %d\n", v, r);
	return r;
}

__attribute__((noipa)) int norm1(const Point &p)
{
	int n = (p.x < 0 ? -p.x : p.x) + (p.y < 0 ? -p.y : p.y);
	std::printf("norm1(p=%p) = %d\n", static_cast<const void *>(&p), n);
	return n;
}

__attribute__((noipa)) Point flip(Point p)
{
	Point q = { p.y, p.x };
	std::printf("flip(p={x=%d, y=%d}) = {x=%d, y=%d}\n", p.x, p.y, q.x, q.y);
	return q;
}

__attribute__((noipa)) int run(Mode m, bool verbose)
{
	std::printf("run(m=%s, verbose=%s) = %d\n", m == Mode::Fast ? "Fast" : "Slow",
		    verbose ? "true" : "false", static_cast<int>(m) * 10);
	return static_cast<int>(m) * 10;
}

struct Counter {
	long n = 0;
	__attribute__((noipa)) long add(long k)
	{
		n += k;
		std::printf("Counter::add(this=%p, k=%ld) = %ld\n", static_cast<void *>(this), k, n);
		return n;
	}
};

int main()
{
	Point p = { 3, -4 };
	Counter c;

	twice(21);
	twice(2.25);
	norm1(p);
	flip(p);
	run(Mode::Slow, true);
	c.add(5);
	c.add(-2);
	return 0;
}
