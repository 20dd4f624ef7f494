#include "t.h"

namespace {
int __attribute__((noinline)) helper(int x) { return x * 3; }
}

std::string describe(int n)
{
	return "count=" + std::to_string(n);
}

int work(int n)
{
	std::vector<int> v;
	for (int i = 0; i < n; i++)
		v.push_back(helper(i));
	Counter c;
	c.bump(accumulate_all(v));
	return c.get();
}
