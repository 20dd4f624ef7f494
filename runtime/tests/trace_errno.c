/*
 * The runtime stays out of the program's way: open() still returns 3 first (the runtime's
 * own descriptors live high), and a trace write that fails (here: a file size limit set
 * after the buffer exists) neither changes the errno a traced function leaves nor is
 * retried at every call.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((noinline)) long conv(const char *s)
{
	return strtol(s, NULL, 10);
}

int main(void)
{
	struct rlimit rl = { 4096, 4096 };
	long sum = 0;
	int fd = open("/dev/null", O_RDONLY), changed = 0;

	printf("first fd %d\n", fd);
	close(fd);
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		perror("setrlimit");
	for (int i = 0; i < 100000; i++) {
		errno = 0;
		sum += conv("3");
		if (errno)
			changed++;
	}
	printf("sum %ld errno changed %d\n", sum, changed);
	return 0;
}
