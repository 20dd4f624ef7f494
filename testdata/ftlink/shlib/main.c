#include <stdio.h>
#include "lib.h"

static int __attribute__((noinline)) local(int x)
{
	return lib_calc(x) + 3;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 100; i++)
		s += local(i);
	printf("total %d\n", s);
	return 0;
}
