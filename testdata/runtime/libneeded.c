/* A shared library the dlopen test links against (DT_NEEDED). */
__attribute__((noinline)) int needed_func(int x) { __asm__ volatile(""); return x + 40; }
