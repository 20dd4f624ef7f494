/*
 * Coroutines on makecontext stacks switching with swapcontext in the middle of traced
 * calls; the graph tracer must follow (or at least survive) every switch.
 *
 * usage: trace_ucontext [raw] [rounds]
 *   raw: switch with libc's own swapcontext (looked up in libc.so.6), which the runtime
 *        does not see: the switches are only found from the stack addresses.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define NCO 3
#define STACK (64 * 1024)

static int (*swap)(ucontext_t *, const ucontext_t *) = swapcontext;
static ucontext_t sched_ctx, co_ctx[NCO], jump_ctx;
static char co_stack[2][STACK] __attribute__((aligned(16)));	/* adjacent in .bss */
static unsigned long sum, nleaf, nbetween;
static int cur, rounds = 200, finished[NCO];
volatile int sink;

__attribute__((noinline)) void leaf(unsigned long v) { sum = sum * 31 + v; nleaf++; }

/* Give the scheduler the CPU back from deep inside traced calls. */
__attribute__((noinline)) void yield(int id)
{
	leaf(100 + id);
	swap(&co_ctx[id], &sched_ctx);
	leaf(200 + id);
}

__attribute__((noinline)) void level2(int id, int i)
{
	leaf(i);
	if (i % 2 == 0)
		yield(id);
	leaf(i + 1);
}

__attribute__((noinline)) void level1(int id, int i)
{
	level2(id, i);
	if (i % 3 == 0)
		yield(id);
	leaf(i * 7);
}

/* A coroutine: nested calls that switch away in the middle; co 0 finishes early. */
__attribute__((noinline)) void co_main(int id)
{
	int n = id == 0 ? rounds / 4 : rounds;

	for (int i = 0; i < n; i++)
		level1(id, i);
	leaf(1000 + id);
	finished[id] = 1;
	/* returns through uc_link to the scheduler */
}

/* Calls made between switches on the scheduler's stack: they must graph normally. */
__attribute__((noinline)) void between(int k) { leaf(k); leaf(k + 1); nbetween++; }

__attribute__((noinline)) int resume(int id)
{
	int r;

	cur = id;
	r = swap(&sched_ctx, &co_ctx[id]);
	between(id);
	return r;
}

/* getcontext/setcontext used as setjmp/longjmp, out of traced frames. */
static volatile int jumps;

__attribute__((noinline)) void deep2(void) { leaf(7); setcontext(&jump_ctx); }
__attribute__((noinline)) void deep1(void) { deep2(); leaf(8); }

__attribute__((noinline)) void jumper(void)
{
	getcontext(&jump_ctx);
	if (jumps++ < 3)
		deep1();
	leaf(9);
}

__attribute__((noinline)) int schedule(void)
{
	int done[NCO] = { 0 }, left = NCO, steps = 0;
	void *mstack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mstack == MAP_FAILED)
		return -1;
	for (int id = 0; id < NCO; id++) {
		getcontext(&co_ctx[id]);
		co_ctx[id].uc_stack.ss_sp = id < 2 ? co_stack[id] : mstack;
		co_ctx[id].uc_stack.ss_size = STACK;
		co_ctx[id].uc_link = &sched_ctx;
		makecontext(&co_ctx[id], (void (*)(void))co_main, 1, id);
	}
	while (left) {
		for (int id = 0; id < NCO; id++) {
			if (done[id])
				continue;
			resume(id);
			steps++;
			/* one that returned came back through uc_link */
			if (finished[id]) {
				done[id] = 1;
				left--;
			}
		}
		between(steps);
		if (steps > 100000)
			break;
	}
	munmap(mstack, STACK);
	return steps;
}

int main(int argc, char **argv)
{
	int a = 1;

	if (a < argc && argv[a][0] == 'r') {
		void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

		swap = h ? (int (*)(ucontext_t *, const ucontext_t *))dlsym(h, "swapcontext") : NULL;
		if (!swap)
			return 2;
		a++;
	}
	if (a < argc)
		rounds = atoi(argv[a]);
	printf("steps %d\n", schedule());
	jumper();
	printf("jumps %d sum %lu leaf %lu between %lu\n", jumps, sum, nleaf, nbetween);
	return 0;
}
