/*
 * The lean trampoline.  A callback the runtime proves never touches the vector
 * registers nor reads its struct ftrace_regs (a leaf of plain integer instructions) gets a
 * clone of ftrace_caller_novec; any other gets the full ftrace_caller.  Either way the
 * traced functions' floating-point arguments arrive intact.  FTRT_NOVEC=0 (argument "off")
 * turns the shortcut off.  The lean template passes no frame and leaves %rcx alone, so the
 * integer arguments (the fourth is in %rcx) must arrive intact too, and the ip and parent
 * ip it computes must be right.  The decoder's verdicts on hand-written code are checked.
 */
#include <stdlib.h>
#include "check.h"

int ftrt_arch_scalar_leaf(const void *func);

NOINLINE double fd(double a, double b) { __asm__ volatile(""); return a * b + 1.0; }
NOINLINE double fd2(double a, double b, double c) { __asm__ volatile(""); return a * b - c; }

/* six integer arguments (rdi, rsi, rdx, rcx, r8, r9) and the parent ip seen from inside */
static void *fi_parent;
NOINLINE long fi(long a, long b, long c, long d, long e, long f)
{
	fi_parent = __builtin_return_address(0);
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

static unsigned long hits;
static volatile double sink;
static double seen;

static CB void cb_count(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op; (void)fr;
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

/* a leaf that records its ip and parent ip: gets the lean template like cb_count */
static unsigned long where_ip, where_pip;
static CB void cb_where(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fr)
{
	(void)op; (void)fr;
	__atomic_store_n(&where_ip, ip, __ATOMIC_RELAXED);
	__atomic_store_n(&where_pip, pip, __ATOMIC_RELAXED);
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

/* uses xmm registers: must get the full template */
static CB void cb_sse(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
		      struct ftrace_regs *fr)
{
	(void)pip; (void)op; (void)fr;
	sink = sink * 1.5 + (double)(ip & 0xff);
	__asm__ volatile("xorps %%xmm0, %%xmm0\n\txorps %%xmm1, %%xmm1" ::: "xmm0", "xmm1");
	hits++;
}

/* reads the saved vector argument from the frame: must get the full template */
static CB void cb_fregs(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op;
	memcpy(&seen, fr->xmm[0], sizeof(seen));
	hits++;
}

static NOINLINE ftrace_notrace void helper(void) { __asm__ volatile(""); hits++; }

/* calls another function: must get the full template */
static CB void cb_calls(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op; (void)fr;
	helper();
}

static void one(ftrace_func_t cb, int want_novec, const char *name)
{
	struct ftrace_ops ops = { .func = cb };
	struct decoded d;

	struct ftrace_func_info info;
	long r;

	hits = 0;
	seen = 0;
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)fd, 0, 1), 0);
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)fd2, 0, 0), 0);
	CHECK_EQ(ftrace_set_filter_ip(&ops, (unsigned long)fi, 0, 0), 0);
	CHECK_EQ(register_ftrace_function(&ops), 0);
	CHECK(calls_tramp_of(fd, &ops));
	d = decode(fd);
	if (d.novec != want_novec) {
		failures++;
		fprintf(stderr, "FAIL: %s: novec trampoline %d, want %d\n", name, d.novec, want_novec);
	}
	CHECK(fd(1.5, 2.0) == 4.0);
	CHECK(fd2(3.0, 0.5, 0.25) == 1.25);
	CHECK_EQ(hits, 2);
	if (cb == cb_fregs)
		CHECK(seen == 3.0);	/* fd2's first argument, the last call */
	CHECK(calls_tramp_of(fi, &ops));
	r = fi(1, 10, 100, 1000, 10000, 100000);
	CHECK_EQ(r, 1 + 20 + 300 + 4000 + 50000 + 600000);
	CHECK_EQ(hits, 3);
	if (cb == cb_where) {
		CHECK_EQ(ftrace_lookup_function((unsigned long)fi, &info), 0);
		CHECK_EQ(where_ip, info.ip);
		CHECK_EQ(where_pip, (unsigned long)fi_parent);
	}
	CHECK_EQ(unregister_ftrace_function(&ops), 0);
	CHECK(is_nop(fd));
	ftrace_free_filter(&ops);
	printf("%s novec=%d\n", name, d.novec);
}

struct verdict {
	const char *what;
	unsigned char code[24];
	int want;
};

/* Padded with int3 (never accepted), so a decoder that runs past the code says no. */
#define PAD 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc
static const struct verdict verdicts[] = {
	{ "ret", { 0xc3, PAD }, 1 },
	{ "endbr64; ret", { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3, PAD }, 1 },
	{ "lock addq $1, x(%rip)", { 0xf0, 0x48, 0x83, 0x05, 0, 0, 0, 0, 0x01, 0xc3, PAD }, 1 },
	{ "mov 16(%rdx), %rax; lock addq $1, (%rax)",
	  { 0x48, 0x8b, 0x42, 0x10, 0xf0, 0x48, 0x83, 0x00, 0x01, 0xc3, PAD }, 1 },
	{ "mov (%r9), %rax", { 0x49, 0x8b, 0x01, 0xc3, PAD }, 1 },
	{ "mov %bpl, %al (REX)", { 0x40, 0x88, 0xe8, 0xc3, PAD }, 1 },
	{ "forward branch past a ret",
	  { 0x85, 0xff, 0x74, 0x01, 0xc3, 0x31, 0xc0, 0xc3, PAD }, 1 },
	{ "counted loop", { 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3, PAD }, 1 },
	{ "rdtsc", { 0x0f, 0x31, 0xc3, PAD }, 1 },
	{ "realign the stack", { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0xc9, 0xc3, PAD }, 1 },
	{ "movaps", { 0x0f, 0x28, 0xc1, 0xc3, PAD }, 0 },
	{ "pxor", { 0x66, 0x0f, 0xef, 0xc0, 0xc3, PAD }, 0 },
	{ "vzeroupper", { 0xc5, 0xf8, 0x77, 0xc3, PAD }, 0 },
	{ "fldz", { 0xd9, 0xee, 0xc3, PAD }, 0 },
	{ "call", { 0xe8, 0, 0, 0, 0, 0xc3, PAD }, 0 },
	{ "call *x(%rip)", { 0xff, 0x15, 0, 0, 0, 0, 0xc3, PAD }, 0 },
	{ "jmp *%rax", { 0xff, 0xe0, PAD }, 0 },
	{ "tail jump elsewhere", { 0xe9, 0x00, 0x10, 0x00, 0x00, PAD }, 0 },
	{ "mov (%rcx), %rax", { 0x48, 0x8b, 0x01, 0xc3, PAD }, 0 },
	{ "mov %rcx, %rax", { 0x48, 0x89, 0xc8, 0xc3, PAD }, 0 },
	{ "mov (%rax,%rcx,8), %rax", { 0x48, 0x8b, 0x04, 0xc8, 0xc3, PAD }, 0 },
	{ "mov %ch, %al", { 0x88, 0xe8, 0xc3, PAD }, 0 },
	{ "shl %cl, %eax", { 0xd3, 0xe0, 0xc3, PAD }, 0 },
	{ "rep movsb", { 0xf3, 0xa4, 0xc3, PAD }, 0 },
	{ "cpuid", { 0x0f, 0xa2, 0xc3, PAD }, 0 },
	{ "rdtscp", { 0x0f, 0x01, 0xf9, 0xc3, PAD }, 0 },
	{ "xchg %ecx, %eax", { 0x91, 0xc3, PAD }, 0 },
	{ "push %rcx", { 0x51, 0x59, 0xc3, PAD }, 0 },
	{ "mov $1, %ecx", { 0xb9, 0x01, 0x00, 0x00, 0x00, 0xc3, PAD }, 0 },
	{ "xor %ecx, %ecx", { 0x31, 0xc9, 0xc3, PAD }, 0 },
	{ "mov %r9, %rcx (REX.R clear)", { 0x4c, 0x89, 0xc9, 0xc3, PAD }, 0 },
	{ "mov %rcx, %r9", { 0x49, 0x89, 0xc9, 0xc3, PAD }, 0 },
	{ "jump into an instruction",
	  { 0xeb, 0x01, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, PAD }, 0 },
	{ "falls into int3", { 0x31, 0xc0, PAD }, 0 },
};

int main(int argc, char **argv)
{
	int off = argc > 1 && !strcmp(argv[1], "off");
	size_t i;

	for (i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		int got = ftrt_arch_scalar_leaf(verdicts[i].code);

		if (got != verdicts[i].want) {
			failures++;
			fprintf(stderr, "FAIL: decoder says %d for \"%s\", want %d\n", got,
				verdicts[i].what, verdicts[i].want);
		}
	}
	one(cb_count, !off, "count");
	one(cb_where, !off, "where");
	one(cb_sse, 0, "sse");
	one(cb_fregs, 0, "fregs");
	one(cb_calls, 0, "calls");
	CHECK_EQ(ftrace_synchronize(), 0);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
