/*
 * The lean trampoline.  A callback the runtime proves never touches the vector
 * registers nor reads its struct ftrace_regs (a leaf of plain integer instructions) gets a
 * clone of ftrace_caller_novec; any other gets the full ftrace_caller.  Either way the
 * traced functions' floating-point arguments arrive intact.  FTRT_NOVEC=0 (argument "off")
 * turns the shortcut off.  The lean template saves the integer argument registers and
 * passes a frame of them only: the integer arguments (the fourth is in %rcx) must arrive
 * intact too, and the ip and parent ip it computes must be right.  A lean callback calls
 * other code through ftrt_lean_call, which fills the frame's vector registers, ip and sp
 * first and restores the vector registers after.  The decoder's verdicts on hand-written
 * code are checked.
 */
#include <stdlib.h>
#include "check.h"

int ftrt_arch_scalar_leaf(const void *func, int frame);
void ftrt_lean_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		    struct ftrace_regs *fregs, ftrace_func_t fn);

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

/*
 * cb_escape's slow path: reads the frame (vector argument, fourth integer argument, return
 * slot) and clobbers xmm0 and xmm1, which ftrt_lean_call must give back.
 */
static unsigned long seen_arg3, seen_ret;
static NOINLINE ftrace_notrace void slow_sse(unsigned long ip, unsigned long pip,
					     struct ftrace_ops *op, struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op;
	memcpy(&seen, fr->xmm[0], sizeof(seen));
	seen_arg3 = ftrace_regs_get_argument(fr, 3);
	seen_ret = *ftrace_regs_get_return_slot(fr);
	sink = sink * 1.5 + seen;
	__asm__ volatile("xorps %%xmm0, %%xmm0\n\txorps %%xmm1, %%xmm1" ::: "xmm0", "xmm1");
	hits++;
}

/* reads an integer argument from its frame: lean only if its ops says that is all it reads */
static CB void cb_intarg(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			 struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op;
	__atomic_store_n(&seen_arg3, ftrace_regs_get_argument(fr, 3), __ATOMIC_RELAXED);
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

/* a leaf but for its call through ftrt_lean_call: gets the lean template */
static CB void cb_escape(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			 struct ftrace_regs *fr)
{
	ftrt_lean_call(ip, pip, op, fr, slow_sse);
}

/* calls another function: must get the full template */
static CB void cb_calls(unsigned long ip, unsigned long pip, struct ftrace_ops *op,
			struct ftrace_regs *fr)
{
	(void)ip; (void)pip; (void)op; (void)fr;
	helper();
}

/* an ops flag of the runtime's: the callback reads only the integer registers of its frame */
#define FTRT_OPS_FL_LEAN_FRAME	(1UL << 29)

static void one(ftrace_func_t cb, unsigned long flags, int want_novec, const char *name)
{
	struct ftrace_ops ops = { .func = cb, .flags = flags };
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
	if (want_novec >= 0 && d.novec != want_novec) {
		failures++;
		fprintf(stderr, "FAIL: %s: novec trampoline %d, want %d\n", name, d.novec, want_novec);
	}
	CHECK(fd(1.5, 2.0) == 4.0);
	CHECK(fd2(3.0, 0.5, 0.25) == 1.25);
	CHECK_EQ(hits, 2);
	if (cb == cb_fregs || cb == cb_escape)
		CHECK(seen == 3.0);	/* fd2's first argument, the last call */
	CHECK(calls_tramp_of(fi, &ops));
	r = fi(1, 10, 100, 1000, 10000, 100000);
	CHECK_EQ(r, 1 + 20 + 300 + 4000 + 50000 + 600000);
	CHECK_EQ(hits, 3);
	if (cb == cb_intarg)
		CHECK_EQ(seen_arg3, 1000);
	if (cb == cb_escape) {
		CHECK_EQ(seen_arg3, 1000);
		CHECK_EQ(seen_ret, (unsigned long)fi_parent);
	}
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

/* want: the verdict for any callback; also_frame: yes too for one allowed its frame (%rcx) */
struct verdict {
	const char *what;
	unsigned char code[24];
	int want, also_frame;
};

/* Padded with int3 (never accepted), so a decoder that runs past the code says no. */
#define PAD 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc
static const struct verdict verdicts[] = {
	{ "ret", { 0xc3, PAD }, 1, 0 },
	{ "endbr64; ret", { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3, PAD }, 1, 0 },
	{ "lock addq $1, x(%rip)", { 0xf0, 0x48, 0x83, 0x05, 0, 0, 0, 0, 0x01, 0xc3, PAD }, 1, 0 },
	{ "mov 16(%rdx), %rax; lock addq $1, (%rax)",
	  { 0x48, 0x8b, 0x42, 0x10, 0xf0, 0x48, 0x83, 0x00, 0x01, 0xc3, PAD }, 1, 0 },
	{ "mov (%r9), %rax", { 0x49, 0x8b, 0x01, 0xc3, PAD }, 1, 0 },
	{ "mov %bpl, %al (REX)", { 0x40, 0x88, 0xe8, 0xc3, PAD }, 1, 0 },
	{ "forward branch past a ret",
	  { 0x85, 0xff, 0x74, 0x01, 0xc3, 0x31, 0xc0, 0xc3, PAD }, 1, 0 },
	{ "counted loop", { 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3, PAD }, 1, 0 },
	{ "rdtsc", { 0x0f, 0x31, 0xc3, PAD }, 1, 0 },
	{ "mov %fs:0x10(%rax), %rax", { 0x64, 0x48, 0x8b, 0x40, 0x10, 0xc3, PAD }, 1, 0 },
	{ "mov %gs:0x10(%rax), %rax", { 0x65, 0x48, 0x8b, 0x40, 0x10, 0xc3, PAD }, 0, 0 },
	{ "realign the stack", { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0xc9, 0xc3, PAD }, 1, 0 },
	{ "movaps", { 0x0f, 0x28, 0xc1, 0xc3, PAD }, 0, 0 },
	{ "pxor", { 0x66, 0x0f, 0xef, 0xc0, 0xc3, PAD }, 0, 0 },
	{ "vzeroupper", { 0xc5, 0xf8, 0x77, 0xc3, PAD }, 0, 0 },
	{ "fldz", { 0xd9, 0xee, 0xc3, PAD }, 0, 0 },
	{ "call", { 0xe8, 0, 0, 0, 0, 0xc3, PAD }, 0, 0 },
	{ "call *x(%rip)", { 0xff, 0x15, 0, 0, 0, 0, 0xc3, PAD }, 0, 0 },
	{ "jmp *%rax", { 0xff, 0xe0, PAD }, 0, 0 },
	{ "tail jump elsewhere", { 0xe9, 0x00, 0x10, 0x00, 0x00, PAD }, 0, 0 },
	{ "mov (%rcx), %rax", { 0x48, 0x8b, 0x01, 0xc3, PAD }, 0, 1 },
	{ "mov %rcx, %rax", { 0x48, 0x89, 0xc8, 0xc3, PAD }, 0, 1 },
	{ "mov (%rax,%rcx,8), %rax", { 0x48, 0x8b, 0x04, 0xc8, 0xc3, PAD }, 0, 1 },
	{ "mov %ch, %al", { 0x88, 0xe8, 0xc3, PAD }, 0, 1 },
	{ "shl %cl, %eax", { 0xd3, 0xe0, 0xc3, PAD }, 0, 1 },
	{ "sar %cl, %rdx", { 0x48, 0xd3, 0xfa, 0xc3, PAD }, 0, 1 },
	{ "shr %cl, %al", { 0xd2, 0xe8, 0xc3, PAD }, 0, 1 },
	{ "d3 /6 (undefined shift)", { 0xd3, 0xf0, 0xc3, PAD }, 0, 0 },
	{ "rep movsb", { 0xf3, 0xa4, 0xc3, PAD }, 0, 0 },
	{ "cpuid", { 0x0f, 0xa2, 0xc3, PAD }, 0, 0 },
	{ "rdtscp", { 0x0f, 0x01, 0xf9, 0xc3, PAD }, 0, 0 },
	{ "xchg %ecx, %eax", { 0x91, 0xc3, PAD }, 0, 1 },
	{ "push %rcx", { 0x51, 0x59, 0xc3, PAD }, 0, 1 },
	{ "mov $1, %ecx", { 0xb9, 0x01, 0x00, 0x00, 0x00, 0xc3, PAD }, 0, 1 },
	{ "xor %ecx, %ecx", { 0x31, 0xc9, 0xc3, PAD }, 0, 1 },
	{ "mov %r9, %rcx (REX.R clear)", { 0x4c, 0x89, 0xc9, 0xc3, PAD }, 0, 1 },
	{ "mov %rcx, %r9", { 0x49, 0x89, 0xc9, 0xc3, PAD }, 0, 1 },
	{ "jump into an instruction",
	  { 0xeb, 0x01, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, PAD }, 0, 0 },
	{ "falls into int3", { 0x31, 0xc0, PAD }, 0, 0 },
};

/* Calls and jumps to ftrt_lean_call (written here: they are relative) and next to it. */
static unsigned char lean_code[4][24];

static void lean_verdicts(void)
{
	static const struct { const char *what; unsigned char op; int to_off, want; } c[] = {
		{ "call ftrt_lean_call; ret", 0xe8, 0, 1 },
		{ "jmp ftrt_lean_call", 0xe9, 0, 1 },
		{ "call ftrt_lean_call+1; ret", 0xe8, 1, 0 },
		{ "jmp ftrt_lean_call-16", 0xe9, -16, 0 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned char *b = lean_code[i];
		int32_t rel = (int32_t)((intptr_t)ftrt_lean_call + c[i].to_off - (intptr_t)(b + 5));
		int got;

		memset(b, 0xcc, sizeof(lean_code[i]));
		b[0] = c[i].op;
		memcpy(b + 1, &rel, 4);
		if (c[i].op == 0xe8)
			b[5] = 0xc3;
		got = ftrt_arch_scalar_leaf(b, 0);
		if (got != c[i].want) {
			failures++;
			fprintf(stderr, "FAIL: decoder says %d for \"%s\", want %d\n", got, c[i].what,
				c[i].want);
		}
	}
}

int main(int argc, char **argv)
{
	int off = argc > 1 && !strcmp(argv[1], "off");
	size_t i;

	lean_verdicts();
	for (i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		for (int frame = 0; frame < 2; frame++) {
			int got = ftrt_arch_scalar_leaf(verdicts[i].code, frame);
			int want = verdicts[i].want || (frame && verdicts[i].also_frame);

			if (got != want) {
				failures++;
				fprintf(stderr, "FAIL: decoder says %d for \"%s\" (frame %d), want %d\n",
					got, verdicts[i].what, frame, want);
			}
		}
	}
	one(cb_count, 0, !off, "count");
	one(cb_where, 0, !off, "where");
	one(cb_sse, 0, 0, "sse");
	one(cb_fregs, 0, 0, "fregs");
	one(cb_calls, 0, 0, "calls");
	one(cb_escape, 0, !off, "escape");
	/* reads its frame: lean only when its ops says it reads no vector register there */
	one(cb_intarg, 0, 0, "intarg");
#ifdef __SANITIZE_ADDRESS__
	/* ASan checks the load from the frame with a call: no leaf */
	one(cb_intarg, FTRT_OPS_FL_LEAN_FRAME, -1, "intarg-lean");
#else
	one(cb_intarg, FTRT_OPS_FL_LEAN_FRAME, !off, "intarg-lean");
#endif
	CHECK_EQ(ftrace_synchronize(), 0);
	if (failures) {
		fprintf(stderr, "%d failure(s)\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
