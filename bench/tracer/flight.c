/*
 * Deterministic workload for the flight-recorder acceptance check (bench/accept_test.go).
 *   flight THREADS ITERS SPIN
 * Thread t (0 .. THREADS-1) calls step(t, i) for i = 0 .. ITERS-1. The call tree of one
 * step depends on (t, i) only, so two runs make the same trees in the same order on each
 * thread. Each step starts with tag(t, i): 28 calls of bit0/bit1 spelling t (4 bits) then i
 * (24 bits), most significant bit first, so a reader can tell which step a tree is; then a
 * recursion whose depth, fan-out and leaves vary with (t, i). A leaf spins SPIN rounds.
 * Prints "threads T iters N ns NS" (wall time of the whole run).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * Built with -fno-optimize-sibling-calls (bench/accept_test.go) rather than with
 * __attribute__((optimize("no-optimize-sibling-calls"))): gcc 12 turns -fipa-ra back on
 * for a function with an optimize attribute even under -pg, and step() then kept values in
 * %rcx/%r8-%r10 across its call of tag(), which return_to_handler does not preserve (a
 * crash under function_graph).
 */
#define NOINLINE __attribute__((noinline, noclone))

static volatile unsigned long sink;
static long iters, spin;

NOINLINE void bit0(void)
{
	sink += 1;
}

NOINLINE void bit1(void)
{
	sink += 2;
}

NOINLINE void tag(unsigned t, unsigned i)
{
	unsigned v = (t & 15u) << 24 | (i & 0xffffffu);

	for (int b = 27; b >= 0; b--) {
		if (v >> b & 1)
			bit1();
		else
			bit0();
	}
}

static void spin_rounds(unsigned long x)
{
	for (long k = 0; k < spin; k++)
		sink += x ^ (unsigned long)k;
}

NOINLINE void leaf_a(unsigned long x)
{
	spin_rounds(x);
}

NOINLINE void leaf_b(unsigned long x)
{
	spin_rounds(x + 1);
}

NOINLINE void leaf_c(unsigned long x)
{
	spin_rounds(x + 2);
	sink += x;
}

NOINLINE void walk(int depth, int fan, unsigned long x)
{
	if (depth == 0) {
		if (x & 1)
			leaf_a(x);
		else
			leaf_b(x);
		return;
	}
	for (int k = 0; k < fan; k++)
		walk(depth - 1, fan, x * 2654435761u + (unsigned long)k);
	if ((x >> 5 & 7) == 3)
		leaf_c(x);
}

static unsigned long mix(unsigned t, unsigned i)
{
	unsigned long x = (unsigned long)t * 0x9e3779b97f4a7c15ul ^ (unsigned long)i * 0xbf58476d1ce4e5b9ul;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebul;
	return x ^ x >> 29;
}

NOINLINE void step(unsigned t, unsigned i)
{
	unsigned long x = mix(t, i);
	int fan = 1 + (int)(x % 3), depth = 1 + (int)((x >> 8) % (fan == 3 ? 4u : 6u));

	tag(t, i);
	walk(depth, fan, x);
	if (x >> 20 & 1)
		leaf_c(x);
}

static void *worker(void *arg)
{
	unsigned t = (unsigned)(unsigned long)arg;

	for (long i = 0; i < iters; i++)
		step(t, (unsigned)i);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s THREADS ITERS SPIN\n", argv[0]);
		return 2;
	}
	int threads = atoi(argv[1]);
	iters = atol(argv[2]);
	spin = atol(argv[3]);
	if (threads < 1 || threads > 16 || iters < 1 || iters > 0xffffff || spin < 0) {
		fprintf(stderr, "flight: 1 <= THREADS <= 16, 1 <= ITERS <= %d, SPIN >= 0\n", 0xffffff);
		return 2;
	}
	pthread_t th[16];
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(unsigned long)t) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("threads %d iters %ld ns %ld\n", threads, iters,
	       (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
	return 0;
}
