// C++ exceptions thrown and caught across traced frames, rethrown, and thrown
// from libstdc++; destructors run during unwinding call traced functions;
// std::rethrow_exception and std::future::get, which throw without __cxa_throw.
#include <cstdio>
#include <exception>
#include <future>
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

__attribute__((noinline)) std::exception_ptr capture(int i)
{
	try {
		thrower(i);
	} catch (...) {
		return std::current_exception();
	}
	return nullptr;
}
__attribute__((noinline)) void replay(std::exception_ptr p)
{
	Guard g(5);
	if (p)
		std::rethrow_exception(p);
}
__attribute__((noinline)) int replay_outer(int i)
{
	try {
		replay(capture(i));
	} catch (const std::exception &) {
		leaf(3);
		return 1;
	}
	return 0;
}
__attribute__((noinline)) int worker(int i)
{
	leaf(i);
	if (i % 2)
		throw std::logic_error("odd");
	return i;
}
/* the rethrow leaves through this graphed frame */
__attribute__((noinline)) int getter(std::future<int> &f) { return f.get(); }
__attribute__((noinline)) int future_get(int i)
{
	auto f = std::async(std::launch::async, worker, i);
	try {
		return getter(f);
	} catch (const std::logic_error &) {
		leaf(4);
		return -1;
	}
}

int main(int argc, char **argv)
{
	int caught = 0, replayed = 0, fut = 0;

	if (argc > 1) {	/* "future": threads, and frames of libstdc++'s templates */
		for (int i = 0; i < 4; i++)
			fut += future_get(i);
		std::printf("future=%d sink=%d (%s)\n", fut, sink, argv[1]);
		return 0;
	}
	for (int i = 0; i < 10; i++)
		caught += outer(i);
	int r = lib_throw();
	for (int i = 0; i < 6; i++)
		replayed += replay_outer(i);
	std::printf("caught=%d lib=%d replayed=%d sink=%d\n", caught, r, replayed, sink);
	return 0;
}
