// C++ exceptions thrown and caught across traced frames, rethrown, and thrown
// from libstdc++; destructors run during unwinding call traced functions.
#include <cstdio>
#include <stdexcept>
#include <vector>

volatile int sink;

__attribute__((noinline)) void leaf(int i) { sink += i; }

struct Guard {
	int v;
	explicit Guard(int x) : v(x) {}
	~Guard() { leaf(v); }
};

__attribute__((noinline)) void thrower(int i)
{
	Guard g(i);
	leaf(i);
	if (i % 3 == 0)
		throw std::runtime_error("boom");
}
__attribute__((noinline)) void mid(int i) { Guard g(i); thrower(i); leaf(i); }
__attribute__((noinline)) void rethrower(int i)
{
	try {
		mid(i);
	} catch (...) {
		leaf(-1);
		throw;
	}
}
__attribute__((noinline)) int outer(int i)
{
	try {
		rethrower(i);
	} catch (const std::exception &e) {
		leaf(1);
		return 1;
	}
	return 0;
}
__attribute__((noinline)) int lib_throw()
{
	std::vector<int> v(3);
	try {
		return v.at(7);
	} catch (const std::out_of_range &) {
		leaf(2);
		return -1;
	}
}

int main()
{
	int caught = 0;
	for (int i = 0; i < 10; i++)
		caught += outer(i);
	int r = lib_throw();
	std::printf("caught=%d lib=%d sink=%d\n", caught, r, sink);
	return 0;
}
