/*
 * W^X: after every kind of patching (own trampolines, the shared callers, regs variants,
 * sites enabled and disabled again, trampolines freed) no mapping of the process is
 * writable and executable, every trampoline page is r-x while sites call it, and a freed
 * trampoline page is inaccessible.  Run with FTRT_POKE=mprotect too (the code pages are
 * then rwx during a batch only).
 */
#include <errno.h>
#include "check.h"

NOINLINE int f1(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int f2(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int f3(int x) { __asm__ volatile(""); return x + 3; }
NOINLINE int f4(int x) { __asm__ volatile(""); return x + 4; }

static volatile long hits;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

static struct ftrace_ops a = { .func = cb };				/* f1: own */
static struct ftrace_ops b = { .func = cb, .flags = FTRACE_OPS_FL_SAVE_REGS };	/* f2: own regs */
static struct ftrace_ops c = { .func = cb };				/* f3 */
static struct ftrace_ops d = { .func = cb };				/* f3: caller */
static struct ftrace_ops e = { .func = cb, .flags = FTRACE_OPS_FL_SAVE_REGS };	/* f4 */
static struct ftrace_ops g = { .func = cb };				/* f4: regs caller */

/* No W+X mapping anywhere; report where we are when there is one. */
static void check_wx(const char *when)
{
	char bad[512];
	int n = maps_wx(bad, sizeof(bad));

	if (n) {
		failures++;
		fprintf(stderr, "FAIL: %s: %d writable+executable mapping(s), first: %s", when, n, bad);
	}
}

/* The page fn's site calls is r-x; returns the target (0 for a nop). */
static uintptr_t check_target_rx(void *fn, const char *when)
{
	struct decoded dd = decode(fn);
	char perm[5];

	if (!dd.target)
		return 0;
	if (maps_perm(dd.target, perm) || strcmp(perm, "r-xp")) {
		failures++;
		fprintf(stderr, "FAIL: %s: trampoline %#lx is %s, want r-xp\n", when,
			(unsigned long)dd.target, perm);
	}
	return dd.target;
}

int main(void)
{
	int (*volatile fp[4])(int) = { f1, f2, f3, f4 };
	void *fns[4] = { (void *)f1, (void *)f2, (void *)f3, (void *)f4 };
	uintptr_t tramp[4];
	char perm[5];
	int i, round;

	check_wx("at start");
	for (round = 0; round < 3; round++) {
		CHECK_EQ(ftrace_set_filter(&a, "f1", 2, 1), 0);
		CHECK_EQ(ftrace_set_filter(&b, "f2", 2, 1), 0);
		CHECK_EQ(ftrace_set_filter(&c, "f3", 2, 1), 0);
		CHECK_EQ(ftrace_set_filter(&d, "f3", 2, 1), 0);
		CHECK_EQ(ftrace_set_filter(&e, "f4", 2, 1), 0);
		CHECK_EQ(ftrace_set_filter(&g, "f4", 2, 1), 0);
		CHECK_EQ(register_ftrace_function(&a), 0);
		check_wx("after registering an own trampoline");
		CHECK_EQ(register_ftrace_function(&b), 0);
		CHECK_EQ(register_ftrace_function(&c), 0);
		CHECK_EQ(register_ftrace_function(&d), 0);
		CHECK_EQ(register_ftrace_function(&e), 0);
		CHECK_EQ(register_ftrace_function(&g), 0);
		check_wx("with own, regs, caller and regs caller sites");
		CHECK(calls_tramp_of(f1, &a));
		CHECK(calls_tramp_of(f2, &b));
		CHECK(CALLS_SET(f3, 0, &d, &c));
		CHECK(CALLS_SET(f4, 1, &g, &e));
		for (i = 0; i < 4; i++)
			tramp[i] = check_target_rx(fns[i], "enabled");
		hits = 0;
		for (i = 0; i < 4; i++)
			CHECK_EQ(fp[i](1), 2 + i);
		CHECK_EQ(hits, 6);	/* f3 and f4 have two ops each */

		/* Move sites between states: f3 back to c's own trampoline, f4 to e's. */
		CHECK_EQ(unregister_ftrace_function(&d), 0);
		CHECK_EQ(unregister_ftrace_function(&g), 0);
		CHECK(calls_tramp_of(f3, &c));
		CHECK(calls_tramp_of(f4, &e));
		check_wx("after moving sites from the callers to own trampolines");
		check_target_rx(f3, "moved");
		check_target_rx(f4, "moved");

		CHECK_EQ(unregister_ftrace_function(&a), 0);
		CHECK_EQ(unregister_ftrace_function(&b), 0);
		CHECK_EQ(unregister_ftrace_function(&c), 0);
		CHECK_EQ(unregister_ftrace_function(&e), 0);
		for (i = 0; i < 4; i++)
			CHECK(is_nop(fns[i]));
		check_wx("after disabling every site");
		/* Unregistered trampolines are retired, still r-x, until a release round. */
		for (i = 0; i < 2; i++) {
			CHECK_EQ(maps_perm(tramp[i], perm), 0);
			CHECK(!strcmp(perm, "r-xp"));
		}
		CHECK_EQ(ftrace_synchronize(), 0);
		check_wx("after releasing the retired trampolines");
		/* a's and b's trampolines were freed: their pages are inaccessible. */
		for (i = 0; i < 2; i++) {
			CHECK_EQ(maps_perm(tramp[i], perm), 0);
			if (strcmp(perm, "---p")) {
				failures++;
				fprintf(stderr, "FAIL: freed trampoline %#lx is %s, want ---p\n",
					(unsigned long)tramp[i], perm);
			}
		}
		hits = 0;
		for (i = 0; i < 4; i++)
			CHECK_EQ(fp[i](1), 2 + i);
		CHECK_EQ(hits, 0);
	}
	/* Every site of the program (main's too), enabled and disabled. */
	CHECK_EQ(ftrace_set_filter(&a, NULL, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&a), 0);
	check_wx("with every site enabled");
	CHECK_EQ(unregister_ftrace_function(&a), 0);
	check_wx("with every site disabled again");
	DONE();
}
