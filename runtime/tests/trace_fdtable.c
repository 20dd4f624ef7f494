/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the writer thread's descriptor table of its own must not change for the program
 * (argv[1]: a file to lock, argv[2]: the trace's output): a POSIX lock the program holds
 * when the trace starts is still held once the writer has closed its copies of the
 * program's descriptors, and a pipe the program closes reads as ended at once (the writer
 * keeps no copy of it).  Prints the writer's descriptor count, whether the lock is held
 * (asked from a child process) and what the pipe read returned; exits 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ftrace_trace.h>

__attribute__((noinline)) long fib(int n)
{
	__asm__ volatile("");
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The writer thread's descriptor count once it has set up its table, or -1. */
static int writer_fds(void)
{
	for (int tries = 0; tries < 500; tries++) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		int found = -1;

		while (d && (e = readdir(d))) {
			char path[300], comm[32] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
			if (e->d_name[0] == '.' || !(f = fopen(path, "r")))
				continue;
			if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "ftkit-writer\n")) {
				snprintf(path, sizeof(path), "/proc/self/task/%s/fd", e->d_name);
				found = count_dir(path);
			}
			fclose(f);
		}
		if (d)
			closedir(d);
		if (found == 1)
			return found;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct ftrace_trace_config cfg = { .tracer = FTRACE_TRACER_FUNCTION };
	int fd, p[2], status, nfd;
	char c;
	ssize_t got;
	pid_t child;

	if (argc < 3)
		return 2;
	fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || fcntl(fd, F_SETLK, &fl) || pipe(p))
		return 2;
	cfg.output = argv[2];
	if (ftrace_trace_start(&cfg))
		return 2;
	nfd = writer_fds();
	close(p[1]);
	alarm(10);	/* a pipe kept open by the writer: killed, not hung */
	got = read(p[0], &c, 1);
	child = fork();
	if (child == 0) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int cfd = open(argv[1], O_RDWR);

		_exit(cfd < 0 || fcntl(cfd, F_GETLK, &q) ? 2 : q.l_type == F_WRLCK && q.l_pid == getppid());
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 2;
	printf("writer fds %d, lock %s, pipe read %zd, fib %ld\n", nfd,
	       WEXITSTATUS(status) == 1 ? "held" : "lost", got, fib(20));
	return 0;	/* the trace is finished at exit */
}
