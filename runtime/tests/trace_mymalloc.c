/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program with its own (instrumented) malloc, as allocators and leak checkers define:
 * the runtime's pthread_create wrapper must not call it, or the call is recorded as one
 * the program made. Threads allocate; main does not. Prints the allocations it made.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int allocs;

__attribute__((noinline)) void *malloc(size_t n) { __atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
__attribute__((noinline)) void free(void *p) { __libc_free(p); }

static void *worker(void *arg)
{
	char *p = malloc(64);

	/* used where the compiler cannot see: the pair is not optimised away */
	__asm__ volatile("" : : "r"(p), "r"(arg) : "memory");
	free(p);
	return NULL;
}

int main(void)
{
	pthread_t th[4];

	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("threads allocated at least %d\n", allocs >= 4 ? 4 : allocs);
	return 0;
}
