/*
 * Filter matrix: globs, `!` removal, notrace, by address, errors, changing the filter of a
 * registered ops, and the function listing.  Expected sets are checked both by the calls
 * the callback really sees and by ftrace_ops_test().
 */
#include <errno.h>
#include "check.h"

NOINLINE int alpha_one(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int alpha_two(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int beta_one(int x) { __asm__ volatile(""); return x + 3; }
NOINLINE int beta_two(int x) { __asm__ volatile(""); return x + 4; }
NOINLINE int gammaf_x(int x) { __asm__ volatile(""); return x + 5; }
NOINLINE int axyzb(int x) { __asm__ volatile(""); return x + 6; }

enum { A1 = 1, A2 = 2, B1 = 4, B2 = 8, G = 16, AB = 32 };
static int (*const fns[])(int) = { alpha_one, alpha_two, beta_one, beta_two, gammaf_x, axyzb };
#define NF 6
static unsigned long sites[NF];
static volatile long counts[NF];

static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)p; (void)op; (void)r;
	for (int i = 0; i < NF; i++)
		if (sites[i] == ip)
			counts[i]++;
}

/* Which of our functions ops traces: by calling them, and by ftrace_ops_test. */
static CB unsigned traced(struct ftrace_ops *ops)
{
	unsigned seen = 0, tested = 0;
	volatile int sink = 0;

	for (int i = 0; i < NF; i++)
		counts[i] = 0;
	CHECK_EQ(register_ftrace_function(ops), 0);
	for (int i = 0; i < NF; i++)
		sink += fns[i](i);
	CHECK_EQ(unregister_ftrace_function(ops), 0);
	for (int i = 0; i < NF; i++) {
		CHECK(counts[i] == 0 || counts[i] == 1);
		if (counts[i])
			seen |= 1u << i;
		if (ftrace_ops_test(ops, sites[i]))
			tested |= 1u << i;
	}
	CHECK_EQ(seen, tested);
	(void)sink;
	return seen;
}

static CB int filter(struct ftrace_ops *ops, const char *s, int reset)
{
	return ftrace_set_filter(ops, s, (int)strlen(s), reset);
}

static CB int notrace(struct ftrace_ops *ops, const char *s, int reset)
{
	return ftrace_set_notrace(ops, s, (int)strlen(s), reset);
}

static const struct { const char *pat; unsigned want; } globs[] = {
	{ "alpha_*", A1 | A2 },
	{ "*_one", A1 | B1 },
	{ "*ta_t*", B2 },
	{ "a*b", AB },
	{ "gammaf_?", G },
	{ "[ab]*_one", A1 | B1 },
	{ "[!a]*_two", B2 },
	{ "alpha_* !alpha_two", A1 },
	{ "beta_one,gammaf_x", B1 | G },
	{ "*_* !beta_*", A1 | A2 | G },
	{ "alpha_one\talpha_two\nbeta_two", A1 | A2 | B2 },
};

struct listing { unsigned found; unsigned traced_nops; };

static CB int list_cb(const struct ftrace_func_info *fi, void *data)
{
	struct listing *l = data;
	static const char *const names[NF] = { "alpha_one", "alpha_two", "beta_one", "beta_two", "gammaf_x", "axyzb" };

	for (int i = 0; i < NF; i++)
		if (fi->ip == sites[i] && !strcmp(fi->name, names[i])) {
			l->found |= 1u << i;
			if (fi->state == FTRACE_SITE_TRAMP && fi->nr_ops == 1)
				l->traced_nops |= 1u << i;
		}
	return 0;
}

int main(void)
{
	static struct ftrace_ops ops = { .func = cb };
	struct ftrace_func_info fi;
	struct listing l = { 0, 0 };

	for (int i = 0; i < NF; i++) {
		CHECK_EQ(ftrace_lookup_function((unsigned long)fns[i], &fi), 0);
		sites[i] = fi.ip;
	}

	for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++) {
		int r = filter(&ops, globs[i].pat, 1);
		unsigned got;

		CHECK_EQ(r, 0);
		got = traced(&ops);
		if (got != globs[i].want) {
			failures++;
			fprintf(stderr, "FAIL: filter \"%s\": traced %#x, want %#x\n", globs[i].pat, got, globs[i].want);
		}
	}

	/* Adding without reset accumulates. */
	CHECK_EQ(filter(&ops, "gammaf_x", 1), 0);
	CHECK_EQ(filter(&ops, "axyzb", 0), 0);
	CHECK_EQ(traced(&ops), G | AB);

	/* notrace with an empty filter: everything but the excluded. */
	CHECK_EQ(ftrace_set_filter(&ops, NULL, 0, 1), 0);
	CHECK_EQ(notrace(&ops, "alpha_* beta_*", 1), 0);
	CHECK_EQ(traced(&ops), G | AB);
	/* filter and notrace together. */
	CHECK_EQ(filter(&ops, "alpha_*", 1), 0);
	CHECK_EQ(notrace(&ops, "alpha_two", 1), 0);
	CHECK_EQ(traced(&ops), A1);
	CHECK_EQ(ftrace_set_notrace(&ops, NULL, 0, 1), 0);

	/* By address (function entry or site), remove, notrace by address. */
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)alpha_two, 0, 1), 0);
	CHECK_EQ(ftrace_set_filter_ip(&ops, sites[4], 0, 0), 0);
	CHECK_EQ(traced(&ops), A2 | G);
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)alpha_two, 1, 0), 0);
	CHECK_EQ(traced(&ops), G);
	CHECK_EQ(ftrace_set_filter(&ops, NULL, 0, 1), 0);
	CHECK_EQ(ftrace_set_notrace_ip(&ops, (unsigned long)gammaf_x, 0, 1), 0);
	CHECK_EQ(traced(&ops) & 63, (A1 | A2 | B1 | B2 | AB));
	CHECK_EQ(ftrace_set_notrace(&ops, NULL, 0, 1), 0);

	/* Errors leave the filter as it was. */
	CHECK_EQ(filter(&ops, "beta_two", 1), 0);
	CHECK_EQ(filter(&ops, "no_such_function", 1), -ENODEV);
	/* an unclosed [ is a [ (the kernel's glob_match, fnmatch): a name, here of none */
	CHECK_EQ(filter(&ops, "[abc", 1), -ENODEV);
	CHECK_EQ(filter(&ops, "!", 0), -EINVAL);
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)&failures, 0, 1), -ENODEV);
	CHECK_EQ(traced(&ops), B2);

	/* Changing the filter of a registered ops moves its sites. */
	CHECK_EQ(filter(&ops, "alpha_one", 1), 0);
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(calls_tramp_of(alpha_one, &ops) && is_nop(beta_one));
	CHECK_EQ(filter(&ops, "beta_one", 1), 0);
	CHECK(calls_tramp_of(beta_one, &ops) && is_nop(alpha_one));
	counts[0] = counts[2] = 0;
	CHECK_EQ(fns[0](1) + fns[2](1), 6);	/* through pointers: no specialised clones */
	CHECK_EQ(counts[0], 0);
	CHECK_EQ(counts[2], 1);
	CHECK_EQ(filter(&ops, "alpha_*", 0), 0);
	CHECK(calls_tramp_of(alpha_one, &ops) && calls_tramp_of(alpha_two, &ops) && calls_tramp_of(beta_one, &ops));

	/* The listing names every function and shows the states. */
	CHECK_EQ(ftrace_for_each_function(list_cb, &l), 0);
	CHECK_EQ(l.found, 63);
	CHECK_EQ(l.traced_nops, A1 | A2 | B1);
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	DONE();
}
