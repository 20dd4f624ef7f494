/*
 * An object loaded after start-up must appear in the trace's last memory map.  With an
 * argument, that object is loaded instead (e.g. "./libx.so": a relative name) and the
 * program then leaves its working directory, so the map's path cannot come from it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) void *load(const char *name) { return dlopen(name, RTLD_NOW); }

int main(int argc, char **argv)
{
	void *h;

	if (argc > 1) {
		h = load(argv[1]);
		if (!h || chdir("/") != 0)
			fprintf(stderr, "%s\n", dlerror());
	} else {
		h = load("libz.so.1");
		if (!h)
			h = load("libm.so.6");
	}
	printf("loaded=%d\n", h != NULL);
	return 0;
}
