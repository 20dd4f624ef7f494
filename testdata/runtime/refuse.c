/*
 * A site whose bytes are not what the runtime left there is refused and never patched:
 * registering still works for the other sites; the refused site keeps its bytes.
 */
#include <stddef.h>
#include "check.h"

/* The patching engine (poke.h), used here to plant unexpected bytes. */
struct ftrt_poke {
	void *addr;
	unsigned char old[8];
	unsigned char new[8];
	unsigned char len;
};
int ftrt_text_poke_batch(struct ftrt_poke *p, size_t n, size_t *bad);

NOINLINE int victim(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE int bystander(int x) { __asm__ volatile(""); return x + 2; }

/* "aa bb cc" */
static const char *hexs(const unsigned char *b, unsigned n)
{
	static char buf[64];
	unsigned i;

	buf[0] = 0;
	for (i = 0; i < n && i < 16; i++)
		sprintf(buf + strlen(buf), i ? " %02x" : "%02x", b[i]);
	return buf;
}

static volatile long calls;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	calls++;
}

int main(void)
{
	static struct ftrace_ops ops = { .func = cb };
	struct ftrace_func_info fi;
	struct ftrace_stats st;
	struct ftrt_poke p;
	unsigned char planted[6];
	int (*volatile v)(int) = victim, (*volatile b)(int) = bystander;
	int32_t rel;

	CHECK_EQ(ftrace_lookup_function((unsigned long)victim, &fi), 0);
	/* Plant "call ftrace_stub" where the runtime expects its nop. */
	memset(&p, 0, sizeof(p));
	p.addr = (void *)fi.ip;
	p.len = (unsigned char)fi.len;
	memcpy(p.old, (void *)fi.ip, fi.len);
	rel = (int32_t)((unsigned long)ftrace_stub - (fi.ip + 5));
	p.new[0] = 0xe8;
	memcpy(p.new + 1, &rel, 4);
	if (fi.len == 6)
		p.new[5] = 0x90;
	CHECK_EQ(ftrt_text_poke_batch(&p, 1, NULL), 0);
	memcpy(planted, (void *)fi.ip, 6);
	/* For the Go test, which checks the report names this site, what it found and wanted. */
	printf("site victim %#lx\n", fi.ip);
	printf("found %s\n", hexs(planted, fi.len));
	printf("expected %s\n", hexs(p.old, fi.len));

	CHECK_EQ(ftrace_set_filter(&ops, "victim bystander", 16, 1), 0);
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(calls_tramp_of(bystander, &ops));
	CHECK_EQ(b(1), 3);
	CHECK_EQ(calls, 1);
	CHECK_EQ(v(1), 2);
	CHECK_EQ(calls, 1);
	CHECK(!memcmp(planted, (void *)fi.ip, 6));
	CHECK_EQ(ftrace_lookup_function((unsigned long)victim, &fi), 0);
	CHECK_EQ(fi.state, FTRACE_SITE_REFUSED);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_refused, 1);
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	CHECK(is_nop(bystander));
	CHECK(!memcmp(planted, (void *)fi.ip, 6));
	/* Registering again leaves it alone too. */
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(!memcmp(planted, (void *)fi.ip, 6));
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	DONE();
}
