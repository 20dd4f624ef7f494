/*
 * The plain half of callops_bench (built with -pg -mfentry only: no slot before the
 * functions): the own-trampoline site to compare with and the fentry baseline.
 */
#define NOINLINE __attribute__((noinline, aligned(64)))

int owned(int x);
int baseline(int x);
NOINLINE int owned(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int baseline(int x) { __asm__ volatile(""); return x + 1; }
