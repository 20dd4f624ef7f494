#include "prog.h"

/* Overridden by util.c: its body stays in the program (without --gc-sections) but no
 * symbol covers it any more. */
int __attribute__((weak)) hook(int x)
{
	return x + 1000;
}

int __attribute__((noinline)) weak_unused(int x)
{
	return x ^ 0x55;
}
