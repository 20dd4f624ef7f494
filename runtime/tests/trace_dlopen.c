/* An object loaded after start-up must appear in the trace's last memory map. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) void *load(const char *name) { return dlopen(name, RTLD_NOW); }

int main(void)
{
	void *h = load("libz.so.1");

	if (!h)
		h = load("libm.so.6");
	printf("loaded=%d\n", h != NULL);
	return 0;
}
