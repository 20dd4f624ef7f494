// SPDX-License-Identifier: Apache-2.0
/*
 * A daemon's start: the process forks, prints the child's pid and exits; the child (in a
 * session of its own, its standard descriptors on /dev/null) calls leaf() every few milliseconds for up to ten seconds.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void leaf(int x)
{
	sink += x;
}

int main(void)
{
	pid_t p = fork();

	if (p < 0)
		return 2;
	if (p) {
		printf("%d\n", p);
		return 0;
	}
	setsid();
	/* as daemons do: the standard descriptors to /dev/null (the caller waits for EOF) */
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return 2;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	for (int i = 0; i < 2000; i++) {
		leaf(i);
		usleep(5000);
	}
	return 0;
}
