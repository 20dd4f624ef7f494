// Traced code at exit.  A function-local static constructed during static initialisation,
// before the runtime's constructor, has its destructor run by exit() (LATE_N calls): the
// runtime finalises later, in its own ELF destructor, so they are recorded.  An ELF
// destructor of the program that runs after the runtime's (same priority, linked first)
// makes VERY_LATE_N calls after finalisation: they must not reach the finalised file.
// Both are enough to fill a staging buffer.  A thread that ends after finalisation (woken
// and joined by that destructor) must not change the finalised file either.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>

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

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool go_on, started;
static pthread_t waiter;

static void *wait_for_end(void *)
{
	leaf(0);	/* recorded: the thread has a chunk in the file */
	pthread_mutex_lock(&mu);
	started = true;
	pthread_cond_broadcast(&cv);
	while (!go_on)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return nullptr;
}

static std::string slurp(const char *path)
{
	std::string s;
	FILE *f = std::fopen(path, "rb");
	char buf[65536];
	size_t n;

	while (f && (n = std::fread(buf, 1, sizeof(buf), f)) > 0)
		s.append(buf, n);
	if (f)
		std::fclose(f);
	return s;
}

__attribute__((destructor(101))) static void very_late()
{
	const char *e = std::getenv("VERY_LATE_N");
	int s = 0;

	for (int i = 0, n = e ? std::atoi(e) : 0; i < n; i++)
		s += leaf(i);
	std::fprintf(stderr, "very late %d\n", s);
	if (std::getenv("WAITER")) {
		const char *out = std::getenv("FTRACE_OUTPUT") ? std::getenv("FTRACE_OUTPUT") : "ftrace.dat";
		std::string before = slurp(out);

		pthread_mutex_lock(&mu);
		go_on = true;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
		pthread_join(waiter, nullptr);
		std::printf("final file kept: %d\n", !before.empty() && before == slurp(out));
	}
}

int main()
{
	if (std::getenv("WAITER")) {
		pthread_create(&waiter, nullptr, wait_for_end, nullptr);
		pthread_mutex_lock(&mu);
		while (!started)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	std::printf("main %d\n", leaf(registered));
	return 0;
}
