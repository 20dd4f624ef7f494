int hook(int x);
int util_sum(const int *v, int n);
long util_fib(int n);
int util_apply(int (*fn)(int), int x);
