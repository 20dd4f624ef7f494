/* A shared library the dlopen test links against (DT_NEEDED). */
__attribute__((noinline)) int needed_func(int x) { __asm__ volatile(""); return x + 40; }

#include <dlfcn.h>

/* dlopen called from a library (not from the executable). */
void *needed_dlopen(const char *path) { return dlopen(path, RTLD_NOW); }
