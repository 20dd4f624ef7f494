/* A shared library the dlopen test loads and unloads at run time. */
__attribute__((noinline)) int dyn_func(int x) { __asm__ volatile(""); return x + 50; }
__attribute__((noinline)) int dyn_other(int x) { __asm__ volatile(""); return x + 60; }
