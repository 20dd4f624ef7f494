/*
 * Load-time refusal in a program NOT processed by ftlink (gcc -mrecord-mcount tables, which
 * the runtime checks and nops itself at start-up): table entries that point at bytes that
 * are neither a call to __fentry__ nor a nop (a prologue; a call to another function),
 * outside executable code, in an unknown format,
 * or whose recorded length disagrees with the instruction are refused and reported, and those
 * bytes are never written, not at load and not when every function is traced later.
 * Prints "site NAME ADDRESS" for each bad entry so the Go test can check the reports.
 */
#include <errno.h>
#include "check.h"

NOINLINE int helper(int x) { __asm__ volatile(""); return x + 1; }

/* Hand-written functions and extra entries in the same __mcount_loc section as gcc's. */
__asm__(
	".text\n"
	".p2align 4\n"
	".globl lr_bad_bytes\n"
	"lr_bad_bytes:\n"		/* a classic prologue where a site should be */
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	pop %rbp\n"
	"	mov $7, %eax\n"
	"	ret\n"
	".p2align 4\n"
	".globl lr_wrong_len\n"
	"lr_wrong_len:\n"		/* a 5-byte call recorded as 6 bytes long */
	"	call __fentry__\n"
	"	mov $9, %eax\n"
	"	ret\n"
	".p2align 4\n"
	".globl lr_other\n"
	"lr_other:\n"			/* a call, but to another function: nopping it breaks the program */
	"	mov $5, %edi\n"
	"	jmp 2f\n"
	".globl lr_other_site\n"
	"lr_other_site:\n"
	"2:	call helper\n"
	"	ret\n"
	".p2align 4\n"
	".globl lr_good\n"
	"lr_good:\n"			/* a good site among the bad ones */
	"	call __fentry__\n"
	"	mov $11, %eax\n"
	"	ret\n"
	".data\n"
	".globl lr_data\n"
	"lr_data: .quad 0x1234\n"
	".pushsection __mcount_loc, \"a\", @progbits\n"
	"	.quad lr_bad_bytes\n"
	"	.quad lr_data\n"
	"	.quad 0xdead000000000000\n"	/* neither an address nor recordmcount's format */
	"1:	.long lr_wrong_len - 1b\n"	/* recordmcount's format: rel32, length 6, kind e8 */
	"	.byte 6, 1\n"
	"	.short 0xF7CA\n"
	"	.quad lr_other_site\n"
	"	.quad lr_good\n"
	".popsection\n"
	".text\n");

int lr_bad_bytes(void);
int lr_wrong_len(void);
int lr_good(void);
int lr_other(void);
extern const unsigned char lr_other_site[];
extern long lr_data;

static volatile long hits;
static CB void cb(unsigned long ip, unsigned long p, struct ftrace_ops *op, struct ftrace_regs *r)
{
	(void)ip; (void)p; (void)op; (void)r;
	hits++;
}

int main(void)
{
	static const unsigned char prologue[5] = { 0x55, 0x48, 0x89, 0xe5, 0x5d };
	static struct ftrace_ops one = { .func = cb }, all = { .func = cb };
	int (*volatile bad)(void) = lr_bad_bytes, (*volatile wl)(void) = lr_wrong_len;
	int (*volatile good)(void) = lr_good, (*volatile other)(void) = lr_other;
	unsigned char wl_bytes[5];
	struct ftrace_func_info fi;
	struct ftrace_stats st;

	printf("site lr_bad_bytes %#lx\n", (unsigned long)lr_bad_bytes);
	printf("site lr_data %#lx\n", (unsigned long)&lr_data);
	printf("site lr_wrong_len %#lx\n", (unsigned long)lr_wrong_len);
	printf("site lr_other_site %#lx\n", (unsigned long)lr_other_site);

	/* Refused: no record, bytes as the compiler left them. */
	CHECK(!memcmp((void *)lr_bad_bytes, prologue, 5));
	CHECK_EQ(ftrace_lookup_function((unsigned long)lr_bad_bytes, &fi), -ENODEV);
	CHECK_EQ(((unsigned char *)lr_wrong_len)[0], 0xe8);
	memcpy(wl_bytes, (void *)lr_wrong_len, 5);
	CHECK_EQ(ftrace_lookup_function((unsigned long)lr_wrong_len, &fi), -ENODEV);
	CHECK_EQ(lr_data, 0x1234);
	CHECK_EQ(other(), 6);
	CHECK_EQ(ftrace_lookup_function((unsigned long)lr_other_site, &fi), -ENODEV);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_refused, 5);
	/* The good hand-written site and gcc's were nopped and work. */
	CHECK(is_nop(lr_good));
	CHECK(is_nop(helper));
	CHECK_EQ(ftrace_set_filter_ip(&one, (unsigned long)lr_good, 0, 1), 0);
	CHECK_EQ(register_ftrace_function(&one), 0);
	CHECK(calls_tramp_of(lr_good, &one));
	CHECK_EQ(good(), 11);
	CHECK_EQ(hits, 1);
	CHECK_EQ(unregister_ftrace_function(&one), 0);
	/* Tracing everything leaves the refused bytes alone. */
	CHECK_EQ(register_ftrace_function(&all), 0);
	hits = 0;
	CHECK_EQ(bad(), 7);
	CHECK_EQ(wl(), 9);
	CHECK_EQ(hits, 0);
	CHECK_EQ(other(), 6);
	CHECK_EQ(hits, 1);	/* helper's own site */
	hits = 0;
	CHECK_EQ(helper(1), 2);
	CHECK_EQ(hits, 1);
	CHECK_EQ(lr_other_site[0], 0xe8);
	CHECK(!memcmp((void *)lr_bad_bytes, prologue, 5));
	CHECK(!memcmp((void *)lr_wrong_len, wl_bytes, 5));
	CHECK_EQ(unregister_ftrace_function(&all), 0);
	CHECK(!memcmp((void *)lr_bad_bytes, prologue, 5));
	CHECK_EQ(lr_data, 0x1234);
	ftrace_get_stats(&st);
	CHECK_EQ(st.nr_refused, 5);
	DONE();
}
