// SPDX-License-Identifier: Apache-2.0
/* Small async-signal-safe helpers for the tracers. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/ftrt_core.h"
#include "trace_util.h"

void ft_msg(const char *a, const char *b)
{
	ssize_t r;

	r = write(2, "ftkit: ", 7);
	r = write(2, a, strlen(a));
	if (b) {
		r = write(2, b, strlen(b));
	}
	r = write(2, "\n", 1);
	(void)r;
}

/*
 * The reason for an errno value, for messages written where strerror is not safe (it may
 * allocate, and reads locale data): the errors the runtime's own files and sockets meet.
 * NULL for others.
 */
const char *ft_strerror(int err)
{
	static const struct {
		int err;
		const char *text;
	} tab[] = {
		{ EPERM, "Operation not permitted" }, { ENOENT, "No such file or directory" },
		{ EINTR, "Interrupted system call" }, { EIO, "Input/output error" },
		{ ENXIO, "No such device or address" }, { EBADF, "Bad file descriptor" },
		{ EAGAIN, "Resource temporarily unavailable" }, { ENOMEM, "Cannot allocate memory" },
		{ EACCES, "Permission denied" }, { EFAULT, "Bad address" },
		{ EEXIST, "File exists" }, { ENODEV, "No such device" },
		{ ENOTDIR, "Not a directory" }, { EISDIR, "Is a directory" },
		{ EINVAL, "Invalid argument" }, { ENFILE, "Too many open files in system" },
		{ EMFILE, "Too many open files" }, { ETXTBSY, "Text file busy" },
		{ EFBIG, "File too large" }, { ENOSPC, "No space left on device" },
		{ ESPIPE, "Illegal seek" }, { EROFS, "Read-only file system" },
		{ EPIPE, "Broken pipe" }, { ENAMETOOLONG, "File name too long" },
		{ ELOOP, "Too many levels of symbolic links" }, { EOVERFLOW, "Value too large for defined data type" },
		{ EDQUOT, "Disk quota exceeded" }, { ESTALE, "Stale file handle" },
		{ ECONNREFUSED, "Connection refused" }, { EADDRINUSE, "Address already in use" },
	};

	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].err == err)
			return tab[i].text;
	return NULL;
}

/* ft_msg(a, b) followed by ": " and the reason for err (an errno value, either sign). */
void ft_msg_err(const char *a, const char *b, int err)
{
	char buf[512], num[24];
	const char *why = ft_strerror(err);
	size_t n;

	n = ft_strlcpy(buf, a, sizeof(buf));
	if (b && n < sizeof(buf))
		n += ft_strlcpy(buf + n, b, sizeof(buf) - n);
	if (n < sizeof(buf))
		n += ft_strlcpy(buf + n, ": ", sizeof(buf) - n);
	if (!why) {
		ft_utoa(num, (unsigned long)(err < 0 ? -err : err));
		if (n < sizeof(buf))
			n += ft_strlcpy(buf + n, "error ", sizeof(buf) - n);
		why = num;
	}
	if (n < sizeof(buf))
		ft_strlcpy(buf + n, why, sizeof(buf) - n);
	ft_msg(buf, NULL);
}

size_t ft_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size) {
		size_t c = n < size - 1 ? n : size - 1;

		memcpy(dst, src, c);
		dst[c] = 0;
	}
	return n;
}

/* Writes v in decimal at p (NUL-terminated); returns the end. */
char *ft_utoa(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	*p = 0;
	return p;
}

/*
 * This process's id for ft_mem_read: getpid() is a system call of its own (glibc keeps no
 * cache), which doubled the cost of each string an argument-recording tracer copies.  Set
 * where the caller is known to be the process itself: the tracer's start and a fork
 * child's handler (ft_mem_read_self), never by a read, which may run in a vfork child
 * (its pid would then name the program it execs).  A vfork child reads through its
 * parent's id, the same memory; a process made by a raw clone without CLONE_VM reads its
 * parent's until that one is gone.
 */
static pid_t mem_pid;
static int vm_nosys;	/* process_vm_readv is ENOSYS here (qemu-user): reads fail at once */

void ft_mem_read_self(void)
{
	__atomic_store_n(&mem_pid, getpid(), __ATOMIC_RELAXED);
}

long ft_mem_read(void *dst, unsigned long addr, size_t n)
{
	static unsigned long page;
	pid_t pid = __atomic_load_n(&mem_pid, __ATOMIC_RELAXED);
	struct iovec local = { dst, n };
	struct iovec remote[2] = { { (void *)addr, n }, { NULL, 0 } };
	unsigned long first;
	int nr = 1, saved_errno = errno;
	ssize_t got;

	/* not there (qemu-user has no process_vm_readv): for good, not asked again per value
	   (the aarch64 trial made millions of failing calls under -a) */
	if (__atomic_load_n(&vm_nosys, __ATOMIC_RELAXED))
		return -2;
	if (!page)
		page = (unsigned long)sysconf(_SC_PAGESIZE);
	first = page - (addr & (page - 1));
	if (first < n) {
		remote[0].iov_len = first;
		remote[1].iov_base = (void *)(addr + first);
		remote[1].iov_len = n - first;
		nr = 2;
	}
	got = process_vm_readv(pid ? pid : getpid(), &local, 1, remote, (unsigned long)nr, 0);
	/* a vfork child may not read its parent (Yama), nor anyone a gone one: ourselves */
	if (got < 0 && pid && (errno == ESRCH || errno == EPERM))
		got = process_vm_readv(getpid(), &local, 1, remote, (unsigned long)nr, 0);
	if (got < 0 && errno == ENOSYS)
		__atomic_store_n(&vm_nosys, 1, __ATOMIC_RELAXED);
	if (got < 0)
		got = errno == EFAULT || errno == ESRCH ? -1 : -2;
	errno = saved_errno;
	return got;
}

void ft_helper_sigmask(sigset_t *set)
{
	int sig = ftrt_sync_signal();

	sigfillset(set);
	if (sig > 0)
		sigdelset(set, sig);
	sigdelset(set, SIGTRAP);
}

void ft_thread_answer_rounds(void)
{
	int sig = ftrt_sync_signal();
	sigset_t set;

	if (sig > 0) {
		sigemptyset(&set);
		sigaddset(&set, sig);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
}

int ft_join_briefly(pthread_t th)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0) {
		ts.tv_sec += 1;
		if (pthread_timedjoin_np(th, NULL, &ts) == 0)
			return 1;
	}
	pthread_detach(th);
	return 0;
}

void ft_fix_comm(char name[16])
{
	const char *self = program_invocation_short_name;

	if (strncmp(name, "qemu-", 5) || !self || !strncmp(self, "qemu-", 5))
		return;
	memset(name, 0, 16);
	ft_strlcpy(name, self, 16);
}
