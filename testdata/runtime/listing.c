/*
 * The listing (available_filter_functions): ftrace_for_each_function,
 * ftrace_lookup_function and ftrace_print_functions report every site once, in address
 * order, with the state, target, owner and matching-ops count that the site's bytes (decoded
 * independently of the runtime's records) say: nop, own trampoline (owner = its ops), shared
 * caller, shared regs caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "check.h"

NOINLINE int f_nop(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int f_own(int x) { __asm__ volatile(""); return x + 2; }
NOINLINE int f_regs(int x) { __asm__ volatile(""); return x + 3; }
NOINLINE int f_list(int x) { __asm__ volatile(""); return x + 4; }
NOINLINE int f_rlist(int x) { __asm__ volatile(""); return x + 5; }

static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
}

static struct ftrace_ops own = { .func = cb };
static struct ftrace_ops regs = { .func = cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
static struct ftrace_ops l1 = { .func = cb };
static struct ftrace_ops l2 = { .func = cb };
static struct ftrace_ops r1 = { .func = cb, .flags = FTRACE_OPS_FL_SAVE_REGS };
static struct ftrace_ops r2 = { .func = cb };

struct want {
	void *fn;
	const char *name;
	enum ftrace_site_state state;
	unsigned nr_ops;
	struct ftrace_ops *owner;
	int seen;
};

static struct want wants[] = {
	{ (void *)f_nop, "f_nop", FTRACE_SITE_NOP, 0, NULL, 0 },
	{ (void *)f_own, "f_own", FTRACE_SITE_TRAMP, 1, &own, 0 },
	{ (void *)f_regs, "f_regs", FTRACE_SITE_TRAMP, 1, &regs, 0 },
	{ (void *)f_list, "f_list", FTRACE_SITE_CALLER, 2, NULL, 0 },
	{ (void *)f_rlist, "f_rlist", FTRACE_SITE_REGS_CALLER, 2, NULL, 0 },
};
#define NW (sizeof(wants) / sizeof(wants[0]))

static const char *const state_names[] = { "nop", "tramp", "caller", "regs_caller", "refused",
					   "multi", "direct" };

struct walk {
	unsigned long n, prev;
	int sorted;
	const char *prev_obj;
};

/* Check one listed site against what its bytes say, and the expectations. */
static CB int visit(const struct ftrace_func_info *fi, void *data)
{
	struct walk *w = data;
	const unsigned char *s = (const unsigned char *)fi->ip;
	unsigned i;

	if (w->n && w->prev_obj == fi->object && fi->ip <= w->prev)
		w->sorted = 0;
	w->prev = fi->ip;
	w->prev_obj = fi->object;
	w->n++;
	CHECK(fi->len == 5 || fi->len == 6);
	/* The state agrees with the bytes. */
	if (fi->state == FTRACE_SITE_NOP) {
		CHECK_EQ(fi->target, 0);
		CHECK(s[0] != 0xe8);
	} else if (fi->state != FTRACE_SITE_REFUSED) {
		CHECK_EQ(s[0], 0xe8);
		CHECK_EQ(fi->target, fi->ip + 5 + rd32(s + 1));
	}
	CHECK(fi->state == FTRACE_SITE_TRAMP ? fi->owner != NULL : fi->owner == NULL);
	for (i = 0; i < NW; i++) {
		if (strcmp(fi->name, wants[i].name))
			continue;
		wants[i].seen++;
		CHECK_EQ(fi->state, wants[i].state);
		CHECK_EQ(fi->nr_ops, wants[i].nr_ops);
		CHECK(fi->owner == wants[i].owner);
		CHECK_EQ(fi->func, (unsigned long)wants[i].fn);
		CHECK(fi->object && fi->object[0]);
	}
	return 0;
}

static CB int stop_at_third(const struct ftrace_func_info *fi, void *data)
{
	(void)fi;
	return ++*(int *)data == 3 ? 42 : 0;
}

int main(void)
{
	struct ftrace_func_info fi;
	struct ftrace_stats st;
	struct walk w = { 0, 0, 1, NULL };
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, i, lines = 0;
	FILE *mem;
	int n = 0;

	CHECK_EQ(ftrace_set_filter(&own, "f_own", 5, 1), 0);
	CHECK_EQ(ftrace_set_filter(&regs, "f_regs", 6, 1), 0);
	CHECK_EQ(ftrace_set_filter(&l1, "f_list", 6, 1), 0);
	CHECK_EQ(ftrace_set_filter(&l2, "f_list", 6, 1), 0);
	CHECK_EQ(ftrace_set_filter(&r1, "f_rlist", 7, 1), 0);
	CHECK_EQ(ftrace_set_filter(&r2, "f_rlist", 7, 1), 0);
	if (!multi_off())	/* the two-ops sites run a trampoline of their set */
		wants[3].state = wants[4].state = FTRACE_SITE_MULTI;
	CHECK_EQ(register_ftrace_function(&own), 0);
	CHECK_EQ(register_ftrace_function(&regs), 0);
	CHECK_EQ(register_ftrace_function(&l1), 0);
	CHECK_EQ(register_ftrace_function(&l2), 0);
	CHECK_EQ(register_ftrace_function(&r1), 0);
	CHECK_EQ(register_ftrace_function(&r2), 0);
	/* independent decoding of the bytes first */
	CHECK(is_nop(f_nop));
	CHECK(calls_tramp_of(f_own, &own));
	CHECK(calls_tramp_of(f_regs, &regs));
	CHECK(CALLS_SET(f_list, 0, &l2, &l1));
	CHECK(CALLS_SET(f_rlist, 1, &r2, &r1));

	CHECK_EQ(ftrace_for_each_function(visit, &w), 0);
	ftrace_get_stats(&st);
	CHECK_EQ(w.n, st.nr_sites);
	CHECK(w.sorted);
	for (i = 0; i < NW; i++) {
		struct decoded d = decode(wants[i].fn);

		CHECK_EQ(wants[i].seen, 1);
		CHECK_EQ(ftrace_lookup_function((unsigned long)wants[i].fn, &fi), 0);
		CHECK_EQ(fi.state, wants[i].state);
		CHECK(fi.owner == wants[i].owner);
		CHECK_EQ(fi.nr_ops, wants[i].nr_ops);
		CHECK_EQ(fi.target, d.target);
		CHECK(!strcmp(fi.name, wants[i].name));
		CHECK_EQ(ftrace_lookup_function(fi.ip, &fi), 0);	/* by site address too */
		CHECK_EQ(fi.func, (unsigned long)wants[i].fn);
	}
	/* The two shared callers are distinct and each serves its sites. */
	CHECK(decode(f_list).target != decode(f_rlist).target);
	CHECK_EQ(ftrace_lookup_function((unsigned long)&wants, &fi), -ENODEV);
	/* The walk stops at the first non-zero return and returns it. */
	CHECK_EQ(ftrace_for_each_function(stop_at_third, &n), 42);
	CHECK_EQ(n, 3);

	/* The printed list: one line per site, "addr state nr_ops name [object]". */
	mem = open_memstream(&buf, &len);
	CHECK(mem != NULL);
	CHECK_EQ(ftrace_print_functions(mem), 0);
	fclose(mem);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long ip;
		char state[16], name[128], obj[512];
		unsigned nr;

		lines++;
		if (sscanf(line, "%lx %15s %u %127s [%511[^]]]", &ip, state, &nr, name, obj) != 5) {
			failures++;
			fprintf(stderr, "FAIL: bad listing line %s\n", line);
			continue;
		}
		CHECK_EQ(ftrace_lookup_function(ip, &fi), 0);
		CHECK(!strcmp(state, state_names[fi.state]));
		CHECK_EQ(nr, fi.nr_ops);
		CHECK(!strcmp(obj, fi.object));
		for (i = 0; i < NW; i++)
			if (!strcmp(name, wants[i].name)) {
				CHECK(!strcmp(state, state_names[wants[i].state]));
				CHECK_EQ(nr, wants[i].nr_ops);
				CHECK_EQ(ip, decode(wants[i].fn).site);
				wants[i].seen++;
			}
	}
	free(buf);
	CHECK_EQ(lines, st.nr_sites);
	for (i = 0; i < NW; i++)
		CHECK_EQ(wants[i].seen, 2);

	/* Unregistering moves the sites back: the listing follows. */
	CHECK_EQ(unregister_ftrace_function(&l2), 0);
	CHECK_EQ(unregister_ftrace_function(&r2), 0);
	CHECK_EQ(ftrace_lookup_function((unsigned long)f_list, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_TRAMP);
	CHECK(fi.owner == &l1);
	CHECK_EQ(fi.nr_ops, 1);
	CHECK_EQ(ftrace_lookup_function((unsigned long)f_rlist, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_TRAMP);
	CHECK(fi.owner == &r1);
	CHECK_EQ(unregister_ftrace_function(&own), 0);
	CHECK_EQ(unregister_ftrace_function(&regs), 0);
	CHECK_EQ(unregister_ftrace_function(&l1), 0);
	CHECK_EQ(unregister_ftrace_function(&r1), 0);
	for (i = 0; i < NW; i++) {
		CHECK_EQ(ftrace_lookup_function((unsigned long)wants[i].fn, &fi), 0);
		CHECK_EQ(fi.state, FTRACE_SITE_NOP);
		CHECK_EQ(fi.nr_ops, 0);
		CHECK(fi.owner == NULL);
	}
	DONE();
}
