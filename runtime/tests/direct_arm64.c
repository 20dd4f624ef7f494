/*
 * Direct calls on arm64 (register_ftrace_direct), decoded from memory: a direct trampoline
 * of the program's own is called by the site's bl itself; with a tracer on the same site the
 * site goes to the regs caller, which runs the tracer and then enters the direct trampoline
 * (ftrace_regs_set_direct); ftrace_direct_count counts exactly, alone and behind a tracer;
 * a direct trampoline beyond bl's reach is entered through the regs caller too; back to the
 * nop.  Calls come from several threads; every count is exact.  Prints "ok" or the failed
 * checks.
 *
 * Under qemu-user the runtime writes code with guest stores (see callops_arm64.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ftrace.h>

#include "arm64_insn.h"

#define N	1000
#define THREADS	3
#define NOINLINE __attribute__((noinline))
#define CB ftrace_notrace

NOINLINE int target(int x) { __asm__ volatile(""); return x + 1; }
NOINLINE long args8(long a, long b, long c, long d, long e, long f, long g, long h)
{ __asm__ volatile(""); return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h; }
NOINLINE double fmix(double x, long n, float y) { __asm__ volatile(""); return x * n + y; }
/* two arguments on the stack, a result in memory (x8), an HFA result in d0-d3 */
NOINLINE long args10(long a, long b, long c, long d, long e, long f, long g, long h, long i, long j)
{ __asm__ volatile(""); return a + b + c + d + e + f + g + h + 9 * i + 10 * j; }
struct big { long v[5]; };
NOINLINE struct big mkbig(long x) { struct big b = { { x, x + 1, x + 2, x + 3, x + 4 } }; __asm__ volatile(""); return b; }
struct hfa { double a, b, c, d; };
NOINLINE struct hfa mkhfa(double x) { struct hfa h = { x, x * 2, x * 3, x * 4 }; __asm__ volatile(""); return h; }

static int fails;
#define CHECK(c) do { if (!(c)) { fails++; printf("%d: FAIL: %s\n", __LINE__, #c); } } while (0)

/*
 * The program's own direct trampolines: count a call and return into the function (x9 =
 * its return address, x30 = where it resumes).  near_direct finds its counter
 * pc-relatively; far_tmpl is copied beyond bl's reach, its counter's address in the
 * literal after its code.
 */
unsigned long near_hits, far_hits;
extern const unsigned char near_direct[], far_tmpl[], far_tmpl_lit[], far_tmpl_end[];
__asm__(".text\n"
	".p2align 3\n"
	".globl near_direct\n"
	".type near_direct, %function\n"
	"near_direct:\n"
	"	hint #34\n"			/* bti c */
	"	adrp x10, near_hits\n"
	"	add x10, x10, :lo12:near_hits\n"
	"1:	ldxr x11, [x10]\n"
	"	add x11, x11, #1\n"
	"	stxr w12, x11, [x10]\n"
	"	cbnz w12, 1b\n"
	"	mov x10, x30\n"
	"	mov x30, x9\n"
	"	ret x10\n"
	".size near_direct, .-near_direct\n"
	".p2align 3\n"
	".globl far_tmpl\n"
	"far_tmpl:\n"
	"	hint #34\n"
	"	ldr x10, far_tmpl_lit\n"
	"1:	ldxr x11, [x10]\n"
	"	add x11, x11, #1\n"
	"	stxr w12, x11, [x10]\n"
	"	cbnz w12, 1b\n"
	"	mov x10, x30\n"
	"	mov x30, x9\n"
	"	ret x10\n"
	".p2align 3\n"
	".globl far_tmpl_lit\n"
	"far_tmpl_lit: .quad 0\n"
	".globl far_tmpl_end\n"
	"far_tmpl_end:\n");

static long tcount;
static CB void tracer_cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{ (void)ip; (void)p; (void)op; (void)r; __atomic_add_fetch(&tcount, 1, __ATOMIC_RELAXED); }
static struct ftrace_ops direct, tracer = { .func = tracer_cb };

/* ---- entry/exit callbacks (ftrace_direct_fexit) ---- */

static long entries, exits, xbad;
static unsigned long args8_site, args10_site, last_ret;

static CB void fx_entry(unsigned long ip, unsigned long parent, unsigned long *args, void *data)
{
	(void)parent;
	if (data != &entries)
		__atomic_add_fetch(&xbad, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&entries, 1, __ATOMIC_RELAXED);
	if (ip == args8_site && args[0] == 1000)
		args[0] = 2000;	/* entry may change an argument */
	if (ip == args10_site && (args[0] != 1 || args[7] != 8))
		__atomic_add_fetch(&xbad, 1, __ATOMIC_RELAXED);
}

static CB void fx_exit(unsigned long ip, unsigned long parent, unsigned long *args,
		       unsigned long ret, void *data)
{
	(void)parent;
	if (data != &entries || (ip == args8_site && args[0] == 2000 && ret != 2000 + 203))
		__atomic_add_fetch(&xbad, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&exits, 1, __ATOMIC_RELAXED);
	if (ip == args8_site)
		last_ret = ret;
}

static int (*volatile p_target)(int) = target;
static long (*volatile p_args10)(long, long, long, long, long, long, long, long, long, long) = args10;
static struct big (*volatile p_mkbig)(long) = mkbig;
static struct hfa (*volatile p_mkhfa)(double) = mkhfa;
static long (*volatile p_args8)(long, long, long, long, long, long, long, long) = args8;
static double (*volatile p_fmix)(double, long, float) = fmix;
static long wrong;
static int fexit_too;	/* the calls of the entry/exit part too */

/* n calls of each function, their results checked (arguments in x0-x7, d0, s1 intact). */
static void *calls(void *arg)
{
	long n = (long)arg, w = 0;

	for (long i = 0; i < n; i++) {
		w += p_target((int)i) != (int)i + 1;
		w += p_args8(i, 2, 3, 4, 5, 6, 7, 8) != i + 203;
		w += p_fmix(1.5, i, 0.25f) != 1.5 * (double)i + 0.25;
		if (fexit_too) {
			struct big b = p_mkbig(i);
			struct hfa h = p_mkhfa((double)i);

			w += p_args10(1, 2, 3, 4, 5, 6, 7, 8, i, 1) != 36 + 9 * i + 10;
			w += b.v[0] != i || b.v[4] != i + 4;
			w += h.a != (double)i || h.d != 4.0 * (double)i;
		}
	}
	__atomic_add_fetch(&wrong, w, __ATOMIC_RELAXED);
	return NULL;
}

/* n calls of each function from THREADS threads and main. */
static void round_of(long n)
{
	pthread_t th[THREADS];

	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, calls, (void *)n) == 0);
	calls((void *)n);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
}

/* A copy of far_tmpl beyond bl's ±128 MiB from site, or NULL. */
static unsigned long far_copy(unsigned long site)
{
	size_t len = (size_t)(far_tmpl_end - far_tmpl);
	unsigned char *p = MAP_FAILED;
	unsigned long *lit;

	for (unsigned long gib = 1; gib < 64 && p == MAP_FAILED; gib++) {
		unsigned long hint = ((site & ~0xffffUL) + (gib << 30));

		p = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	}
	if (p == MAP_FAILED)
		return 0;
	memcpy(p, far_tmpl, len);
	lit = (unsigned long *)(p + (far_tmpl_lit - far_tmpl));
	*lit = (unsigned long)&far_hits;
	__builtin___clear_cache((char *)p, (char *)p + len);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return 0;
	return (unsigned long)p;
}

int main(void)
{
	static const char filt[] = "target args8 fmix";
	const long calls_per = (THREADS + 1) * (long)N;
	struct ftrace_func_info fi;
	unsigned long tsite, far, d;

	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0);
	tsite = fi.ip;
	CHECK(word(tsite) == 0xd503201fu);
	CHECK(ftrace_set_filter(&direct, filt, (int)strlen(filt), 1) == 0);
	CHECK(ftrace_set_filter(&tracer, filt, (int)strlen(filt), 1) == 0);

	/* alone: the site calls the program's trampoline itself */
	CHECK(register_ftrace_direct(&direct, (unsigned long)near_direct) == 0);
	CHECK(bl_dest(tsite) == (unsigned long)near_direct);
	CHECK(ftrace_lookup_function((unsigned long)target, &fi) == 0 && fi.state == FTRACE_SITE_DIRECT);
	round_of(N);
	CHECK(near_hits == 3 * calls_per);

	/* behind a tracer: the regs caller runs it, then enters the direct trampoline */
	CHECK(register_ftrace_function(&tracer) == 0);
	d = bl_dest(tsite);
	CHECK(d && d != (unsigned long)near_direct);
	round_of(N);
	CHECK(near_hits == 6 * calls_per);
	CHECK(tcount == 3 * calls_per);
	CHECK(unregister_ftrace_function(&tracer) == 0);
	CHECK(bl_dest(tsite) == (unsigned long)near_direct);

	/* ftrace_direct_count: exact per site, alone and behind the tracer */
	CHECK(modify_ftrace_direct(&direct, (unsigned long)ftrace_direct_count) == 0);
	CHECK(bl_dest(tsite) == (unsigned long)ftrace_direct_count);
	round_of(N);
	CHECK(ftrace_direct_count_read((unsigned long)target) == (unsigned long)calls_per);
	CHECK(ftrace_direct_count_read((unsigned long)args8) == (unsigned long)calls_per);
	CHECK(ftrace_direct_count_read(tsite) == (unsigned long)calls_per);
	CHECK(register_ftrace_function(&tracer) == 0);
	round_of(N);
	CHECK(ftrace_direct_count_read((unsigned long)fmix) == 2 * (unsigned long)calls_per);
	CHECK(tcount == 6 * calls_per);
	CHECK(unregister_ftrace_function(&tracer) == 0);
	CHECK(ftrace_direct_count_read(0) == 0);
	CHECK(near_hits == 6 * calls_per);

	/* entry/exit: a clone of ftrace_direct_fexit, alone and behind the tracer */
	{
		static const char filt2[] = "args10 mkbig mkhfa";
		unsigned long fx = ftrace_direct_fexit_create(fx_entry, fx_exit, &entries);

		CHECK(ftrace_lookup_function((unsigned long)args8, &fi) == 0);
		args8_site = fi.ip;
		CHECK(ftrace_lookup_function((unsigned long)args10, &fi) == 0);
		args10_site = fi.ip;
		CHECK(fx != 0);
		CHECK(ftrace_set_filter(&direct, filt2, (int)strlen(filt2), 0) == 0);
		CHECK(modify_ftrace_direct(&direct, fx) == 0);
		CHECK(bl_dest(tsite) == fx);
		CHECK(p_args8(1000, 2, 3, 4, 5, 6, 7, 8) == 2000 + 203);
		CHECK(last_ret == 2000 + 203 && entries == 1 && exits == 1);
		fexit_too = 1;
		round_of(N);
		CHECK(entries == 1 + 6 * calls_per && exits == entries);
		CHECK(register_ftrace_function(&tracer) == 0);
		CHECK(bl_dest(tsite) != fx);
		round_of(N);
		CHECK(entries == 1 + 12 * calls_per && exits == entries);
		CHECK(tcount == 9 * calls_per);
		CHECK(unregister_ftrace_function(&tracer) == 0);
		CHECK(ftrace_direct_fexit_free(fx) == -EBUSY);	/* still registered */
		CHECK(modify_ftrace_direct(&direct, (unsigned long)near_direct) == 0);
		CHECK(ftrace_direct_fexit_free(fx) == 0);
		CHECK(xbad == 0);
		fexit_too = 0;
		CHECK(ftrace_set_filter(&direct, filt, (int)strlen(filt), 1) == 0);
	}

	/* beyond bl's reach: the regs caller enters it */
	far = far_copy(tsite);
	CHECK(far != 0);
	if (far) {
		long dist = (long)(far - tsite);

		CHECK(dist > (128L << 20) || dist < -(128L << 20));
		CHECK(modify_ftrace_direct(&direct, far) == 0);
		d = bl_dest(tsite);
		CHECK(d && d != far);
		round_of(N);
		CHECK(far_hits == 3 * calls_per);
		CHECK(unregister_ftrace_direct(&direct, far, 1) == 0);
	} else {
		CHECK(unregister_ftrace_direct(&direct, (unsigned long)ftrace_direct_count, 1) == 0);
	}

	/* off: nops, nothing counted */
	CHECK(word(tsite) == 0xd503201fu);
	round_of(N);
	CHECK(far_hits == 3 * calls_per && near_hits == 6 * calls_per && tcount == 9 * calls_per);
	CHECK(wrong == 0);
	if (!fails)
		printf("ok\n");
	return fails != 0;
}
