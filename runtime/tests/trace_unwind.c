/* Stack unwinders under function_graph: _Unwind_Backtrace (libgcc's DWARF unwinder, what
   C++ exceptions, pthread_cancel and many crash reporters use) and backtrace() from
   three traced frames deep. Prints each frame as an offset from main when it is in
   the executable (the same in every run of the binary, traced or not), "lib" otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <unwind.h>

volatile long sink;

struct frames {
	int n;
	uintptr_t ip[64];
};

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg)
{
	struct frames *f = arg;

	if (f->n < 64)
		f->ip[f->n++] = _Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

int main(void);

static void print(const char *what, const uintptr_t *ip, int n)
{
	Dl_info self, d;

	dladdr((void *)main, &self);
	printf("%s:", what);
	for (int i = 0; i < n; i++) {
		if (dladdr((void *)ip[i], &d) && d.dli_fbase == self.dli_fbase)
			printf(" %+ld", (long)(ip[i] - (uintptr_t)main));
		else
			printf(" lib");
	}
	printf("\n");
}

__attribute__((noinline)) void u3(void)
{
	struct frames f = { 0 };
	void *b[64];
	uintptr_t ip[64];
	int n;

	_Unwind_Backtrace(collect, &f);
	print("_Unwind_Backtrace", f.ip, f.n);
	n = backtrace(b, 64);
	for (int i = 0; i < n; i++)
		ip[i] = (uintptr_t)b[i];
	print("backtrace", ip, n);
	sink++;
}

__attribute__((noinline)) void u2(void) { u3(); sink++; }
__attribute__((noinline)) void u1(void) { u2(); sink++; }

int main(void)
{
	u1();
	return 0;
}
