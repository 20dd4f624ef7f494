#include "lib.h"

static int __attribute__((noinline)) scale(int x)
{
	return x * 5 - 1;
}

int lib_calc(int x)
{
	return scale(x) + lib_helper(x);
}

int lib_helper(int x)
{
	return x % 7;
}
