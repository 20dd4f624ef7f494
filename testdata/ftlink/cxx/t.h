#include <string>
#include <vector>

template <typename T> T accumulate_all(const std::vector<T> &v)
{
	T s{};
	for (const auto &x : v)
		s += x;
	return s;
}

struct Counter {
	int n = 0;
	void bump(int by) { n += by; }
	int get() const { return n; }
};

std::string describe(int n);
int work(int n);
