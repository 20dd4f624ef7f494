// Traced code that runs after the trace is finalised at exit: a function-local static
// constructed during static initialisation, before the runtime's constructor, has its
// destructor run after the runtime's atexit handler.  Its calls (LATE_N of them, enough
// to fill a staging buffer) must not reach the finalised file.
#include <cstdio>
#include <cstdlib>

__attribute__((noinline)) int leaf(int i)
{
	asm volatile("");
	return i + 1;
}

struct Late {
	int n;
	__attribute__((noinline)) ~Late()
	{
		int s = 0;
		for (int i = 0; i < n; i++)
			s += leaf(i);
		std::fprintf(stderr, "late %d\n", s);
	}
};

static Late &late()
{
	const char *e = std::getenv("LATE_N");
	static Late l{e ? std::atoi(e) : 0};
	return l;
}

static int registered = (late(), 0);

int main()
{
	std::printf("main %d\n", leaf(registered));
	return 0;
}
