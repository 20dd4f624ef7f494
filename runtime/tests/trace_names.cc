// SPDX-License-Identifier: Apache-2.0
/*
 * Names a filter must take as the readers print them: C++ signatures with spaces and
 * commas (a template's with its return type, an operator template's), and gcc clones of static functions
 * (scaled.constprop.0, "cscaled(int, int) [clone .constprop.0]", named "scaled" and
 * "cscaled(int, int)" in the source).  It uses libstdc++, as C++ programs
 * do: the runtime demangles with its __cxa_demangle.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ns {
template <typename T> __attribute__((noinline)) bool pick(const char *a, const char *b, T v)
{
	return strcmp(a, b) < 0 ? v > 0 : v < 0;
}

__attribute__((noinline)) int two(const char *a, int b)
{
	return (int)strlen(a) + b;
}

/* an operator template: "ns::V ns::operator+<long, int>(ns::V, int)" */
struct V {
	int v;
};
template <typename A, typename B> __attribute__((noinline)) V operator+(V x, B b)
{
	return V{ x.v + (int)(A)b };
}
}

extern "C" {
static __attribute__((noinline)) int scaled(int x, int k)
{
	return x * k + 1;
}
}

static __attribute__((noinline)) int cscaled(int x, int k)
{
	return x * k - 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, s = 0;

	for (int i = 0; i < n; i++) {
		s += ns::pick<int>("a", "b", i) + ns::pick<double>("b", "a", i);
		s += ns::two("abc", i);
		s += scaled(i, 7) + scaled(i + 1, 7);
		s += cscaled(i, 5) + cscaled(i + 2, 5);
		s += ns::operator+<long, int>(ns::V{ i }, 2).v;
	}
	std::string out = std::to_string(s);	/* libstdc++ in the process: names demangled */
	printf("%s\n", out.c_str());
	return 0;
}
