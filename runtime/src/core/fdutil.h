/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Descriptors the runtime keeps open for the life of the process (the trace file,
 * /proc/self/mem, the control socket) live high, out of the numbers programs take by
 * convention: shells redirect onto 3..9 ("exec 3>file"), programs dup2 onto small numbers
 * and expect the lowest free one from open().  And a descriptor is closed by the runtime
 * only while it still names the file the runtime opened (after fork the program may have
 * reused the number).  All async-signal-safe.
 */
#ifndef FTKIT_FDUTIL_H
#define FTKIT_FDUTIL_H

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct ft_fdid {
	dev_t dev;
	ino_t ino;
};

/*
 * fd moved high: to the first free number at or above 768, or under a lower limit to the
 * highest free one (at least 3/4 of the limit), so that the numbers the program gets from
 * open() stay those it gets untraced until it nears the limit (under ulimit -n 5 the
 * trace file took 3, and the program's first open() returned 4).
 */
static inline int ft_fd_high(int fd)
{
	struct rlimit rl;
	long base = 768, top = 0;
	int nfd = -1;

	if (fd < 0)
		return fd;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 4 * 3) < base) {
		base = (long)(rl.rlim_cur / 4 * 3);
		top = (long)rl.rlim_cur - 1;
	}
	/* a few tries from the top down (each finds the lowest free number at or above) */
	for (long b = top; b > base && b > fd && nfd < 0 && b > top - 8; b--)
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, (int)b);
	if (nfd < 0 && base > fd)
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, (int)base);
	if (nfd < 0)
		return fd;	/* no free number up there: keep the low one */
	close(fd);
	return nfd;
}

/*
 * Grow the process's descriptor table now to ft_fd_high's numbers, by taking one there and
 * giving it back: growing it later, once the program has threads, waits for an RCU grace
 * period in the kernel (11 ms on this project's VM, in the middle of the first patch
 * batch).  Call while single-threaded (a constructor); the table never shrinks.
 */
static inline void ft_fd_table_reserve(void)
{
	int fd = open("/", O_PATH | O_CLOEXEC);

	if (fd >= 0)
		close(ft_fd_high(fd));
}

static inline void ft_fd_remember(int fd, struct ft_fdid *id)
{
	struct stat st;

	id->dev = 0;
	id->ino = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
	}
}

/* Does fd still name the file remembered in id (the program may have reused the number)? */
static inline int ft_fd_same(int fd, const struct ft_fdid *id)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

/* Close fd if it still names the file remembered in id. */
static inline void ft_fd_close_same(int fd, const struct ft_fdid *id)
{
	if (ft_fd_same(fd, id))
		close(fd);
}

#endif
