/* A shared library the dlopen test loads and unloads at run time. */
__attribute__((noinline)) int dyn_func(int x) { __asm__ volatile(""); return x + 50; }
__attribute__((noinline)) int dyn_other(int x) { __asm__ volatile(""); return x + 60; }
/* recursive: gcc -fPIC adds a local alias "dyn_rec.localalias" at the same address */
__attribute__((noinline)) int dyn_rec(int n) { return n < 2 ? n : dyn_rec(n - 1) + dyn_rec(n - 2); }
