// SPDX-License-Identifier: Apache-2.0
/* The C half of the test __fentry__ (harness.S): records every traced call's argument
 * registers, entry stack words and the strings the integer registers point to (read
 * with process_vm_readv, which fails with EFAULT on a bad address instead of
 * faulting), and every return's registers; writes the records to $FNARGS_DUMP at exit.
 * Built without -pg: it is not traced itself. Single-threaded programs only. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define NSTR 7		/* rdi rsi rdx rcx r8 r9, or rax at exit */
#define STRMAX 64

struct rec {
	uint64_t kind;		/* 1 entry, 2 exit */
	uint64_t fn;		/* the function's run-time entry address */
	uint64_t anchor;	/* run-time address of harness_anchor: gives the load bias */
	uint64_t regs[6];	/* entry: rdi..r9; exit: rax rdx */
	uint64_t xmm[8];	/* entry: xmm0-7 low halves; exit: xmm0 xmm1 */
	uint64_t stack[8];	/* entry: words at entry %rsp + 0, 8, ... 56 */
	int64_t slen[NSTR];	/* string length read, -1 bad, STRMAX: no NUL within */
	char str[NSTR][STRMAX];
};

void harness_anchor(void) {}
extern void harness_return(void);

static struct rec recs[4096];
static unsigned nrec;
static struct { uint64_t fn, ret; } shadow[256];
static unsigned depth;

static void read_str(struct rec *r, int i, uint64_t addr)
{
	struct iovec local = { r->str[i], STRMAX }, remote = { (void *)addr, STRMAX };
	ssize_t n;
	/* read a page-bounded prefix first: a string near the end of a mapping */
	uint64_t room = 4096 - (addr & 4095);
	if (room < STRMAX)
		remote.iov_len = local.iov_len = room;
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n <= 0) {
		r->slen[i] = -1;
		return;
	}
	if (room < STRMAX && !memchr(r->str[i], 0, (size_t)n)) {
		struct iovec l2 = { r->str[i] + n, STRMAX - n }, r2 = { (void *)(addr + n), STRMAX - n };
		ssize_t m = process_vm_readv(getpid(), &l2, 1, &r2, 1, 0);
		if (m > 0)
			n += m;
	}
	char *z = memchr(r->str[i], 0, (size_t)n);
	r->slen[i] = z ? z - r->str[i] : STRMAX;
}

void harness_entry(uint64_t *saved, uint64_t *entry_rsp, uint64_t ra)
{
	if (nrec >= sizeof(recs) / sizeof(recs[0]) || depth >= 256)
		return;
	struct rec *r = &recs[nrec++];
	r->kind = 1;
	/* the call is `e8 rel32` or, in gcc's PIE output, `67 e8 rel32`; it may follow
	 * an endbr64 */
	const uint8_t *c = (const uint8_t *)ra;
	r->fn = ra - (c[-6] == 0x67 ? 6 : 5);
	c = (const uint8_t *)r->fn;
	if (c[-4] == 0xf3 && c[-3] == 0x0f && c[-2] == 0x1e && c[-1] == 0xfa)
		r->fn -= 4;
	r->anchor = (uint64_t)harness_anchor;
	memcpy(r->regs, saved, 6 * 8);
	r->xmm[0] = saved[8];	/* offset 64: xmm0 low */
	r->xmm[1] = saved[10];	/* offset 80: xmm1 low */
	memcpy(&r->xmm[2], &saved[12], 6 * 8);
	memcpy(r->stack, entry_rsp, sizeof(r->stack));
	for (int i = 0; i < 6; i++)
		read_str(r, i, saved[i]);
	shadow[depth].fn = r->fn;
	shadow[depth].ret = entry_rsp[0];
	depth++;
	entry_rsp[0] = (uint64_t)harness_return;
}

uint64_t harness_exit(uint64_t rax, uint64_t rdx, uint64_t x0, uint64_t x1)
{
	depth--;
	if (nrec < sizeof(recs) / sizeof(recs[0])) {
		struct rec *r = &recs[nrec++];
		r->kind = 2;
		r->fn = shadow[depth].fn;
		r->anchor = (uint64_t)harness_anchor;
		r->regs[0] = rax;
		r->regs[1] = rdx;
		r->xmm[0] = x0;
		r->xmm[1] = x1;
		read_str(r, 6, rax);
	}
	return shadow[depth].ret;
}

__attribute__((destructor)) static void harness_dump(void)
{
	const char *path = getenv("FNARGS_DUMP");
	if (!path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		_exit(99);
	if (write(fd, recs, nrec * sizeof(recs[0])) != (ssize_t)(nrec * sizeof(recs[0])))
		_exit(98);
	close(fd);
}
