/* SPDX-License-Identifier: Apache-2.0 */
/*
 * After a first patch the program finds no /proc/self/mem descriptor of the patcher's (it
 * is open during a batch only), closes every descriptor above 2 and moves a file of its
 * own onto 768 (the first number the runtime gives its descriptors), then makes the
 * runtime patch again (unregister, register with a filter, change the filter while
 * registered, unregister).  The runtime must neither read nor write code through the
 * program's file, and the patching must still work.  Prints the callback counts and
 * whether FILE (argv[1]) still holds only what the program wrote; exits 0.  With argv[2]
 * "limit", RLIMIT_NOFILE is then lowered so that no descriptor can be opened: the runtime
 * cannot have /proc/self/mem and must patch another way.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ftrace.h>

static int hits;

ftrace_notrace static void count(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	(void)ip, (void)parent_ip, (void)op, (void)fregs;
	hits++;
}

__attribute__((noinline)) int work(int x)
{
	__asm__ volatile("");
	return x + 1;
}

__attribute__((noinline)) int other(int x)
{
	__asm__ volatile("");
	return x + 2;
}

/* The descriptor that names this process's memory (the patcher's), or -1. */
static int mem_number(void)
{
	char want[64], path[64], got[64];

	snprintf(want, sizeof(want), "/proc/%d/mem", (int)getpid());
	for (int n = 3; n < 4096; n++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
		len = readlink(path, got, sizeof(got) - 1);
		if (len < 0)
			continue;
		got[len] = 0;
		if (!strcmp(got, want))
			return n;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const char mine[] = "the program's own data\n";
	struct ftrace_ops a = { .func = count }, b = { .func = count };
	char back[sizeof(mine) + 16] = { 0 };
	int h[4], sum = 0, n, fd, err;
	struct stat st;

	if (argc < 2)
		return 2;
	if ((err = ftrace_set_filter(&a, "work", 4, 1)) || (err = register_ftrace_function(&a))) {
		printf("register a: %d\n", err);
		return 2;
	}
	for (int i = 0; i < 10; i++)
		sum += work(i);
	h[0] = hits;
	n = mem_number();
	if (n >= 0) {
		printf("the patcher keeps /proc/self/mem open at %d between batches\n", n);
		return 2;
	}
	n = 768;
	for (int i = 3; i < 4096; i++)
		close(i);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, mine, sizeof(mine) - 1) != sizeof(mine) - 1)
		return 2;
	if (fd != n && (dup2(fd, n) != n || close(fd)))
		return 2;
	fd = n;
	if (argc > 2 && !strcmp(argv[2], "limit")) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl))
			return 2;
		rl.rlim_cur = 3;	/* 0, 1, 2 are open: no new descriptor */
		if (setrlimit(RLIMIT_NOFILE, &rl) || open("/dev/null", O_RDONLY) >= 0)
			return 2;
	}

	hits = 0;
	if ((err = unregister_ftrace_function(&a)))
		printf("unregister a: %d\n", err);
	for (int i = 0; i < 10; i++)
		sum += work(i);
	h[1] = hits;
	if ((err = ftrace_set_filter(&b, "other", 5, 1)) || (err = register_ftrace_function(&b)))
		printf("register b: %d\n", err);
	for (int i = 0; i < 5; i++)
		sum += other(i) + work(i);
	h[2] = hits;
	if ((err = ftrace_set_filter(&b, "work", 4, 1)))
		printf("filter b: %d\n", err);
	for (int i = 0; i < 3; i++)
		sum += other(i) + work(i);
	h[3] = hits;
	if ((err = unregister_ftrace_function(&b)))
		printf("unregister b: %d\n", err);
	for (int i = 0; i < 3; i++)
		sum += other(i) + work(i);

	printf("sum %d hits %d %d %d %d (%d)", sum, h[0], h[1], h[2], h[3], hits);
	if (fstat(fd, &st) || st.st_size != sizeof(mine) - 1 ||
	    pread(fd, back, sizeof(back), 0) != sizeof(mine) - 1 || strcmp(back, mine))
		printf(", FILE CHANGED\n");
	else
		printf(", file intact\n");
	return 0;
}
