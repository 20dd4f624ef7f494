/*
 * Names of a library loaded later (dlopen) in the tracers' lists: the program calls
 * lib_local 4 times, loads argv[1] (built from the LIB part below) and calls its ext_fn 3
 * times and lib_ext 2 times.
 */
#include <dlfcn.h>
#include <stdio.h>

#ifdef LIB
__attribute__((noinline)) int ext_fn(int x) { __asm__ volatile(""); return x + 1; }
__attribute__((noinline)) int lib_ext(int x) { __asm__ volatile(""); return x * 2; }
#else
__attribute__((noinline)) int lib_local(int x) { __asm__ volatile(""); return x - 1; }

int main(int argc, char **argv)
{
	int (*ext)(int), (*le)(int), s = 0;
	void *h;

	for (int i = 0; i < 4; i++)
		s += lib_local(i);
	if (argc < 2 || !(h = dlopen(argv[1], RTLD_NOW))) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	ext = (int (*)(int))dlsym(h, "ext_fn");
	le = (int (*)(int))dlsym(h, "lib_ext");
	for (int i = 0; i < 3; i++)
		s += ext(i);
	for (int i = 0; i < 2; i++)
		s += le(i);
	printf("s=%d\n", s);
	return 0;
}
#endif
