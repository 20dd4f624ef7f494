/*
 * Bad entries in an ftlink-format table (badtable.S): refused at load (length 7, not in
 * executable code) or at the first patch (unexpected bytes), reported, never written; the
 * good site works.  Compiled without -pg: the only sites are badtable.S's.
 * Prints "site NAME ADDRESS" lines for the Go test to check the reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "check.h"

int bt_good(void), bt_len7(void), bt_wrong(void);
extern const unsigned char bt_ro[];

static volatile long hits;
static void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

int main(void)
{
	static const unsigned char prologue[5] = { 0x55, 0x48, 0x89, 0xe5, 0x5d };
	static struct ftrace_ops all = { .func = cb };
	int (*volatile good)(void) = bt_good, (*volatile l7)(void) = bt_len7,
	    (*volatile wrong)(void) = bt_wrong;
	struct ftrace_func_info fi;
	struct ftrace_stats st;
	char *buf = NULL, want[64];
	size_t len = 0;
	FILE *m;

	printf("site bt_len7 %#lx\n", (unsigned long)bt_len7);
	printf("site bt_ro %#lx\n", (unsigned long)bt_ro);
	printf("site bt_wrong %#lx\n", (unsigned long)bt_wrong);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_sites, 2);	/* bt_good, bt_wrong */
	CHECK_EQ(st.nr_refused, 2);
	CHECK_EQ(ftrace_lookup_function((unsigned long)bt_len7, &fi), -ENODEV);
	CHECK_EQ(ftrace_lookup_function((unsigned long)bt_ro, &fi), -ENODEV);
	CHECK_EQ(ftrace_lookup_function((unsigned long)bt_wrong, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_NOP);

	CHECK_EQ(register_ftrace_function(&all), 0);
	CHECK(calls_tramp_of(bt_good, &all));
	CHECK(!memcmp((void *)bt_wrong, prologue, 5));
	CHECK_EQ(ftrace_lookup_function((unsigned long)bt_wrong, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_REFUSED);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_refused, 3);
	CHECK_EQ(all.nr_sites, 1);	/* bt_good */
	CHECK_EQ(good(), 1);
	CHECK_EQ(hits, 1);
	CHECK_EQ(l7(), 2);
	CHECK_EQ(wrong(), 3);
	CHECK_EQ(hits, 1);
	/* The listing says so. */
	m = open_memstream(&buf, &len);
	CHECK_EQ(ftrace_print_functions(m), 0);
	fclose(m);
	/* A site refused while being patched no longer counts as matched. */
	snprintf(want, sizeof(want), "%#lx refused 0 bt_wrong [", (unsigned long)bt_wrong);
	CHECK(strstr(buf, want) != NULL);
	snprintf(want, sizeof(want), "%#lx tramp 1 bt_good [", (unsigned long)bt_good);
	CHECK(strstr(buf, want) != NULL);
	free(buf);
	CHECK_EQ(unregister_ftrace_function(&all), 0);
	CHECK_EQ(all.nr_sites, 0);
	CHECK(is_nop(bt_good));
	CHECK(!memcmp((void *)bt_wrong, prologue, 5));
	CHECK(!memcmp(bt_ro, "\x0f\x1f\x44\x00\x00", 5));
	DONE();
}
