/* Built the usual way (-pg -mfentry, no slot before the function): own trampolines. */
int plainfn(int x);
__attribute__((noinline)) int plainfn(int x) { __asm__ volatile(""); return x + 7; }
