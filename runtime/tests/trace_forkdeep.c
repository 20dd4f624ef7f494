/* A chain of fork children, argv[1] generations deep (a shell function recursing through
   $(...)): each calls work() and waits for its child. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile long sink;

__attribute__((noinline)) void work(long n) { sink += n; }

__attribute__((noinline)) int generation(long n)
{
	pid_t p;
	int st;

	work(n);
	if (n == 0)
		return 0;
	p = fork();
	if (p < 0)
		return 1;
	if (p == 0)
		exit(generation(n - 1));
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 60;
	int r = generation(n);

	printf("%s\n", r ? "failed" : "done");
	return r;
}
