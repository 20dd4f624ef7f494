// SPDX-License-Identifier: Apache-2.0
/*
 * The trace file and the per-thread event buffers (docs/trace-format.md, version 3).
 *
 * Each thread records into a ring of blocks of its own (struct ft_tbuf, mapped
 * anonymous memory set up at its first event: no malloc, this may run in a signal
 * handler).  A full block is handed to the writer thread by a state change, with no
 * lock and no system call; the writer appends blocks as EVENTS chunks with large
 * vectored writes, and flushes the part of each block being filled every
 * FT_FLUSH_MS (a PARTIAL chunk, then MORE chunks with only what is new), so a
 * killed program loses little.  The file is
 * append-only (only its header is rewritten at the end).  When the writer is
 * behind and a thread has no free block, its events are dropped and counted
 * (the next block's `lost`, the THREAD chunks) or, with FTRACE_NO_LOSS=1, the
 * thread waits.  In flight-recorder mode (FTRACE_RING) the blocks are not handed
 * over: the thread overwrites its oldest, and the ring is written at snapshot,
 * dump, exit and on a fatal signal.
 *
 * Finalisation (exit, fatal signal, shutdown) uses only async-signal-safe
 * calls: pwritev, rename, clock_gettime, open/read, pthread_sigmask, sigtimedwait.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>

#include <ftrace.h>

#include "fgraph.h"
#include "trace_buf.h"

#define PAGE 4096UL
/* the longest last component of a trace's name: NAME_MAX less the suffixes added to it */
#define FT_NAME_ROOM (NAME_MAX - 40)
#define ROUND_UP(x, a) (((x) + (a) - 1) & ~((a) - 1))

__thread struct ft_thread ft_cur FT_TLS;

struct ft_session ft_sess = { .fd = -1 };
unsigned ft_exec_gen;			/* exec naming (trace.c) */
char ft_exec_prev[PATH_MAX];

static volatile int sess_lock;
static pthread_key_t exit_key;
static int exit_key_ok;

static int lock_try(int spins)
{
	while (__atomic_exchange_n(&sess_lock, 1, __ATOMIC_ACQUIRE)) {
		if (spins-- == 0)
			return 0;
		ftrt_arch_cpu_relax();
	}
	return 1;
}

static void lock_get(void)
{
	while (!lock_try(1000))
		syscall(SYS_sched_yield);
}

static void lock_put(void)
{
	__atomic_store_n(&sess_lock, 0, __ATOMIC_RELEASE);
}

/*
 * A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the process: the
 * runtime's own writes fail with EFBIG instead (the events are counted as lost), and the
 * signal their failure queued on this thread is taken back. One the program had pending
 * already is left alone.
 */
struct xfsz_guard {
	sigset_t old;
	int pending;
};

static void xfsz_block(struct xfsz_guard *g)
{
	sigset_t set, pend;

	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
	g->pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
}

static void xfsz_unblock(struct xfsz_guard *g, int err)
{
	if (err == -EFBIG && !g->pending) {
		sigset_t set;
		const struct timespec now = { 0, 0 };

		sigemptyset(&set);
		sigaddset(&set, SIGXFSZ);
		while (sigtimedwait(&set, NULL, &now) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/*
 * The descriptor to use for the trace file: ft_sess.fd while it still names the file the
 * runtime created (device and inode). A program that closes every descriptor and opens
 * its own files may get that number back (or dup2 onto it): the runtime then reopens its
 * .part file by name — checked to be the same file — at another high number, and never
 * writes through the program's descriptor. -EBADF when the file cannot be had again
 * (renamed, removed): said once, recording stops.
 */
static int sess_fd(int fd)
{
	static int said;
	struct ft_session *s = &ft_sess;
	struct stat st;
	int nfd;

	if (fd != s->fd || fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && st.st_dev == s->fd_id.dev && st.st_ino == s->fd_id.ino)
		return fd;
	nfd = open(s->part, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (nfd >= 0 && fstat(nfd, &st) == 0 && st.st_dev == s->fd_id.dev && st.st_ino == s->fd_id.ino) {
		nfd = ft_fd_high(nfd);
		__atomic_store_n(&s->fd, nfd, __ATOMIC_RELEASE);
		return nfd;
	}
	if (nfd >= 0)
		close(nfd);
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		ft_msg("the trace file's descriptor was closed or replaced by the program and the file "
		       "cannot be opened again; recording stops: ", s->part);
	return -EBADF;
}

static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	struct xfsz_guard g;
	int err = 0, saved = errno;

	fd = sess_fd(fd);
	if (fd < 0)
		return fd;

	xfsz_block(&g);
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0) {
			err = -EIO;
			break;
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	xfsz_unblock(&g, err);
	errno = saved;
	return err;
}

static int read_all(int fd, void *buf, size_t len, off_t off)
{
	fd = sess_fd(fd);	/* never read the program's file into a snapshot */
	if (fd < 0)
		return fd;
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return n < 0 ? -errno : -EIO;
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- memory map of loaded objects ---- */

struct maps_build {
	char *buf;
	size_t len, cap;
	uint32_t count;
	int oom;
};

static void mb_put(struct maps_build *mb, const void *p, size_t n)
{
	if (mb->oom)
		return;
	if (mb->len + n > mb->cap) {
		size_t cap = mb->cap ? mb->cap * 2 : 16384;
		char *nb;

		while (cap < mb->len + n)
			cap *= 2;
		nb = realloc(mb->buf, cap);
		if (!nb) {
			mb->oom = 1;
			return;
		}
		mb->buf = nb;
		mb->cap = cap;
	}
	memcpy(mb->buf + mb->len, p, n);
	mb->len += n;
}

/*
 * The absolute path of the object mapped at addr, from /proc/self/maps: the loader's name
 * for it is relative when it was found through a relative LD_LIBRARY_PATH entry, dlopen
 * ("./x.so") or a relative rpath, and the reader of the trace runs elsewhere.  The kernel's
 * name does not depend on the working directory, which may have changed since the load.
 */
static int mapped_path(unsigned long addr, char *path, size_t len)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int off = 0;
		char *name;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2 || !off)
			continue;
		if (addr < lo || addr >= hi)
			continue;
		name = line + off;
		name[strcspn(name, "\n")] = 0;
		if (name[0] == '/' && strlen(name) < len) {
			memcpy(path, name, strlen(name) + 1);
			found = 1;
		}
		break;
	}
	fclose(f);
	return found;
}

static int maps_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct maps_build *mb = arg;
	struct ftkit_map_entry e = { 0 };
	unsigned char bid[255];
	char path[PATH_MAX];
	unsigned long lo = ~0UL, hi = 0;
	size_t bidlen = 0, plen;
	static const char zero[8];

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			unsigned long a = info->dlpi_addr + ph->p_vaddr;

			if (a < lo)
				lo = a;
			if (a + ph->p_memsz > hi)
				hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !bidlen) {
			const char *n = (const char *)(info->dlpi_addr + ph->p_vaddr);
			const char *end = n + ph->p_memsz;

			while (n + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
				const char *name = n + sizeof(*nh);
				const char *desc = name + ROUND_UP(nh->n_namesz, 4UL);

				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				    !memcmp(name, "GNU", 4) && nh->n_descsz <= sizeof(bid) &&
				    desc + nh->n_descsz <= end) {
					bidlen = nh->n_descsz;
					memcpy(bid, desc, bidlen);
					break;
				}
				n = desc + ROUND_UP(nh->n_descsz, 4UL);
			}
		}
	}
	if (!hi)
		return 0;
	if (mb->count == 0 && (!info->dlpi_name || !info->dlpi_name[0])) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		path[n > 0 ? n : 0] = 0;
		e.flags |= FTKIT_MAP_MAIN;
	} else {
		ft_strlcpy(path, info->dlpi_name ? info->dlpi_name : "", sizeof(path));
	}
	if (info->dlpi_addr && getauxval(AT_SYSINFO_EHDR) == lo)
		e.flags |= FTKIT_MAP_VDSO;
	else if (path[0] && path[0] != '/')
		mapped_path(lo, path, sizeof(path));	/* or the loader's name stays */
	plen = strlen(path);
	if (plen > 65535)
		plen = 65535;
	e.entry_size = (uint32_t)ROUND_UP(sizeof(e) + bidlen + plen, 8UL);
	e.path_len = (uint16_t)plen;
	e.build_id_len = (uint8_t)bidlen;
	e.start = lo;
	e.end = hi;
	e.bias = info->dlpi_addr;
	if (ft_sess.maps_startup_done && !ft_known_at_startup(lo))
		e.flags |= FTKIT_MAP_DLOPEN;
	mb_put(mb, &e, sizeof(e));
	mb_put(mb, bid, bidlen);
	mb_put(mb, path, plen);
	mb_put(mb, zero, e.entry_size - sizeof(e) - bidlen - plen);
	mb->count++;
	return 0;
}

/*
 * Entries of objects dlclose'd during the session, appended to every later MAPS image so
 * that readers can still name their code (they were recorded while loaded: see
 * ftrt_objects_changed).
 */
static struct maps_build gone;

/* Serialises the map image's builders: ft_maps_build and ftrt_objects_changed (threads). */
static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;

/* Is the entry at e (one of a MAPS image's) also in the image buf (same range and path)? */
static int map_has(const char *buf, size_t len, const struct ftkit_map_entry *e)
{
	const char *p = buf + sizeof(struct ftkit_maps_chunk);

	while (p + sizeof(*e) <= buf + len) {
		const struct ftkit_map_entry *x = (const void *)p;

		if (x->entry_size < sizeof(*x))
			break;
		if (x->start == e->start && x->end == e->end && x->path_len == e->path_len &&
		    !memcmp((const char *)(x + 1) + x->build_id_len, (const char *)(e + 1) + e->build_id_len,
			    e->path_len))
			return 1;
		p += x->entry_size;
	}
	return 0;
}

/*
 * Replaced MAPS images (never freed: a fatal-signal handler may be reading one), kept
 * here so that they stay reachable: nothing reads the array, and without volatile the
 * compiler drops it, and valgrind's leak check then calls the images definitely lost
 * (which fails test suites that run under it, as jq's does).
 */
static char *volatile retired[64];
static unsigned nretired;

/* Start addresses of the objects present at start-up (for FTKIT_MAP_DLOPEN). */
static unsigned long startup_objs[256];
static int nstartup_objs;

int ft_known_at_startup(unsigned long start)
{
	for (int i = 0; i < nstartup_objs; i++)
		if (startup_objs[i] == start)
			return 1;
	return 0;
}

/* The MAPS chunk image (count and size not yet set): objects loaded now, then gone ones. */
static void maps_image(struct maps_build *mb)
{
	struct ftkit_maps_chunk h = { { FTKIT_CHUNK_MAPS, sizeof(h), 0 }, 0, 0, 0 };
	size_t live;

	mb_put(mb, &h, sizeof(h));
	dl_iterate_phdr(maps_cb, mb);
	live = mb->len;
	/* a library loaded again at the same place is listed once */
	for (size_t off = 0; off < gone.len && !mb->oom;) {
		const struct ftkit_map_entry *e = (const void *)(gone.buf + off);

		if (!map_has(mb->buf, live, e)) {
			mb_put(mb, e, e->entry_size);
			mb->count++;
		}
		off += e->entry_size;
	}
}

/* Make mb the current image; the previous one may be in use by a signal handler: keep it. */
static void maps_publish(struct maps_build *mb)
{
	((struct ftkit_maps_chunk *)mb->buf)->count = mb->count;
	((struct ftkit_maps_chunk *)mb->buf)->c.size = mb->len;
	if (ft_sess.maps && nretired < sizeof(retired) / sizeof(retired[0]))
		retired[nretired++] = ft_sess.maps;
	__atomic_store_n(&ft_sess.maps_len, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ft_sess.maps, mb->buf, __ATOMIC_RELEASE);
	__atomic_store_n(&ft_sess.maps_len, mb->len, __ATOMIC_RELEASE);
}

/*
 * Build a MAPS chunk image (not async-signal-safe: dl_iterate_phdr, malloc).
 * pad_to: if non-zero, pad the chunk so that it ends at a multiple of it when
 * it starts at offset `at`. The previous image is kept for the signal path.
 */
int ft_maps_build(uint64_t at, unsigned long pad_to)
{
	struct maps_build mb = { 0 };

	pthread_mutex_lock(&maps_mu);
	maps_image(&mb);
	if (pad_to) {
		static const char zero[PAGE];
		size_t end = ROUND_UP(at + mb.len, pad_to);

		mb_put(&mb, zero, end - at - mb.len);
	}
	if (mb.oom) {
		pthread_mutex_unlock(&maps_mu);
		free(mb.buf);
		return -ENOMEM;
	}
	if (!ft_sess.maps_startup_done) {
		const char *p = mb.buf + sizeof(struct ftkit_maps_chunk);

		for (uint32_t i = 0; i < mb.count && nstartup_objs < 256; i++) {
			const struct ftkit_map_entry *e = (const void *)p;

			startup_objs[nstartup_objs++] = e->start;
			p += e->entry_size;
		}
	}
	maps_publish(&mb);
	pthread_mutex_unlock(&maps_mu);
	return 0;
}

/*
 * The core found objects loaded or unloaded (after a dlopen or dlclose; under its lock).
 * The MAPS image is brought up to date now, so a library that is dlopen'ed and dlclose'd
 * before the end is in it while loaded, and the entries of objects gone since the last
 * image are kept in `gone`, which goes into every later image (the final one included).
 * An image is published only when its set of objects changed: replaced images are never
 * freed (see maps_publish), and a program may dlopen and dlclose one library in a loop.
 * The writer thread appends each new image as a MAPS chunk with its time (format v2:
 * readers let a later chunk's entry win for events after it).
 */
void ftrt_objects_changed(void)
{
	struct maps_build mb = { 0 };
	const char *old, *p;
	size_t oldlen;
	int changed = 0;

	if (__atomic_load_n(&ft_sess.state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE || !ft_sess.maps_startup_done)
		return;
	pthread_mutex_lock(&maps_mu);
	old = __atomic_load_n(&ft_sess.maps, __ATOMIC_ACQUIRE);
	oldlen = __atomic_load_n(&ft_sess.maps_len, __ATOMIC_ACQUIRE);
	maps_image(&mb);
	if (!old || mb.oom)
		goto out;
	/* in the current image, not loaded any more: gone */
	for (p = old + sizeof(struct ftkit_maps_chunk); p + sizeof(struct ftkit_map_entry) <= old + oldlen;) {
		const struct ftkit_map_entry *e = (const void *)p;

		if (e->entry_size < sizeof(*e))
			break;
		if (e->start != e->end && !map_has(mb.buf, mb.len, e)) {
			mb_put(&gone, e, e->entry_size);
			gone.count++;
			mb_put(&mb, e, e->entry_size);
			mb.count++;
			changed = 1;
		}
		p += e->entry_size;
	}
	/* loaded now, not in the current image: new */
	for (p = mb.buf + sizeof(struct ftkit_maps_chunk); !changed && p + sizeof(struct ftkit_map_entry) <= mb.buf + mb.len;) {
		const struct ftkit_map_entry *e = (const void *)p;

		changed = !map_has(old, oldlen, e);
		p += e->entry_size;
	}
	if (changed && !mb.oom && !gone.oom) {
		maps_publish(&mb);
		mb.buf = NULL;
	}
out:
	free(mb.buf);
	pthread_mutex_unlock(&maps_mu);
}

/* ---- session ---- */

#define FT_FLUSH_MS	100		/* the writer flushes blocks being filled this often */
#define FT_IDLE_US	1000		/* the writer's sleep when it found nothing to write */
#define FT_MAXOPEN	FGRAPH_SHADOW_DEPTH	/* recorded frames a block header can carry */

/*
 * The buffer mode new thread buffers are made for.  A live `ring` command changes it
 * (under the session lock) and bumps gen: each thread moves to a buffer of the new mode
 * when it next starts a block (rebuffer).
 */
static struct {
	uint32_t block_size;		/* bytes of event data per block */
	uint32_t nblk;			/* blocks per thread */
	int ring;			/* flight recorder */
	int no_loss;			/* wait for a free block instead of dropping */
	uint32_t stream_nblk;		/* nblk when streaming (FTRACE_BUFFER_KB) */
	uint32_t gen;
	uint64_t stride, tbuf_bytes;
} cfg;

static struct ft_tbuf *tbuf_free;	/* tbufs of exited threads (under the session lock) */
static pthread_t writer_th;
static int writer_joinable;	/* writer_th is this process's and not joined yet */
static int write_failed;		/* reported once */
static int writer_private;		/* the writer thread has a descriptor table of its own */
static int write_err_later;		/* its write error, said by a program thread (its table
					   has no stderr): the next block opened, or finish */
static const char write_failed_msg[] = "cannot write the trace file, events are lost";
#define FT_ERR_RESERVE	(-(1 << 20))	/* not an errno: the writes stopped at the disk reserve */
/* a snapshot's temporary file while it is written: finalisation removes it (the process may
   end during a long snapshot) */
static char snap_tmp[PATH_MAX + 64];
static int snap_tmp_live;

/*
 * Create a trace file the runtime alone writes: never through a symlink or into an
 * existing file someone planted at the predictable name (O_NOFOLLOW|O_EXCL), readable by
 * the user only (it holds the command line and the address layout). A stale file of a
 * previous process with the same pid is unlinked (the name, not what a link points at)
 * and the creation tried once more.
 */
static int create_private(const char *path)
{
	const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = open(path, flags, 0600);

	if (fd < 0 && errno == EEXIST && unlink(path) == 0)
		fd = open(path, flags, 0600);
	return fd;
}

/* The first n bytes (at most) of the file at path, never following a link or blocking:
   bytes read, or -errno.  Async-signal-safe. */
static ssize_t read_head(const char *path, void *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -errno;
	got = pread(fd, buf, n, 0);
	if (got < 0)
		got = -errno;
	close(fd);
	return got;
}

/*
 * Does the regular file at path hold something other than a trace (empty: no)?  1, 0, or
 * -errno when it cannot be read: not known to be a trace either.
 */
static int holds_other(const char *path)
{
	char magic[sizeof(FTKIT_TRACE_MAGIC) - 1];
	ssize_t n = read_head(path, magic, sizeof(magic));

	if (n < 0)
		return n == -ENOENT ? 0 : (int)n;
	return n > 0 && (n != (ssize_t)sizeof(magic) || memcmp(magic, FTKIT_TRACE_MAGIC, sizeof(magic)));
}

/*
 * A trace is written beside its name and renamed onto it: that must never replace a
 * device, FIFO or socket (FTRACE_OUTPUT=/dev/null run as root would destroy /dev/null),
 * nor a file that is not a trace (FTRACE_OUTPUT naming the program or its data), nor one
 * that cannot be read to tell (ulimit -n: EMFILE): the trace then stays in its .part.  A
 * symlink is replaced itself, never followed.
 */
static int output_ok(const char *path)
{
	/* the last file found to be a trace: unchanged since, it needs no second read */
	static struct {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime;
	} known;
	struct stat st;
	int other;

	if (lstat(path, &st) != 0)
		return 0;	/* creating the file beside it says what is wrong */
	if (S_ISLNK(st.st_mode))
		return 0;
	if (!S_ISREG(st.st_mode)) {
		ft_msg(path, " exists and is not a regular file (a device, FIFO, socket or "
			     "directory): no trace is written there");
		return -EEXIST;
	}
	other = holds_other(path);
	if (other < 0 && st.st_ino == known.ino && st.st_dev == known.dev &&
	    st.st_size == known.size && st.st_mtim.tv_sec == known.mtime.tv_sec &&
	    st.st_mtim.tv_nsec == known.mtime.tv_nsec)
		other = 0;	/* checked at the start, when a descriptor was free */
	if (!other) {
		known.dev = st.st_dev;
		known.ino = st.st_ino;
		known.size = st.st_size;
		known.mtime = st.st_mtim;
		return 0;
	}
	if (other < 0)
		ft_msg_err(path, " exists and cannot be read to tell whether it is a trace; it is "
				 "not replaced", other);
	else
		ft_msg(path, " exists and is not an ftkit trace: it is not replaced");
	return -EEXIST;
}

/*
 * FTRACE_SESSION (CLOCK_REALTIME ns; ftrace record sets it to its start): the processes
 * whose tracing started since then belong to one run, as if started after this one.  0:
 * none given.
 */
static uint64_t run_since_ns;

/* The pid of the ftkit trace at path, or 0 (none, not a trace, not of this run). */
static uint32_t run_trace_pid(const char *path, uint64_t since)
{
	struct ftkit_file_header eh;

	if (read_head(path, &eh, sizeof(eh)) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.magic, FTKIT_TRACE_MAGIC, 8) || eh.ref_real_ns < since)
		return 0;
	return eh.pid;
}

/*
 * from becomes to unless to exists: a name aside is never taken from another trace (two
 * processes moving one trace aside at once moved the second one's onto it).  0 or -1.
 */
static int rename_new(const char *from, const char *to)
{
	struct stat st;

	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a file system without it: the check and the rename, as before */
	return lstat(to, &st) == 0 ? -1 : rename(from, to);
}

/*
 * A trace already at final that a process of this run wrote (a child run through system()
 * or posix_spawn, which no exec naming reaches, finishing first; with FTRACE_SESSION, also
 * a sibling run by an untraced wrapper: a shell's `prog; prog`) is moved to final.<its
 * pid>, the name of a child's trace, instead of being replaced; with it, the traces of the
 * images that process exec'd (final.exec<n> of its pid) go to final.<pid>.exec<n>.  A
 * trace at an exec'd image's name (<base>.exec<n>) goes to <base>.<pid>.exec<n>.  So each
 * process's traces keep its pid in their names (the make trial: ftrace.dat.exec1 was
 * another process's than ftrace.dat, and ftrace.dat.exec1.<pid> read as an exec of it).
 * at: where that trace is now (final, or where rename_output's exchange put it).  1: it
 * was moved; 0: there is no trace of another process of this run at `at`; -1: there is,
 * and its name aside is taken.  Async-signal-safe.
 */
static int move_aside_descendant(const char *final, const char *at)
{
	char aside[PATH_MAX + 48], from[PATH_MAX + 24];
	size_t n = strlen(final), cut = n;
	uint64_t since = ft_sess.hdr.ref_real_ns;
	const char *dot = strrchr(final, '.');
	uint32_t pid;
	char *p;

	if (run_since_ns && run_since_ns < since)
		since = run_since_ns;
	pid = run_trace_pid(at, since);
	if (!pid || pid == ft_sess.hdr.pid)
		return 0;
	if (n + 48 > sizeof(aside))
		return -1;
	/* an exec'd image's name: the pid goes before its ".exec<n>" */
	if (dot && !strncmp(dot, ".exec", 5) && dot[5] >= '0' && dot[5] <= '9' &&
	    strspn(dot + 5, "0123456789") == strlen(dot + 5))
		cut = (size_t)(dot - final);
	memcpy(aside, final, cut);
	p = aside + cut;
	*p++ = '.';
	p = ft_utoa(p, pid);
	ft_strlcpy(p, final + cut, sizeof(aside) - (size_t)(p - aside));
	if (rename_new(at, aside) != 0)
		return -1;
	if (cut != n)
		return 1;
	/* the process's exec'd images, which took final.exec<n> beside its trace */
	memcpy(from, final, n);
	memcpy(from + n, ".exec", 5);
	for (unsigned long g = 1; g < 1000; g++) {
		ft_utoa(from + n + 5, g);
		if (run_trace_pid(from, since) != pid)
			break;
		ft_strlcpy(p, from + n, sizeof(aside) - (size_t)(p - aside));
		if (rename_new(from, aside) != 0)
			break;
	}
	return 1;
}

/*
 * from becomes to.  Processes of one run finishing at once (a pipeline's two ends) could
 * both find the name free, and the second rename replaced the first one's trace (the gawk
 * trial lost one of a pipeline's two traces in about a hundred).  So the name is taken only
 * while free; else it is exchanged with what holds it, and that is moved aside (a trace of
 * another process of this run) or removed (an older trace, which the name replaces).  What
 * to held is read only once it is at from, a name no other process uses: reading it at to
 * and then moving to aside moved whatever a sibling had exchanged in meanwhile, under the
 * first trace's pid, and that trace stayed at the sibling's .part (1 run in 15 of
 * TestTracerSiblingsFinishTogether).  A file system without these renames gets the check
 * and the plain rename.  Async-signal-safe.
 */
static int rename_output(const char *from, const char *to)
{
	struct stat ok, st;
	int err = output_ok(to);

	if (err)
		return err;
	/* the file output_ok passed (a trace, or one checked at the start when no descriptor
	   is left now to read it with: ulimit -n) */
	if (lstat(to, &ok) != 0)
		ok.st_ino = 0;
	for (int k = 0; k < 8; k++) {
		if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
			return 0;
		if (errno != EEXIST)
			break;
		if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE)) {
			/* from holds what to held: left there unless it is a trace to replace */
			if (!move_aside_descendant(to, from)) {
				int other = holds_other(from);

				if (!other || (other < 0 && ok.st_ino && lstat(from, &st) == 0 &&
					       st.st_ino == ok.st_ino && st.st_dev == ok.st_dev))
					unlink(from);
			}
			return 0;
		}
		if (errno != ENOENT)
			break;	/* gone meanwhile: taken while free on the next turn */
	}
	move_aside_descendant(to, to);
	if (rename(from, to) != 0)
		return -errno;
	return 0;
}

/*
 * Is name the trace name of a descendant of the process writing base: base followed by
 * ".<pid>" (a fork child) and ".exec<n>" (an exec'd image) parts, at least one?
 */
static int fork_name_of(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *p = name + n;

	if (strncmp(name, base, n) || *p != '.')
		return 0;
	while (*p == '.') {
		const char *d = p + 1;

		if (!strncmp(d, "exec", 4))
			d += 4;
		if (*d < '0' || *d > '9')
			return 0;
		while (*d >= '0' && *d <= '9')
			d++;
		p = d;
	}
	return !*p;
}

static void expand_output(const char *in, char *out, size_t size, const char *suffix)
{
	char pid[24];
	size_t o = 0;

	ft_utoa(pid, (unsigned long)getpid());
	for (const char *p = in; *p && o + 24 < size; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += ft_strlcpy(out + o, pid, size - o);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = 0;
	if (suffix && o + strlen(suffix) + 1 < size)
		strcat(out, suffix);
}

/*
 * A thread's end: its buffer goes back (ft_thread_exit) in the last round of key
 * destructors.  The program's own key destructors run in the same rounds, and their
 * calls were lost ("no buffer") when ours ran first: libxml2's threads lost
 * xmlFreeGlobalState and xmlResetError, 2 of them each.  So ours puts its key back until
 * the last round glibc makes (PTHREAD_DESTRUCTOR_ITERATIONS); v counts the rounds from 1.
 */
static void thread_key_dtor(void *v)
{
	uintptr_t round = (uintptr_t)v;

	if (round < PTHREAD_DESTRUCTOR_ITERATIONS &&
	    !pthread_setspecific(exit_key, (void *)(round + 1)))
		return;
	ft_thread_exit();
}

static void read_comm(pid_t tid, char name[16])
{
	char path[64] = "/proc/self/task/";
	char buf[17];
	ssize_t n;
	int fd;

	strcpy(ft_utoa(path + strlen(path), (unsigned long)tid), "/comm");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, 16);
	close(fd);
	if (n <= 0)
		return;
	if (buf[n - 1] == '\n')
		n--;
	memset(name, 0, 16);
	memcpy(name, buf, (size_t)n);
	ft_fix_comm(name);
}

static int writev_all(int fd, struct iovec *iov, int n, uint64_t off, uint64_t *wrote)
{
	*wrote = 0;
	while (n) {
		ssize_t w = pwritev(fd, iov, n > IOV_MAX ? IOV_MAX : n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		*wrote += (uint64_t)w;
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Events in a block's data, EXT records not counted (the writer counts: the hot path does not). */
static uint32_t count_events(const uint32_t *w, uint32_t words)
{
	uint32_t n = 0, i = 0;

	while (i < words) {
		uint32_t type = w[i] & 7;

		if (type == FTKIT_EV_EXT) {	/* not an event of its own */
			i += 1 + ((w[i] >> 8) & 0xff);
			continue;
		}
		n++;
		if (type <= FTKIT_EV_EXIT_UNWOUND || type == FTKIT_EV_FUNC_AGAIN || type == FTKIT_EV_ENTRY_AGAIN)
			i += 1;
		else if (type == FTKIT_EV_FUNC)
			i += 3;
		else
			i += 2;
	}
	return n;
}

/*
 * A batch of chunks written with one vectored write, and what to do to the blocks once
 * they are in the file (writer thread only; finalisation and snapshots only write).
 */
#define FT_BATCH 256			/* chunks */

enum { FT_DONE_NONE = 0, FT_DONE_FREE, FT_DONE_PARTIAL, FT_DONE_EXITED };

struct ft_batch {
	int fd;
	uint64_t *off;
	int n, niov;
	int err;
	int nkept;				/* entries in the file (all but after a failed write) */
	uint64_t nev;				/* events in the batch's EVENTS chunks */
	struct iovec iov[FT_BATCH * 3];
	union {
		struct ftkit_events_chunk ev;
		struct ftkit_thread_chunk th;
		struct ftkit_more_chunk more;
	} hdr[FT_BATCH];
	uint64_t bytes;				/* of the chunks in the batch so far */
	struct {
		struct ft_tbuf *tb;
		struct ft_blk *b;
		int done;
		uint32_t pub;
		uint32_t nev;
		uint64_t at;			/* where its chunk starts in the batch */
		uint64_t seq;			/* b's seq when the chunk was made */
		uint64_t dropped;		/* of tb->dropped, said by this chunk */
	} ent[FT_BATCH];
};

static const char zero8[8];

static void batch_done(struct ft_batch *bt);
static struct ft_batch writer_bt, final_bt;

/*
 * After a batch was written at base: a block its owner began to reuse while the batch
 * was being copied (a ring's, in a snapshot or a live dump: its seq changed) may be torn
 * in the file.  Its chunk becomes a SKIP chunk, which readers pass over (the block is
 * then missing, as one the ring overwrote).  Only rings reuse blocks unwritten; the
 * owner sets a reused block's seq before its data, so a block whose seq is unchanged
 * after the copy was copied whole.
 */
static void batch_torn(struct ft_batch *bt, uint64_t base)
{
	static const uint32_t skip = FTKIT_CHUNK_SKIP;

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (int i = 0; i < bt->nkept; i++) {
		struct ft_blk *b = bt->ent[i].b;

		if (b && bt->ent[i].done == FT_DONE_NONE &&
		    __atomic_load_n(&b->hdr.seq, __ATOMIC_ACQUIRE) != bt->ent[i].seq)
			write_all(bt->fd, &skip, sizeof(skip), (off_t)(base + bt->ent[i].at));
	}
}

/*
 * Where the last chunks written to the trace file start, oldest first: ft_session_finish
 * may cut the file back to one of them to make room for its tables.  A chunk at a time: a
 * file filled to a size limit by the chunks of a batch that fitted lost them all when cut
 * back a batch at a time.  Reset when a session's file is made (a fork child's own).
 */
#define CUT_POINTS	256
static uint64_t cut_at[CUT_POINTS];
static int ncut;

static void cut_point(uint64_t off)
{
	if (ncut == CUT_POINTS) {
		memmove(cut_at, cut_at + 1, sizeof(cut_at) - sizeof(cut_at[0]));
		ncut--;
	}
	cut_at[ncut++] = off;
}

/*
 * A trace does not fill its file system: once less than the reserve would be left (5 % of
 * the file system, at most 1 GiB; FTRACE_DISK_RESERVE=SIZE, 0 for none), the writer's
 * writes stop as on a full disk — their events counted lost, the file flagged
 * WRITE_ERROR; finalisation still writes the threads' last blocks and tables.  A spinning
 * program under function_graph writes gigabytes a minute (a trial filled a shared disk with
 * 47 GB).  fstatfs again after half the room above the reserve is written (at most 16 MiB),
 * and at every write once low.  In secure-execution mode the variable is not obeyed.
 */
static int64_t disk_reserve = -1;	/* -1: the default; bytes otherwise (read_limits) */

static int disk_low(int fd, uint64_t bytes)
{
	int64_t reserve = disk_reserve;
	static uint64_t next_check;	/* ft_sess.end to look again at */
	static int low;
	struct statfs sf;
	uint64_t avail, want, room;

	if (!reserve)
		return 0;
	if (!low && ft_sess.end < next_check)
		return 0;
	if (fstatfs(fd, &sf) != 0 || !sf.f_blocks)
		return 0;
	avail = (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize;
	want = reserve > 0 ? (uint64_t)reserve : (uint64_t)sf.f_blocks * (uint64_t)sf.f_bsize / 20;
	if (reserve < 0 && want > (1ULL << 30))
		want = 1ULL << 30;
	low = avail < want + bytes;
	/* again after half the room left above the reserve, at most 16 MiB on (others write too) */
	room = avail > want ? (avail - want) / 2 : 0;
	next_check = ft_sess.end + (room < (16u << 20) ? room : (16u << 20));
	return low;
}

/* The write error err, said once by whichever thread has a stderr. */
static void say_write_error(int err)
{
	if (err == FT_ERR_RESERVE)
		ft_msg("the trace's file system is nearly full: its writes stop short of the "
		       "reserve (FTRACE_DISK_RESERVE), events are lost", NULL);
	else
		ft_msg_err(write_failed_msg, NULL, err);
}

/*
 * After a write that reached the file for its first `wrote` bytes only: how many of the
 * batch's chunks it holds whole (they start at ent[].at, in order), and their bytes.
 */
static int batch_whole(const struct ft_batch *bt, uint64_t wrote, uint64_t *bytes)
{
	int k = 0;

	while (k < bt->n && (k + 1 < bt->n ? bt->ent[k + 1].at : bt->bytes) <= wrote)
		k++;
	*bytes = k < bt->n ? bt->ent[k].at : bt->bytes;
	return k;
}

static void batch_flush(struct ft_batch *bt)
{
	uint64_t bytes = 0, wrote;
	int err;

	if (!bt->n)
		return;
	for (int i = 0; i < bt->niov; i++)
		bytes += bt->iov[i].iov_len;
	bt->nkept = 0;
	err = bt->err;
	if (!err) {
		/* the trace file's descriptor checked (reopened by name if the program took it) */
		int fd = sess_fd(bt->fd);
		struct xfsz_guard g;

		if (fd < 0) {
			err = fd;
		} else if (bt == &writer_bt && disk_low(fd, bytes)) {
			err = FT_ERR_RESERVE;
		} else {
			bt->fd = fd;
			xfsz_block(&g);
			err = writev_all(fd, bt->iov, bt->niov, *bt->off, &wrote);
			bt->nkept = bt->n;
			/*
			 * Part of the chunks may have reached the file (a full disk, RLIMIT_FSIZE
			 * in the middle of one): those whole stay, the file cut back after the
			 * last of them, or a later, smaller write that fits would leave the torn
			 * rest after it and the reader would stop there (found with flex under
			 * ulimit -f).  Cutting back the whole batch kept no event at all under a
			 * limit smaller than a batch.  Shrinking is allowed at any file-size limit.
			 */
			if (err) {
				bt->nkept = batch_whole(bt, wrote, &bytes);
				(void)!ftruncate(fd, (off_t)(*bt->off + bytes));
			}
			xfsz_unblock(&g, err);
		}
	}
	if (bt->nkept) {
		batch_torn(bt, *bt->off);
		if (bt->off == &ft_sess.end)
			for (int i = 0; i < bt->nkept; i++)
				cut_point(*bt->off + bt->ent[i].at);
		*bt->off += bytes;
	}
	if (err) {
		bt->err = err;
		/* the reader's hint is then not --no-loss: the file could not take the events */
		__atomic_fetch_or(&ft_sess.hdr.flags, FTKIT_F_WRITE_ERROR, __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&write_failed, 1, __ATOMIC_RELAXED)) {
			if (bt == &writer_bt && writer_private)
				__atomic_store_n(&write_err_later, err, __ATOMIC_RELEASE);
			else
				say_write_error(err);
		}
	}
	batch_done(bt);
	bt->n = bt->niov = 0;
	bt->bytes = 0;
}

/* Forget what bt holds, unwritten (a fork child's copy of the parent's). */
static void batch_reset(struct ft_batch *bt)
{
	bt->n = bt->niov = 0;
	bt->bytes = bt->nev = 0;
	bt->err = 0;
}

static void batch_iov(struct ft_batch *bt, const void *p, size_t len)
{
	if (len) {
		bt->iov[bt->niov].iov_base = (void *)p;
		bt->iov[bt->niov].iov_len = len;
		bt->niov++;
		bt->bytes += len;
	}
}

/*
 * The batch's next chunk, which began at byte `at` of the batch, is of block b (NULL:
 * none) of tb, whose seq was `seq`: what to do once it is written.
 */
static void batch_ent(struct ft_batch *bt, struct ft_tbuf *tb, struct ft_blk *b, int done,
		      uint32_t pub, uint32_t nev, uint64_t at, uint64_t seq)
{
	bt->ent[bt->n].at = at;
	bt->ent[bt->n].seq = seq;
	bt->ent[bt->n].dropped = 0;
	bt->ent[bt->n].tb = tb;
	bt->ent[bt->n].b = b;
	bt->ent[bt->n].done = done;
	bt->ent[bt->n].pub = pub;
	bt->ent[bt->n].nev = nev;
	bt->n++;
}

/* Add block b of tb, pub bytes of data, as an EVENTS chunk. */
static void batch_block(struct ft_batch *bt, struct ft_tbuf *tb, struct ft_blk *b, uint32_t pub,
			uint32_t flags, int done)
{
	struct ftkit_events_chunk *h = &bt->hdr[bt->n].ev;
	const uint32_t *data;
	uint64_t at;

	if (bt->n == FT_BATCH)
		batch_flush(bt);
	at = bt->bytes;
	h = &bt->hdr[bt->n].ev;
	*h = b->hdr;
	if (h->depth > FT_MAXOPEN)
		h->depth = 0;	/* cannot happen: a torn header of a ring block being reused */
	data = (const uint32_t *)&b->frames[h->depth];
	h->c.type = FTKIT_CHUNK_EVENTS;
	h->c.hdr_size = (uint32_t)(sizeof(*h) + h->depth * sizeof(struct ftkit_frame));
	h->c.size = h->c.hdr_size + ROUND_UP((uint64_t)pub, 8UL);
	h->flags |= flags;
	if (tb->clear_seq && h->seq == tb->clear_seq)
		h->flags |= FTKIT_B_CLEARED;	/* a gap before it is no loss */
	if (tb->dropped) {
		/* the blocks before it that the writer could not write: a counted loss */
		h->flags |= FTKIT_B_DROPPED;
		h->lost += tb->dropped;
	}
	h->data_len = pub;
	h->nev = count_events(data, pub / 4);
	batch_iov(bt, h, sizeof(*h));
	batch_iov(bt, b->frames, h->depth * sizeof(struct ftkit_frame) + pub);
	batch_iov(bt, zero8, (size_t)(h->c.size - h->c.hdr_size - pub));
	batch_ent(bt, tb, b, done, pub, h->nev, at, h->seq);
	bt->ent[bt->n - 1].dropped = tb->dropped;	/* back if this chunk fails too */
	tb->dropped = 0;
}

/*
 * Add bytes [from, pub) of block b's data as a MORE chunk: its first `from` bytes are in
 * the file already (b->written), as a PARTIAL chunk and MORE chunks before this one.
 */
static void batch_more(struct ft_batch *bt, struct ft_tbuf *tb, struct ft_blk *b, uint32_t from,
		       uint32_t pub, uint32_t flags, int done)
{
	struct ftkit_more_chunk *h;
	const uint32_t *data;
	uint64_t at;

	if (bt->n == FT_BATCH)
		batch_flush(bt);
	at = bt->bytes;
	h = &bt->hdr[bt->n].more;
	memset(h, 0, sizeof(*h));
	data = (const uint32_t *)&b->frames[b->hdr.depth > FT_MAXOPEN ? 0 : b->hdr.depth];
	h->c.type = FTKIT_CHUNK_MORE;
	h->c.hdr_size = sizeof(*h);
	h->c.size = sizeof(*h) + ROUND_UP((uint64_t)(pub - from), 8UL);
	h->tid = b->hdr.tid;
	h->flags = flags;
	h->seq = b->hdr.seq;
	h->data_off = from;
	h->data_len = pub - from;
	h->nev = count_events(data + from / 4, (pub - from) / 4);
	batch_iov(bt, h, sizeof(*h));
	batch_iov(bt, (const char *)data + from, pub - from);
	batch_iov(bt, zero8, (size_t)(h->c.size - sizeof(*h) - (pub - from)));
	batch_ent(bt, tb, b, done, pub, h->nev, at, h->seq);
}

static void batch_thread(struct ft_batch *bt, struct ft_tbuf *tb, int exited, int done)
{
	struct ftkit_thread_chunk *h;
	uint64_t lost = __atomic_load_n(&tb->lost, __ATOMIC_RELAXED), at;

	if (bt->n == FT_BATCH)
		batch_flush(bt);
	at = bt->bytes;
	h = &bt->hdr[bt->n].th;
	memset(h, 0, sizeof(*h));
	h->c.type = FTKIT_CHUNK_THREAD;
	h->c.hdr_size = sizeof(*h);
	h->c.size = sizeof(*h);
	h->tid = tb->tid;
	h->flags = (exited ? FTKIT_T_EXITED : 0) | (lost ? FTKIT_T_LOST : 0);
	h->lost = lost;
	h->lost_depth = __atomic_load_n(&tb->lost_depth, __ATOMIC_RELAXED);
	h->blocks = tb->blocks;
	memcpy(h->name, tb->name, 16);
	batch_iov(bt, h, sizeof(*h));
	batch_ent(bt, tb, NULL, done, 0, 0, at, 0);
}

static void batch_raw(struct ft_batch *bt, const void *p, size_t len)
{
	uint64_t at;

	if (bt->n == FT_BATCH)
		batch_flush(bt);
	at = bt->bytes;
	batch_iov(bt, p, len);
	batch_ent(bt, NULL, NULL, FT_DONE_NONE, 0, 0, at, 0);
}

/*
 * The blocks of tb not yet in the file, from the writer's cursor (or, in ring mode,
 * the ring but its oldest block, which the owner may be overwriting), the one being
 * filled as a PARTIAL chunk.  For finalisation and snapshots: nothing is marked written.
 * more: into the trace file with the writer stopped, so what it wrote of a block
 * (b->written) is in the file and only the rest goes, as a MORE chunk.
 */
static void batch_pending(struct ft_batch *bt, struct ft_tbuf *tb, int more)
{
	uint64_t next = __atomic_load_n(&tb->seq_next, __ATOMIC_ACQUIRE);
	uint64_t seq = tb->wseq;

	/* (a ring's wseq is its first block: a thread that moved to it from streaming
	   numbers its blocks on from the streamed ones) */
	if (tb->ring && next >= tb->nblk && next - tb->nblk + 1 > seq)
		seq = next - tb->nblk + 1;
	if (seq < tb->clear_seq)
		seq = tb->clear_seq;
	for (; seq < next; seq++) {
		struct ft_blk *b = ft_tbuf_blk(tb, seq);
		uint32_t st = __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);
		uint32_t pub = __atomic_load_n(&b->pub, __ATOMIC_ACQUIRE);

		if (st == FT_BLK_FREE || b->hdr.seq != seq)
			continue;
		if (more && !tb->ring && b->written) {
			if (pub > b->written)
				batch_more(bt, tb, b, b->written, pub,
					   st == FT_BLK_FILL ? FTKIT_B_PARTIAL : 0, FT_DONE_NONE);
		} else if (pub || b->hdr.lost)
			batch_block(bt, tb, b, pub, (tb->ring ? FTKIT_B_RING : 0) |
				    (st == FT_BLK_FILL ? FTKIT_B_PARTIAL : 0), FT_DONE_NONE);
	}
}

/* ---- the writer thread ---- */

static void tbuf_release(struct ft_tbuf *tb);

/* After a batch's write (or its failure: the events are then counted lost). */
static void batch_done(struct ft_batch *bt)
{
	for (int i = 0; i < bt->n; i++) {
		struct ft_tbuf *tb = bt->ent[i].tb;
		int failed = i >= bt->nkept;

		/* events that did not reach the file are lost: the writer's blocks, and at
		   finalisation (which frees none) the blocks still in memory */
		if (failed && tb && (bt->ent[i].done == FT_DONE_FREE ||
				     (bt == &final_bt && bt->ent[i].b))) {
			__atomic_fetch_add(&tb->lost, bt->ent[i].nev, __ATOMIC_RELAXED);
			tb->dropped += bt->ent[i].nev;
		}
		if (failed && tb)
			tb->dropped += bt->ent[i].dropped;
		switch (bt->ent[i].done) {
		case FT_DONE_FREE:
			tb->wseq++;
			if (!failed)
				tb->blocks++;
			__atomic_store_n(&bt->ent[i].b->state, FT_BLK_FREE, __ATOMIC_RELEASE);
			break;
		case FT_DONE_PARTIAL:
			/* after a failed write the next flush sends the same bytes again */
			if (!failed)
				bt->ent[i].b->written = bt->ent[i].pub;
			break;
		case FT_DONE_EXITED:
			tbuf_release(tb);
			break;
		}
	}
}

/* Full blocks, the threads' THREAD chunks and (partial) the blocks being filled. */
static void writer_collect(struct ft_batch *bt, int partial)
{
	struct ft_session *s = &ft_sess;
	uint64_t n = __atomic_load_n(&s->nreg, __ATOMIC_ACQUIRE);

	for (uint64_t i = 0; i < n && i < FT_MAX_REG; i++) {
		struct ft_tbuf *tb = __atomic_load_n(&s->reg[i], __ATOMIC_ACQUIRE);
		uint64_t seq, next;
		int exited;

		if (!tb)
			continue;
		if (!tb->announced) {
			tb->announced = 1;
			batch_thread(bt, tb, 0, FT_DONE_NONE);
		}
		exited = __atomic_load_n(&tb->exited, __ATOMIC_ACQUIRE);
		next = __atomic_load_n(&tb->seq_next, __ATOMIC_ACQUIRE);
		if (tb->ring) {
			if (exited) {
				/* its ring goes into the file now: the tbuf is reused */
				batch_pending(bt, tb, 0);
				s->reg[i] = NULL;
				if (!tb->retired) {
					__atomic_fetch_add(&s->lost_exited, tb->lost, __ATOMIC_RELAXED);
					__atomic_fetch_add(&s->lost_depth_exited, tb->lost_depth, __ATOMIC_RELAXED);
				}
				batch_thread(bt, tb, !tb->retired, FT_DONE_EXITED);
			}
			continue;
		}
		for (seq = tb->wseq; seq < next; seq++) {
			struct ft_blk *b = ft_tbuf_blk(tb, seq);
			uint32_t st = __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);

			if (b->hdr.seq != seq)
				break;
			if (st == FT_BLK_FULL && seq < tb->clear_seq) {
				tb->wseq++;	/* cleared: not written */
				__atomic_store_n(&b->state, FT_BLK_FREE, __ATOMIC_RELEASE);
			} else if (st == FT_BLK_FULL) {
				uint32_t pub = __atomic_load_n(&b->pub, __ATOMIC_ACQUIRE);

				if (b->written)
					batch_more(bt, tb, b, b->written, pub, 0, FT_DONE_FREE);
				else
					batch_block(bt, tb, b, pub, 0, FT_DONE_FREE);
			} else if (st == FT_BLK_FILL && partial) {
				uint32_t pub = __atomic_load_n(&b->pub, __ATOMIC_ACQUIRE);

				if (pub > b->written && b->written)
					batch_more(bt, tb, b, b->written, pub, FTKIT_B_PARTIAL,
						   FT_DONE_PARTIAL);
				else if (pub > b->written)
					batch_block(bt, tb, b, pub, FTKIT_B_PARTIAL, FT_DONE_PARTIAL);
				break;
			} else {
				break;
			}
		}
		if (exited && seq == next) {
			/* every block written (the flush below does it before the release); a
			   retired buffer's counts went on with its thread to its next buffer */
			__atomic_store_n(&s->reg[i], NULL, __ATOMIC_RELEASE);
			if (!tb->retired) {
				__atomic_fetch_add(&s->lost_exited, tb->lost, __ATOMIC_RELAXED);
				__atomic_fetch_add(&s->lost_depth_exited, tb->lost_depth, __ATOMIC_RELAXED);
			}
			batch_thread(bt, tb, !tb->retired, FT_DONE_EXITED);
		}
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The session's own limits (FTRACE_SIZE, FTRACE_DURATION), checked by the writer after
 * each pass: a trace stops at its size or time even when nothing else is left to stop it
 * (ftrace record killed, or no ftrace record at all).  Each process's trace has them,
 * its time counted from its own start.
 */
static struct {
	uint64_t bytes, ms, start_ms;
	void (*stop)(int reason);
	int fired;
} lim;

void ft_session_set_stop(void (*stop)(int reason))
{
	lim.stop = stop;
}

/*
 * When the run began, on now_ms()'s clock: FTRACE_SESSION's time (ftrace record's start,
 * or the start of the traced process that began the run) when given, so that --duration
 * bounds the run: a fork child or exec'd image of it counted from its own start (the
 * nginx trial: workers a reload forked recorded a second past the limit). Else now.
 */
static uint64_t run_start_ms(void)
{
	uint64_t now = now_ms(), ago;
	struct timespec rt;

	if (!run_since_ns || clock_gettime(CLOCK_REALTIME, &rt))
		return now;
	ago = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	if (ago <= run_since_ns)
		return now;
	ago = (ago - run_since_ns) / 1000000;
	return ago < now ? now - ago : 0;
}

/* The writer, after a pass: a limit reached ends the session (once). */
static void limits_check(uint64_t now)
{
	struct ft_session *s = &ft_sess;
	int reason = 0;

	uint64_t bytes = __atomic_load_n(&lim.bytes, __ATOMIC_RELAXED);

	if (bytes && __atomic_load_n(&s->end, __ATOMIC_RELAXED) >= bytes)
		reason = FTKIT_R_SIZE;
	else if (lim.ms && now - lim.start_ms >= lim.ms)
		reason = FTKIT_R_DURATION;
	if (reason && lim.stop && !lim.fired) {
		__atomic_store_n(&lim.fired, 1, __ATOMIC_RELEASE);
		lim.stop(reason);
	}
}

/*
 * `ftrace live PID size`: the size limit from now on (0: none), as FTRACE_SIZE sets it at
 * start; a trace already past it stops at the writer's next pass.  An attached process
 * has none unless given one this way.
 */
void ft_session_set_size(uint64_t bytes)
{
	__atomic_store_n(&lim.bytes, bytes, __ATOMIC_RELAXED);
}

static void read_limits(void)
{
	const char *size = secure_getenv("FTRACE_SIZE");
	const char *dur = secure_getenv("FTRACE_DURATION");
	const char *run = secure_getenv("FTRACE_SESSION");
	const char *reserve = secure_getenv("FTRACE_DISK_RESERVE");
	uint64_t v;

	if (reserve && *reserve) {
		if (ft_parse_size(reserve, &v) || v > INT64_MAX)
			ft_msg("ignoring FTRACE_DISK_RESERVE: not a size (bytes, or with K, M, G, T); "
			       "the default applies", NULL);
		else
			disk_reserve = (int64_t)v;
	}
	if (size && *size) {
		if (ft_parse_size(size, &v) || !v)
			ft_msg("ignoring FTRACE_SIZE: not a size (bytes, or with K, M, G, T)", NULL);
		else
			lim.bytes = v;
	}
	if (dur && *dur) {
		if (ft_parse_duration(dur, &v) || !v)
			ft_msg("ignoring FTRACE_DURATION: not a duration (e.g. 30s, 5m)", NULL);
		else
			lim.ms = v / 1000000 ? v / 1000000 : 1;
	}
	if (run && *run) {
		int saved = errno, bad;
		char *end;

		errno = 0;
		v = strtoull(run, &end, 10);
		bad = errno || *end || !v;
		errno = saved;
		if (bad)
			ft_msg("ignoring FTRACE_SESSION: not a time in ns since the epoch", NULL);
		else
			run_since_ns = v;
	}
}

/*
 * The writer's own descriptor table (unshare CLONE_FILES) holding only the trace file.  A
 * program that closes every descriptor and puts its own files on the runtime's numbers
 * (daemons do) changes its table, not the writer's: no close and dup2 between the
 * writer's check of its descriptor and its write can make that write land in the
 * program's file (it did, under load).  Closing the copies of the program's descriptors
 * here releases none of its POSIX locks (they belong to its table) and keeps no pipe or
 * socket of its open.  Returns the writer's descriptor for the trace file (negative: the
 * file could not be had again), or INT_MIN where a table of its own cannot be had
 * (close_range or unshare refused): the writer then shares the program's table and
 * checks the descriptor before each write, which leaves that window open.
 */
static int writer_own_fd(void)
{
	struct ft_session *s = &ft_sess;
	int fd = __atomic_load_n(&s->fd, __ATOMIC_ACQUIRE);
	struct stat st;

	if (fd < 0 || syscall(SYS_close_range, ~0U, ~0U, 0) != 0 || unshare(CLONE_FILES) != 0)
		return INT_MIN;
	if (fstat(fd, &st) != 0 || st.st_dev != s->fd_id.dev || st.st_ino != s->fd_id.ino)
		fd = -1;	/* the program took the number just before */
	if (fd > 0)
		syscall(SYS_close_range, 0U, (unsigned)fd - 1, 0);
	syscall(SYS_close_range, (unsigned)fd + 1, ~0U, 0);
	if (fd < 0) {
		fd = open(s->part, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != s->fd_id.dev ||
				st.st_ino != s->fd_id.ino)) {
			close(fd);
			fd = -EBADF;
		}
	}
	writer_private = 1;
	return fd < 0 ? -EBADF : fd;
}

/*
 * The writer thread: created with every signal blocked but the core's round signal (so a
 * file-size limit gives EFBIG rather than SIGXFSZ), it records nothing (its state is DEAD)
 * and runs no traced code.
 */
static void *writer_main(void *arg)
{
	struct ft_session *s = &ft_sess;
	struct ft_batch *bt = &writer_bt;
	uint32_t gen = (uint32_t)(uintptr_t)arg;
	const char *maps_done = NULL;
	uint64_t last_flush = now_ms();
	int own;

	ft_cur.state = FT_THREAD_DEAD;
	prctl(PR_SET_NAME, "ftkit-writer");
	ft_thread_answer_rounds();
	own = writer_own_fd();
	for (;;) {
		uint64_t now = now_ms(), before;
		int partial = now - last_flush >= FT_FLUSH_MS;
		const char *m;

		lock_get();
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE || s->gen != gen) {
			lock_put();
			return NULL;
		}
		before = s->end;
		bt->fd = own != INT_MIN ? own : s->fd;
		bt->off = &s->end;
		bt->err = 0;
		/* a new image of the loaded objects (dlopen, dlclose) */
		m = __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE);
		if (!maps_done)
			maps_done = m;	/* written at start-up */
		if (m != maps_done) {
			size_t ml = __atomic_load_n(&s->maps_len, __ATOMIC_ACQUIRE);

			if (ml && m == __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE)) {
				((struct ftkit_maps_chunk *)m)->ts = ft_clock_read();
				batch_raw(bt, m, ml);
				maps_done = m;
			}
		}
		writer_collect(bt, partial);
		batch_flush(bt);
		lock_put();
		limits_check(now);
		if (partial)
			last_flush = now;
		if (s->end == before) {
			struct timespec ts = { 0, FT_IDLE_US * 1000L };

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * The writer is joinable: it ends by itself at its next pass once the session is not live
 * (or of another generation), and the next writer_start or the exit (ft_session_reap)
 * joins it, so that no thread of ours outlives the program's: valgrind's leak check calls
 * the memory of a thread alive at exit "possibly lost" (TestTracerValgrindClean).  A
 * second at most: past that (a write stuck on a slow disk) it is detached and left.
 */
static void writer_reap(void)
{
	if (!writer_joinable || pthread_equal(writer_th, pthread_self()))
		return;
	writer_joinable = 0;
	ft_join_briefly(writer_th);
}

void ft_session_reap(void)
{
	if (__atomic_load_n(&ft_sess.state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE)
		writer_reap();
}

/*
 * No writer thread could be made for the session: nothing frees a block before the finish,
 * so --no-loss does not wait for one.
 */
static int writerless;

/*
 * Does --no-loss make a thread wait for a free block now?  Not once FTRACE_SIZE/DURATION
 * stop the session (the writer, which frees blocks, is unregistering ops and waits for
 * this thread's callback), nor without a writer.
 */
static inline int no_loss_waits(void)
{
	return cfg.no_loss && __atomic_load_n(&ft_sess.state, __ATOMIC_ACQUIRE) == FT_SESS_LIVE &&
	       !__atomic_load_n(&lim.fired, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&writerless, __ATOMIC_ACQUIRE);
}

static int writer_start(void)
{
	sigset_t all, old;
	int err;

	writer_reap();
	ft_helper_sigmask(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&writer_th, NULL, writer_main, (void *)(uintptr_t)ft_sess.gen);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	writer_joinable = !err;
	return err;
}

/* A size in bytes, optionally with K, M, G or T (powers of 1024): 0, or -EINVAL. */
int ft_parse_size(const char *str, uint64_t *v)
{
	static const char units[] = "kmgt";
	unsigned long long n;
	const char *u;
	char *end;

	if (*str < '0' || *str > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(str, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end && (u = strchr(units, *end | 0x20)) != NULL) {
		unsigned shift = 10 * (unsigned)(u - units + 1);

		if (n > (~0ULL >> shift))
			return -EINVAL;
		n <<= shift;
		end++;
	}
	if (*end)
		return -EINVAL;
	*v = n;
	return 0;
}

/*
 * A duration: a number (fractions allowed) with ns, us (µs), ms, s, m or h, as ftrace's
 * own flags take it (Go's time.ParseDuration, one unit); 0 needs none.
 */
int ft_parse_duration(const char *str, uint64_t *ns)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "\u00b5s", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;

	if (*str < '0' || *str > '9')
		return -EINVAL;
	errno = 0;
	v = strtod(str, &end);
	if (errno || end == str)
		return -EINVAL;
	if (!*end && v == 0) {
		*ns = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit)) {
			v *= units[i].ns;
			if (v >= 1.8e19)
				return -EINVAL;
			*ns = (uint64_t)v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Blocks for a per-thread buffer of about bytes (4 to 65536). */
static uint32_t ring_blocks(uint64_t bytes)
{
	uint64_t n = bytes / cfg.block_size;

	return n < 4 ? 4 : n > 65536 ? 65536 : (uint32_t)n;
}

/* The mode of the thread buffers made from now on (under the session lock, or alone). */
static void set_mode(int ring, uint64_t bytes)
{
	cfg.ring = ring;
	cfg.nblk = ring ? ring_blocks(bytes) : cfg.stream_nblk;
	cfg.tbuf_bytes = ROUND_UP(sizeof(struct ft_tbuf), PAGE) +
			 ROUND_UP(FT_MAXOPEN * sizeof(struct ft_rframe), PAGE) +
			 ROUND_UP(FTKIT_PAIR_SLOTS * (sizeof(struct ftkit_pair) + sizeof(uint64_t)) +
				  FT_DEFER * sizeof(struct ft_defer) + FT_DEFER_DATA, PAGE) +
			 cfg.nblk * cfg.stride;
	cfg.gen++;
	ft_sess.hdr.mode = ring ? FTKIT_MODE_RING : FTKIT_MODE_STREAM;
	ft_sess.hdr.ring_bytes = ring ? (uint64_t)cfg.nblk * cfg.block_size : 0;
}

int ft_pairs_off;

/* Which switches the environment may set (none in secure-execution mode). */
static void read_config(size_t buf_kb)
{
	const char *ring = secure_getenv("FTRACE_RING");
	const char *nl = secure_getenv("FTRACE_NO_LOSS");
	const char *again = secure_getenv("FTRT_AGAIN");
	uint64_t bytes = (uint64_t)buf_kb * 1024, v;

	read_limits();

	cfg.block_size = 65536;
	cfg.stride = ROUND_UP(sizeof(struct ft_blk) + FT_MAXOPEN * sizeof(struct ftkit_frame) +
			      cfg.block_size + 64, PAGE);
	cfg.no_loss = nl && !strcmp(nl, "1");
	ft_pairs_off = again && !strcmp(again, "0");
	if (bytes > (4UL << 20))
		bytes = 4UL << 20;	/* streaming: memory only while the writer catches up */
	cfg.stream_nblk = ring_blocks(bytes);
	set_mode(0, 0);
	if (ring && *ring) {
		if (ft_parse_size(ring, &v) || !v) {
			ft_msg("ignoring FTRACE_RING: not a size (bytes, or with K, M, G, T)", NULL);
		} else {
			set_mode(1, v);
			if (v != (uint64_t)cfg.nblk * cfg.block_size) {
				char num[24];

				ft_utoa(num, (unsigned long)((uint64_t)cfg.nblk * cfg.block_size >> 10));
				ft_msg("FTRACE_RING: each thread's ring is whole 64 KiB blocks, 256 KiB to 4 GiB; KiB kept: ",
				       num);
			}
		}
	}
}

static uint64_t cmd_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (n--)
		h = (h ^ (unsigned char)*p++) * 0x100000001b3ull;
	return h;
}

#define CMD_ROOM 8192	/* a multiple of 8: the chunk's padding stays inside */

/*
 * The CMDLINE chunk of the process's command line as it is now: the header into *cc, the
 * arguments into cmd (CMD_ROOM bytes) with the chunk's zero padding; their length (0 when
 * /proc/self/cmdline cannot be read).
 */
static size_t cmdline_chunk(char *cmd, struct ftkit_chunk *cc)
{
	ssize_t cn = 0;
	int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (cfd >= 0) {
		cn = read(cfd, cmd, CMD_ROOM);
		close(cfd);
		if (cn < 0)
			cn = 0;
	}
	cc->type = FTKIT_CHUNK_CMDLINE;
	cc->hdr_size = sizeof(*cc);
	cc->size = ROUND_UP(sizeof(*cc) + (size_t)cn, 8UL);
	memset(cmd + cn, 0, (size_t)(cc->size - sizeof(*cc) - (size_t)cn));
	return (size_t)cn;
}

/* Write the chunk cmdline_chunk made at off of fd: 0 or -errno. */
static int cmdline_write(int fd, const struct ftkit_chunk *cc, const char *cmd, uint64_t off)
{
	int err = write_all(fd, cc, sizeof(*cc), (off_t)off);

	return err ? err : write_all(fd, cmd, cc->size - sizeof(*cc), (off_t)(off + sizeof(*cc)));
}

/*
 * At finalisation, under the session lock: the command line as the process shows it now,
 * as a second CMDLINE chunk (readers take the last) when it changed since the file was
 * opened.  A forked worker retitles itself (nginx's "worker process", over its argv): its
 * trace, opened at the fork, had its parent's.  Not from a signal handler (8 KiB of stack).
 */
static void cmdline_update(struct ft_session *s)
{
	struct ftkit_chunk cc;
	char cmd[CMD_ROOM];
	size_t cn = cmdline_chunk(cmd, &cc);
	int fd;

	if (!cn || cmd_hash(cmd, cn) == s->cmd_hash)
		return;
	/* through the trace file's descriptor only: checked, as every write of the writer */
	if ((fd = sess_fd(s->fd)) < 0 || cmdline_write(fd, &cc, cmd, s->end))
		return;	/* the final chunks go over it */
	s->end += cc.size;
	s->cmd_hash = cmd_hash(cmd, cn);
}

/*
 * Open the trace file for this process: header, CMDLINE, MAPS; start the writer.
 * fork_child: name it after the parent's output with ".<pid>" appended.
 */
int ft_session_open(const char *output, size_t buf_kb, uint32_t tracer, uint32_t depth,
		    int force_mono, int fork_child)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header *h = &s->hdr;
	char cmd[CMD_ROOM];
	struct ftkit_chunk cc;
	size_t cn;
	struct stat st;
	int fd, err, n;

	if (!fork_child) {
		char name[PATH_MAX];

		expand_output(output && *output ? output : "ftrace.dat", name, sizeof(name), NULL);
		/* the program may chdir: the name is taken where it starts */
		if (name[0] != '/' && getcwd(s->final, sizeof(s->final)) &&
		    strlen(s->final) + strlen(name) + 2 <= sizeof(s->final)) {
			if (strcmp(s->final, "/"))
				strcat(s->final, "/");
			strcat(s->final, name);
		} else {
			ft_strlcpy(s->final, name, sizeof(s->final));
		}
		ft_strlcpy(s->root, s->final, sizeof(s->root));
		read_config(buf_kb);
		/* a fork child's exec (a shell running a command): the child's name, not the
		   parent's, which it would replace */
		if (ft_exec_gen && fork_name_of(ft_exec_prev, s->final))
			ft_strlcpy(s->final, ft_exec_prev, sizeof(s->final));
		ft_strlcpy(s->base, s->final, sizeof(s->base));
		if (ft_exec_gen && !strcmp(s->final, ft_exec_prev) && lstat(s->final, &st) == 0) {
			char sfx[32] = ".exec";

			ft_utoa(sfx + 5, ft_exec_gen);
			if (strlen(s->final) + strlen(sfx) + 1 < sizeof(s->final))
				strcat(s->final, sfx);
		}
	} else {
		char sfx[32] = ".";
		const char *slash = strrchr(s->final, '/');

		ft_exec_gen = 0;	/* a new name: the child's execs count from 1 */
		ft_utoa(sfx + 1, (unsigned long)getpid());
		/*
		 * Each generation adds its pid: a shell function recursing through $(...) forty
		 * deep passed NAME_MAX, and the deeper processes had no trace.  Past a bound that
		 * leaves room for the suffixes added later (.exec<n>, .snap.<n>.<pid>, .part),
		 * the name is the run's own and the pid.
		 */
		if (strlen(slash ? slash + 1 : s->final) + strlen(sfx) > FT_NAME_ROOM && s->root[0])
			ft_strlcpy(s->final, s->root, sizeof(s->final));
		if (strlen(s->final) + strlen(sfx) + 1 < sizeof(s->final))
			strcat(s->final, sfx);
		ft_strlcpy(s->base, s->final, sizeof(s->base));
	}
	/* a fork child's final name already ends in its pid: <output>.<pid>.part */
	n = fork_child ? snprintf(s->part, sizeof(s->part), "%s.part", s->final) :
			 snprintf(s->part, sizeof(s->part), "%s.%d.part", s->final, (int)getpid());
	if (n < 0 || n >= (int)sizeof(s->part))
		return -ENAMETOOLONG;
	err = output_ok(s->final);
	if (err)
		return err;
	fd = ft_fd_high(create_private(s->part));
	if (fd < 0) {
		err = -errno;
		ft_msg_err("cannot create trace file ", s->part, err);
		return err;
	}
	if (!exit_key_ok && pthread_key_create(&exit_key, thread_key_dtor) == 0)
		exit_key_ok = 1;

	if (!fork_child)
		ft_clock_init(force_mono, &s->clk);
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, FTKIT_TRACE_MAGIC, 8);
	h->version = FTKIT_TRACE_VERSION;
	h->header_size = sizeof(*h);
	h->pid = (uint32_t)getpid();
	h->clock = (uint32_t)s->clk.source;
	h->ns_per_tick = s->clk.ns_per_tick;
	h->ref_ticks = s->clk.ref_ticks;
	h->ref_mono_ns = s->clk.ref_mono_ns;
	h->ref_real_ns = s->clk.ref_real_ns;
	h->start_ticks = ft_clock_read();
	h->tracer = tracer;
	s->tracer_now = tracer;
	h->record_size = 0;
	h->graph_depth = depth;
	h->tsc_hz = s->clk.tsc_hz;
	h->block_size = cfg.block_size;
	h->mode = cfg.ring ? FTKIT_MODE_RING : FTKIT_MODE_STREAM;
	h->ring_bytes = cfg.ring ? (uint64_t)cfg.nblk * cfg.block_size : 0;

	s->end = sizeof(*h);
	ncut = 0;	/* a fork child's file has none of its parent's chunks */
	/* CMDLINE */
	cn = cmdline_chunk(cmd, &cc);
	s->cmd_hash = cmd_hash(cmd, cn);
	err = write_all(fd, h, sizeof(*h), 0);
	if (!err)
		err = cmdline_write(fd, &cc, cmd, s->end);
	s->end += cc.size;
	if (!err)
		err = ft_maps_build(s->end, 0);
	s->maps_startup_done = 1;
	if (!err)
		err = write_all(fd, s->maps, s->maps_len, (off_t)s->end);
	if (err) {
		ft_msg_err("cannot write trace file ", s->part, err);
		close(fd);
		unlink(s->part);
		return err;
	}
	s->end += s->maps_len;
	s->fd = fd;
	ft_fd_remember(fd, &s->fd_id);
	s->nreg = 0;
	s->nthreads = 0;
	s->lost_exited = s->lost_depth_exited = 0;
	s->gen++;
	s->finished = 0;
	s->finisher = 0;
	lim.start_ms = run_start_ms();
	lim.fired = 0;
	__atomic_store_n(&s->state, FT_SESS_LIVE, __ATOMIC_RELEASE);
	err = writer_start();
	__atomic_store_n(&writerless, err != 0, __ATOMIC_RELEASE);
	if (err) {
		/* no thread can be made (RLIMIT_NPROC, a container's pids limit): the blocks
		   stay in memory and the finish writes them, what does not fit counted lost */
		ft_msg_err("cannot start the trace writer thread", NULL, err);
		ft_msg("the trace is kept in each thread's buffer and written at exit; what does "
		       "not fit is counted as lost", NULL);
	}
	return 0;
}

/* ---- per-thread buffers ---- */

static struct ft_thread *thread_buf_slow(void);

/*
 * Slow path of the first event of a thread. Async-signal-safe. The program's errno is
 * kept: this runs inside whatever traced function the thread was entering.
 */
struct ft_thread *ft_thread_buf(void)
{
	int saved_errno = errno;
	struct ft_thread *t = thread_buf_slow();

	errno = saved_errno;
	return t;
}

/*
 * A thread buffer of the current mode (under the session lock): a free one of its size,
 * else a new mapping.  Free ones of another size (made before a live `ring` change) are
 * unmapped on the way.
 */
static struct ft_tbuf *tbuf_get(void)
{
	struct ft_tbuf *tb;
	char *p;

	while ((tb = tbuf_free) != NULL && tb->bytes != cfg.tbuf_bytes) {
		tbuf_free = tb->next_free;
		munmap(tb, tb->bytes);
	}
	if (tb) {
		tbuf_free = tb->next_free;
	} else {
		p = mmap(NULL, cfg.tbuf_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		tb = (struct ft_tbuf *)p;
		tb->bytes = cfg.tbuf_bytes;
		tb->nblk = cfg.nblk;
		tb->stride = cfg.stride;
		tb->blocks_at = p + cfg.tbuf_bytes - cfg.nblk * cfg.stride;
	}
	tb->ring = (uint32_t)cfg.ring;
	tb->cfg_gen = cfg.gen;
	tb->retired = 0;
	tb->exited = tb->announced = 0;
	tb->lost = tb->lost_depth = tb->seq_next = tb->wseq = tb->blocks = tb->clear_seq = 0;
	tb->dropped = 0;
	tb->next_free = NULL;
	for (uint32_t i = 0; i < tb->nblk; i++) {
		struct ft_blk *b = (struct ft_blk *)(tb->blocks_at + i * tb->stride);

		b->state = FT_BLK_FREE;
		b->hdr.seq = ~0ULL;
	}
	return tb;
}

/* An exited thread's buffers are written: keep them for the next thread (never unmapped). */
static void tbuf_release(struct ft_tbuf *tb)
{
	tb->next_free = tbuf_free;
	tbuf_free = tb;
}

static struct ft_rframe *tbuf_rs(struct ft_tbuf *tb)
{
	return (struct ft_rframe *)((char *)tb + ROUND_UP(sizeof(*tb), PAGE));
}

/* The FUNC_AGAIN pair cache after the open frames, then ENTRY_AGAIN's, then the deferred calls. */
static struct ftkit_pair *tbuf_pairs(struct ft_tbuf *tb)
{
	return (struct ftkit_pair *)((char *)tbuf_rs(tb) +
				     ROUND_UP(FT_MAXOPEN * sizeof(struct ft_rframe), PAGE));
}

static uint64_t *tbuf_entries(struct ft_tbuf *tb)
{
	return (uint64_t *)(tbuf_pairs(tb) + FTKIT_PAIR_SLOTS);
}

static struct ft_defer *tbuf_defer(struct ft_tbuf *tb)
{
	return (struct ft_defer *)(tbuf_entries(tb) + FTKIT_PAIR_SLOTS);
}

static char *tbuf_defer_data(struct ft_tbuf *tb)
{
	return (char *)(tbuf_defer(tb) + FT_DEFER);
}

/* t records into tb from now on (NULL: no buffer): the pointers into it. */
static void thread_use(struct ft_thread *t, struct ft_tbuf *tb)
{
	t->tb = tb;
	t->rs = tb ? tbuf_rs(tb) : NULL;
	t->pairs = tb ? tbuf_pairs(tb) : NULL;
	t->entries = tb ? tbuf_entries(tb) : NULL;
	t->defer = tb ? tbuf_defer(tb) : NULL;
	t->defer_data = tb ? tbuf_defer_data(tb) : NULL;
}

static struct ft_thread *thread_buf_slow(void)
{
	struct ft_thread *t = &ft_cur;
	struct ft_session *s = &ft_sess;
	struct ft_tbuf *tb;
	uint64_t slot;

	if (t->state == FT_THREAD_LIVE && t->gen == s->gen)
		return t;
	if (t->busy || t->state == FT_THREAD_DEAD ||
	    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE) {
		__atomic_fetch_add(&s->hdr.lost_nobuf, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (t->state == FT_THREAD_NOBUF && t->gen == s->gen) {
		__atomic_fetch_add(&s->hdr.lost_nobuf, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	t->busy = 1;
	barrier();
	lock_get();
	if (s->state != FT_SESS_LIVE || !(tb = tbuf_get())) {
		lock_put();
		goto fail;
	}
	for (slot = 0; slot < s->nreg && s->reg[slot]; slot++)
		;
	if (slot >= FT_MAX_REG) {
		tbuf_release(tb);
		lock_put();
		goto fail;
	}
	tb->tid = (uint32_t)syscall(SYS_gettid);
	memset(tb->name, 0, sizeof(tb->name));
	prctl(PR_GET_NAME, tb->name);
	ft_fix_comm(tb->name);
	__atomic_store_n(&s->reg[slot], tb, __ATOMIC_RELEASE);
	if (slot == s->nreg)
		__atomic_store_n(&s->nreg, slot + 1, __ATOMIC_RELEASE);
	s->nthreads++;
	lock_put();

	thread_use(t, tb);
	t->blk = NULL;
	t->wp = t->wend = t->data = NULL;
	t->lost_pending = 0;
	t->need_depth = 0;
	t->open = 0;
	t->npend = 0;
	t->gen = s->gen;
	t->reg = slot;
	barrier();
	t->state = FT_THREAD_LIVE;
	if (exit_key_ok)
		pthread_setspecific(exit_key, (void *)1);
	t->busy = 0;
	return t;
fail:
	t->state = FT_THREAD_NOBUF;
	t->gen = s->gen;
	t->busy = 0;
	__atomic_fetch_add(&s->hdr.lost_nobuf, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Hand the block being filled to the writer (FULL); the thread has no block then. */
static void blk_close(struct ft_thread *t)
{
	if (t->blk) {
		__atomic_store_n(&t->blk->state, FT_BLK_FULL, __ATOMIC_RELEASE);
		t->blk = NULL;
	}
	t->wp = t->wend = t->data = NULL;
}

/*
 * Start the thread's next block, its header carrying the open recorded frames.  0 if
 * there is none free (the writer is behind) and events are to be dropped.
 */
static int blk_open(struct ft_thread *t, uint64_t ts, uint64_t ip, uint64_t parent)
{
	struct ft_tbuf *tb = t->tb;
	uint64_t seq = tb->seq_next;
	struct ft_blk *b = ft_tbuf_blk(tb, seq);
	uint32_t depth = t->open;
	int werr;

	/* the writer's write error, said by a thread of the program (the writer's table has
	   no stderr) soon after, not at finish only: the program may close stderr first */
	if (unlikely(__atomic_load_n(&write_err_later, __ATOMIC_RELAXED)) &&
	    (werr = __atomic_exchange_n(&write_err_later, 0, __ATOMIC_ACQ_REL)))
		say_write_error(werr);

	while (!tb->ring && __atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != FT_BLK_FREE) {
		struct timespec w = { 0, 50000 };

		if (!no_loss_waits())
			return 0;
		nanosleep(&w, NULL);	/* --no-loss: the thread waits for the writer */
	}
	if (depth > FT_MAXOPEN)
		depth = FT_MAXOPEN;
	memset(&b->hdr, 0, sizeof(b->hdr));
	b->hdr.seq = seq;
	b->hdr.tid = tb->tid;
	b->hdr.flags = tb->ring ? FTKIT_B_RING : 0;
	b->hdr.base_ts = ts;
	b->hdr.lost = t->lost_pending;
	b->hdr.depth = depth;
	b->hdr.ip_hi = ip ? (uint32_t)(ip >> 32) : t->ip_hi;
	b->hdr.parent_hi = parent ? (uint32_t)(parent >> 32) : t->parent_hi;
	for (uint32_t i = 0; i < depth; i++) {
		b->frames[i].ip = t->rs[i].ip;
		b->frames[i].entry_ts = t->rs[i].ts;
	}
	b->pub = 0;
	b->written = 0;
	t->data = (uint32_t *)&b->frames[depth];
	/* readers start each block so */
	memset(t->pairs, 0, FTKIT_PAIR_SLOTS * sizeof(*t->pairs));
	memset(t->entries, 0, FTKIT_PAIR_SLOTS * sizeof(*t->entries));
	t->wp = t->data;
	t->wend = t->data + cfg.block_size / 4;
	t->last_ts = ts;
	t->ip_hi = b->hdr.ip_hi;
	t->parent_hi = b->hdr.parent_hi;
	t->lost_pending = 0;
	t->need_depth = 0;	/* the header has the frames still open */
	t->blk = b;
	__atomic_store_n(&b->state, FT_BLK_FILL, __ATOMIC_RELEASE);
	__atomic_store_n(&tb->seq_next, seq + 1, __ATOMIC_RELEASE);
	return 1;
}

/*
 * The buffer mode changed (live `ring`): the thread goes on in a buffer of the new mode,
 * numbering its blocks on from the old one's and carrying its counts and open frames.
 * The old buffer is retired: the writer writes what it holds as it would for a thread
 * that exited (a stream's unwritten blocks, a ring's newest), then reuses it.  Called
 * between blocks (t->blk NULL: a signal handler's events meanwhile are dropped, and its
 * graph entries do not touch t->rs).  On failure the thread keeps its buffer.
 */
static void rebuffer(struct ft_thread *t)
{
	struct ft_session *s = &ft_sess;
	struct ft_tbuf *old = t->tb, *tb;
	uint64_t slot;
	uint32_t open = t->open + t->npend < FT_MAXOPEN ? t->open + t->npend : FT_MAXOPEN;

	lock_get();
	if (s->state != FT_SESS_LIVE || old->cfg_gen == cfg.gen) {
		lock_put();
		return;
	}
	tb = tbuf_get();
	for (slot = 0; tb && slot < s->nreg && s->reg[slot]; slot++)
		;
	if (!tb || slot >= FT_MAX_REG) {
		if (tb)
			tbuf_release(tb);
		old->cfg_gen = cfg.gen;	/* not again until the next change */
		lock_put();
		return;
	}
	tb->tid = old->tid;
	memcpy(tb->name, old->name, sizeof(tb->name));
	tb->seq_next = tb->wseq = old->seq_next;
	tb->clear_seq = old->clear_seq;
	tb->dropped = old->dropped;
	tb->lost = __atomic_load_n(&old->lost, __ATOMIC_RELAXED);
	tb->lost_depth = __atomic_load_n(&old->lost_depth, __ATOMIC_RELAXED);
	memcpy(tbuf_rs(tb), t->rs, open * sizeof(struct ft_rframe));
	__atomic_store_n(&s->reg[slot], tb, __ATOMIC_RELEASE);
	if (slot == s->nreg)
		__atomic_store_n(&s->nreg, slot + 1, __ATOMIC_RELEASE);
	old->retired = 1;
	__atomic_store_n(&old->exited, 1, __ATOMIC_RELEASE);
	thread_use(t, tb);
	t->reg = slot;
	lock_put();
}

void ft_session_set_tracer(uint32_t tracer)
{
	if (tracer == FTKIT_TRACER_NONE)
		return;
	ft_sess.tracer_now = tracer;
	__atomic_fetch_or(&ft_sess.hdr.tracer, tracer, __ATOMIC_RELAXED);
}

/*
 * Live `ring`: thread buffers made from now on keep the newest bytes (per thread) of
 * events, overwriting the oldest (bytes > 0), or stream every event (0).  Each thread
 * moves to a buffer of the new mode when it next starts a block.
 */
int ft_session_set_ring(uint64_t bytes)
{
	struct ft_session *s = &ft_sess;
	int err = 0;

	lock_get();
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE)
		err = -ENODEV;
	else if (!bytes ? cfg.ring : !cfg.ring || ring_blocks(bytes) != cfg.nblk)
		set_mode(bytes != 0, bytes);
	lock_put();
	return err;
}

/* "ring <bytes>" or "stream", for the status line. */
void ft_session_mode(char *buf, size_t len)
{
	if (cfg.ring)
		snprintf(buf, len, "ring:%llu", (unsigned long long)cfg.nblk * cfg.block_size);
	else
		snprintf(buf, len, "stream");
}

static void ev_lost(struct ft_thread *t)
{
	t->lost_pending++;
	__atomic_fetch_add(&t->tb->lost, 1, __ATOMIC_RELAXED);
}

void ft_ev_lost_n(struct ft_thread *t, unsigned n)
{
	if (t->state != FT_THREAD_LIVE || !n)
		return;
	t->lost_pending += n;
	__atomic_fetch_add(&t->tb->lost, n, __ATOMIC_RELAXED);
}

/* The slow paths' end: release the writer and write what signal handlers kept meanwhile. */
static void release_drain(struct ft_thread *t)
{
	ft_ev_release(t);
	if (ft_ev_deferred(t))
		ft_ev_drain(t);
}

/*
 * --no-loss: wait for the writer to free the thread's next block before the writer is
 * held, so that a signal handler's events meanwhile go their normal way (it may wait as
 * well, and take the block) instead of being kept or lost for the whole wait.  Everything
 * is read again each round: the handler may have moved on to another block.
 */
static void wait_room(struct ft_thread *t, unsigned words)
{
	struct timespec w = { 0, 50000 };
	struct ft_tbuf *tb;
	int saved_errno = errno;	/* nanosleep's EINTR is not the program's */

	while (cfg.no_loss && (tb = t->tb) && !tb->ring && (!t->blk || t->wp + words > t->wend) &&
	       __atomic_load_n(&ft_tbuf_blk(tb, tb->seq_next)->state, __ATOMIC_ACQUIRE) != FT_BLK_FREE &&
	       no_loss_waits())
		nanosleep(&w, NULL);
	errno = saved_errno;
}

/* Keep a signal handler's EXT record made while the thread's writer is held (ft_ev_drain). */
static int ext_defer(struct ft_thread *t, uint32_t sub, uint32_t arg, uint64_t ts,
		     const void *data, size_t len)
{
	uint32_t at, i, sz = (uint32_t)ROUND_UP(len, 8UL);

	if (!t->defer || len > FT_DEFER_DATA)
		return -EBUSY;
	at = __atomic_fetch_add(&t->defer_bytes, sz, __ATOMIC_RELAXED);	/* handlers nest */
	if (at + sz > FT_DEFER_DATA)
		return -EBUSY;
	memcpy(t->defer_data + at, data, len);
	i = __atomic_fetch_add(&t->ndefer, 1, __ATOMIC_RELAXED);
	if (i >= FT_DEFER)
		return -EBUSY;
	t->defer[i].ip = 0;
	t->defer[i].parent = sub | (uint64_t)arg << 8 | (uint64_t)at << 24 | (uint64_t)len << 40;
	t->defer[i].ts = ts;
	t->ext_kept = 1;
	return 0;
}

/*
 * An EXT record of n words (payload: u64 time, then data of len bytes) in the stream: a
 * program's marker, a trigger's stack trace, a call's values.  0, -EBUSY (re-entered from
 * a signal handler on this thread), -ENOSPC (no free block).  Not an event: a record
 * dropped is not counted with the lost events (the calls around it are).
 */
int ft_ev_ext(struct ft_thread *t, uint32_t sub, uint32_t arg, uint64_t ts, const void *data,
	      size_t len)
{
	uint32_t n, *p;
	int saved_errno, err = 0;

	n = 3 + (uint32_t)(len + 3) / 4;	/* EXT word, u64 time, data words */
	if (t->busy || t->state != FT_THREAD_LIVE) {
		/* a signal handler's marker or stack trace: kept for ft_ev_drain */
		if (t->busy && t->state == FT_THREAD_LIVE &&
		    (sub == FTKIT_EXT_MARKER || sub == FTKIT_EXT_STACK))
			return ext_defer(t, sub, arg, ts, data, len);
		return -EBUSY;
	}
	if (ft_ev_deferred(t))
		ft_ev_drain(t);	/* what handlers made before this is written before it */
	wait_room(t, n);
	t->busy = 1;
	barrier();
	saved_errno = errno;
	if (!t->blk || t->wp + n > t->wend) {
		blk_close(t);
		if (unlikely(t->tb->cfg_gen != __atomic_load_n(&cfg.gen, __ATOMIC_RELAXED)))
			rebuffer(t);
		if (!blk_open(t, ts, 0, 0)) {
			err = -ENOSPC;
			goto out;
		}
	}
	p = t->wp;
	t->wp = p + n;
	barrier();
	p[0] = ftkit_ext(sub, n - 1, arg);
	p[1] = (uint32_t)ts;
	p[2] = (uint32_t)(ts >> 32);
	p[n - 1] = 0;		/* the data's padding */
	memcpy(p + 3, data, len);
	ft_ev_publish(t, p + n);
out:
	errno = saved_errno;
	release_drain(t);
	return err;
}

int ft_ev_marker(struct ft_thread *t, uint64_t ts, const char *text, size_t len)
{
	if (len > FT_MARKER_MAX)
		len = FT_MARKER_MAX;
	return ft_ev_ext(t, FTKIT_EXT_MARKER, (uint32_t)len, ts, text, len);
}

int ft_ev_stack(struct ft_thread *t, uint64_t ts, const uint64_t *pcs, unsigned n)
{
	if (n > FT_STACK_MAX)
		n = FT_STACK_MAX;
	return ft_ev_ext(t, FTKIT_EXT_STACK, n, ts, pcs, n * sizeof(*pcs));
}

/* Keep a signal handler's call made while the thread's writer is held (ft_ev_release). */
static int ev_defer(struct ft_thread *t, uint64_t ip, uint64_t parent, uint64_t ts)
{
	uint32_t i;

	if (!t->defer)
		return 0;
	i = __atomic_fetch_add(&t->ndefer, 1, __ATOMIC_RELAXED);	/* one instruction: handlers nest */
	if (i >= FT_DEFER)
		return 0;
	t->defer[i].ip = ip;
	t->defer[i].parent = parent;
	t->defer[i].ts = ts;
	return 1;
}

/*
 * Write the calls signal handlers made while the writer was held, after the event they
 * interrupted.  Every handler that took a slot has filled it and returned by now; one that
 * lands meanwhile takes the next slot (the loop goes on until none is left) or, outside a
 * hold, writes its own events at once.  A drain already running further out does the work.
 */
void ft_ev_drain(struct ft_thread *t)
{
	uint32_t i = 0, raw, n;

	if (t->draining || !t->defer)
		return;
	t->draining = 1;
	t->ext_kept = 0;	/* the events written below may go the fast way */
	barrier();
	for (;;) {
		raw = __atomic_load_n(&t->ndefer, __ATOMIC_RELAXED);
		n = raw < FT_DEFER ? raw : FT_DEFER;	/* those past FT_DEFER were counted lost */
		for (; i < n; i++) {
			const struct ft_defer *d = &t->defer[i];

			if (d->ip) {
				ft_ev_func(t, d->ip, d->parent, d->ts);
			} else {
				ft_ev_ext(t, d->parent & 0xff, d->parent >> 8 & 0xffff, d->ts,
					  t->defer_data + (d->parent >> 24 & 0xffff), d->parent >> 40);
			}
		}
		if (__atomic_compare_exchange_n(&t->ndefer, &raw, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	t->defer_bytes = t->ext_kept = 0;	/* none is kept outside a hold, and none is held now */
	barrier();
	t->draining = 0;
}

void ft_ev_slow(struct ft_thread *t, uint32_t type, uint64_t ip, uint64_t aux, uint64_t ts)
{
	uint32_t w[12], *p;
	unsigned n = 0;
	uint64_t d;
	int saved_errno;

	if (t->busy || t->state != FT_THREAD_LIVE) {
		/* a signal handler inside a writer: its call is kept for later, else lost */
		if (t->state == FT_THREAD_LIVE && !(t->busy && type == FTKIT_EV_FUNC && ev_defer(t, ip, aux, ts)))
			ev_lost(t);
		return;
	}
	if (ft_ev_deferred(t))
		ft_ev_drain(t);	/* what handlers made before this is written before it */
	wait_room(t, 11);
	t->busy = 1;
	barrier();
	saved_errno = errno;
	/* room for the longest sequence below */
	if (!t->blk || t->wp + 11 > t->wend) {
		blk_close(t);
		if (unlikely(t->tb->cfg_gen != __atomic_load_n(&cfg.gen, __ATOMIC_RELAXED)))
			rebuffer(t);
		if (!blk_open(t, ts, type == FTKIT_EV_EXIT || type == FTKIT_EV_EXIT_UNWOUND ? 0 : ip,
			      type == FTKIT_EV_FUNC ? aux : 0)) {
			ev_lost(t);
			goto out;
		}
	}
	if (t->need_depth) {
		w[n++] = ftkit_ext(FTKIT_EXT_DEPTH, 0, t->need_depth - 1);
		t->need_depth = 0;
	}
	d = ts - t->last_ts;
	if (d >= FTKIT_DELTA_MAX) {
		w[n++] = ftkit_ext(FTKIT_EXT_TIME, 2, 0);
		w[n++] = (uint32_t)ts;
		w[n++] = (uint32_t)(ts >> 32);
		d = 0;
	}
	if (type != FTKIT_EV_EXIT && type != FTKIT_EV_EXIT_UNWOUND && (uint32_t)(ip >> 32) != t->ip_hi) {
		t->ip_hi = (uint32_t)(ip >> 32);
		w[n++] = ftkit_ext(FTKIT_EXT_IP_HI, 1, 0);
		w[n++] = t->ip_hi;
	}
	if (type == FTKIT_EV_FUNC && (uint32_t)(aux >> 32) != t->parent_hi) {
		t->parent_hi = (uint32_t)(aux >> 32);
		w[n++] = ftkit_ext(FTKIT_EXT_PARENT_HI, 1, 0);
		w[n++] = t->parent_hi;
	}
	w[n++] = type | (uint32_t)d << 3;
	if (type == FTKIT_EV_ENTRY || type == FTKIT_EV_FUNC)
		w[n++] = (uint32_t)ip;
	if (type == FTKIT_EV_ENTRY)
		ft_entry_store(&t->entries[ftkit_entry_slot(ip)], ip);
	if (type == FTKIT_EV_FUNC) {
		w[n++] = (uint32_t)aux;
		ft_pair_store(&t->pairs[ftkit_pair_slot(ip, aux)], ip, aux);
	}
	p = t->wp;
	t->wp = p + n;
	barrier();
	t->last_ts = ts;
	memcpy(p, w, n * sizeof(w[0]));
	ft_ev_publish(t, p + n);
out:
	errno = saved_errno;
	release_drain(t);
}

void ft_note_lost_depth(void)
{
	struct ft_thread *t = &ft_cur;

	if (t->state == FT_THREAD_LIVE && t->gen == ft_sess.gen)
		__atomic_fetch_add(&t->tb->lost_depth, 1, __ATOMIC_RELAXED);
}

/* Thread-exit hook (pthread key destructor): the last block goes to the writer. */
void ft_thread_exit(void)
{
	struct ft_thread *t = &ft_cur;
	struct ft_session *s = &ft_sess;

	if (ft_ev_deferred(t))
		ft_ev_drain(t);	/* a signal handler's calls kept at the thread's last event */
	fgraph_close_all();	/* recorded while the buffer is still there */
	if (t->state == FT_THREAD_LIVE && t->gen == s->gen) {
		struct ft_tbuf *tb = t->tb;

		t->state = FT_THREAD_DEAD;
		barrier();
		if (t->blk && !t->blk->pub && !t->blk->hdr.lost) {
			/* an empty block is given back, not written */
			__atomic_store_n(&tb->seq_next, tb->seq_next - 1, __ATOMIC_RELEASE);
			__atomic_store_n(&t->blk->state, FT_BLK_FREE, __ATOMIC_RELEASE);
			t->blk = NULL;
		} else if (t->lost_pending && !t->blk && !t->busy) {
			/* a last block, if one is free: it closes the frames whose exits were
			   dropped and carries the count (the THREAD chunk has it anyway) */
			t->busy = 1;
			barrier();
			blk_open(t, ft_clock_read(), 0, 0);
			t->busy = 0;
		}
		blk_close(t);
		read_comm((pid_t)tb->tid, tb->name);
		__atomic_store_n(&tb->exited, 1, __ATOMIC_RELEASE);
		thread_use(t, NULL);
	}
	t->state = FT_THREAD_DEAD;
	if (t->pv) {
		munmap(t->pv, FT_PV_WORDS * 4);
		t->pv = NULL;
	}
	fgraph_thread_release();
}

/* Sum of lost events and frames over all threads; number of threads. */
void ft_session_counts(uint64_t *lost, uint64_t *depth, uint64_t *threads)
{
	struct ft_session *s = &ft_sess;
	uint64_t n = __atomic_load_n(&s->nreg, __ATOMIC_ACQUIRE);
	uint64_t l = __atomic_load_n(&s->lost_exited, __ATOMIC_RELAXED) + s->hdr.lost_nobuf;
	uint64_t d = __atomic_load_n(&s->lost_depth_exited, __ATOMIC_RELAXED);

	for (uint64_t i = 0; i < n && i < FT_MAX_REG; i++) {
		struct ft_tbuf *tb = __atomic_load_n(&s->reg[i], __ATOMIC_ACQUIRE);

		if (tb) {
			l += __atomic_load_n(&tb->lost, __ATOMIC_RELAXED);
			d += __atomic_load_n(&tb->lost_depth, __ATOMIC_RELAXED);
		}
	}
	*lost = l;
	*depth = d;
	*threads = s->nthreads;
}

/*
 * Live `clear`: every thread's blocks but the one it is filling are dropped, not written
 * (they are not counted lost: the user asked).  The thread keeps recording.
 */
int ft_session_clear(void)
{
	struct ft_session *s = &ft_sess;

	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE)
		return -ENODEV;
	lock_get();
	for (uint64_t i = 0; i < s->nreg && i < FT_MAX_REG; i++) {
		struct ft_tbuf *tb = s->reg[i];
		uint64_t next;

		if (!tb)
			continue;
		next = __atomic_load_n(&tb->seq_next, __ATOMIC_ACQUIRE);
		tb->clear_seq = next ? next - 1 : 0;
	}
	lock_put();
	return 0;
}

/*
 * Every thread's blocks not yet in the file (unless !events) and its THREAD chunk, at *off
 * of fd.  more: see batch_pending.
 */
static void batch_all(struct ft_batch *bt, int names, int more, int events)
{
	struct ft_session *s = &ft_sess;
	uint64_t n = __atomic_load_n(&s->nreg, __ATOMIC_ACQUIRE);

	for (uint64_t i = 0; i < n && i < FT_MAX_REG; i++) {
		struct ft_tbuf *tb = __atomic_load_n(&s->reg[i], __ATOMIC_ACQUIRE);

		if (!tb)
			continue;
		if (events)
			batch_pending(bt, tb, more);
		if (tb->retired)
			continue;	/* its thread's facts come with its current buffer */
		if (names && !tb->exited)
			read_comm((pid_t)tb->tid, tb->name);
		batch_thread(bt, tb, __atomic_load_n(&tb->exited, __ATOMIC_ACQUIRE), FT_DONE_NONE);
	}
}

/*
 * From an empty batch: batch_all's chunks (its arguments), then the memory map, written;
 * the error.  With !events: the thread tables and the map alone (the events could not all
 * be written).
 */
static int batch_write(struct ft_batch *bt, int names, int more, int events, const char *maps,
		       size_t maps_len)
{
	bt->err = 0;
	bt->n = bt->niov = 0;
	bt->bytes = 0;
	batch_all(bt, names, more, events);
	if (maps && maps_len)
		batch_raw(bt, maps, maps_len);
	batch_flush(bt);
	return bt->err;
}

/*
 * The last chunks did not fit (a file-size limit, a full disk): the file was cut back to
 * its last whole chunk (batch_flush).  Finish it with the tables alone, the events still
 * in memory counted lost; if even they do not fit, cut the file back one written chunk at
 * a time (its events lost too: their blocks show as missing) until they do.  0 when the
 * file could be finished.
 */
static int finish_smaller(struct ft_batch *bt, const char *maps, size_t maps_len)
{
	struct ft_session *s = &ft_sess;
	uint64_t at = s->end;	/* where the tables were tried */
	int err = batch_write(bt, 0, 0, 0, maps, maps_len);

	while (err) {
		uint64_t to = 0;
		int fd = sess_fd(s->fd);

		/* the newest chunk start before them (a failed try may have left cut points after) */
		for (int k = ncut - 1; k >= 0 && !to; k--)
			if (cut_at[k] < at)
				to = cut_at[k];
		if (!to || fd < 0 || ftruncate(fd, (off_t)to))
			break;
		s->end = at = to;
		err = batch_write(bt, 0, 0, 0, maps, maps_len);
	}
	return err;
}

/* ft_session_discard_if_empty() (trace_buf.h) was called: see ft_session_finish() */
static int discard_empty;

void ft_session_discard_if_empty(void)
{
	discard_empty = 1;
}

/*
 * Finalise the trace file: every thread's remaining blocks, THREAD chunks, the last MAPS
 * chunk, header, rename to the output name.  in_signal: only async-signal-safe calls (the
 * MAPS image from the last build).  SIGXFSZ is blocked around each write (xfsz_guard): a
 * file-size limit must not kill the program here.
 */
/*
 * Another thread is finishing the session: wait (up to 5 s) until its file is written, so
 * that this one, about to end the process (a second terminating signal — timeout(1) signals
 * the child and then its group —, _exit, exit), does not cut the write short and leave a
 * .part.  Not on the finishing thread itself (a signal taken while it finishes).
 * Async-signal-safe.
 */
void ft_session_wait_finished(void)
{
	struct ft_session *s = &ft_sess;

	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_DONE ||
	    __atomic_load_n(&s->finisher, __ATOMIC_ACQUIRE) == (pid_t)syscall(SYS_gettid))
		return;
	for (int i = 0; i < 5000 && !__atomic_load_n(&s->finished, __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
}

int ft_session_finish(int reason, int sig, int in_signal)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header *h = &s->hdr;
	struct ft_batch *bt = &final_bt;
	uint64_t lost, depth, nthr;
	int locked, err = 0, wr;

	if (!__atomic_compare_exchange_n(&s->state, &(int){ FT_SESS_LIVE }, FT_SESS_DONE, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		ft_session_wait_finished();
		return -EALREADY;
	}
	__atomic_store_n(&s->finisher, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (!in_signal)
		ft_maps_build(0, 0);
	/* the writer may be in a write (it stops at its next pass); a signal may have
	   interrupted a buffer allocation on this very thread */
	locked = in_signal ? lock_try(1 << 24) : (lock_get(), 1);

	if (__atomic_load_n(&snap_tmp_live, __ATOMIC_ACQUIRE))
		unlink(snap_tmp);	/* a snapshot being written: the process is ending */
	ft_clock_recalibrate(&s->clk);
	h->ns_per_tick = s->clk.ns_per_tick;
	h->tsc_hz = s->clk.tsc_hz;
	h->end_ticks = ft_clock_read();
	h->reason = (uint32_t)reason;
	h->signal = (uint32_t)sig;
	h->flags |= FTKIT_F_COMPLETE;
	if (reason == FTKIT_R_SIGNAL)
		h->flags |= FTKIT_F_ABNORMAL;
	/* first: it may reopen the trace file (sess_fd), whose descriptor the batch takes */
	if (locked && !in_signal)
		cmdline_update(s);
	bt->fd = s->fd;
	bt->off = &s->end;
	{
		const char *m = __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE);
		size_t ml = __atomic_load_n(&s->maps_len, __ATOMIC_ACQUIRE);

		if (m && ml)
			((struct ftkit_maps_chunk *)m)->ts = h->end_ticks;
		err = batch_write(bt, 1, locked, 1, m, ml);
		if (err == -EFBIG || err == -ENOSPC || err == -EDQUOT)
			err = finish_smaller(bt, m, ml);
	}
	if ((wr = __atomic_exchange_n(&write_err_later, 0, __ATOMIC_ACQ_REL)))
		say_write_error(wr);
	ft_session_counts(&lost, &depth, &nthr);
	if (lost + depth)
		h->flags |= FTKIT_F_LOST;
	/* the last chunks did not all reach the file: it stays .part and not complete */
	if (err)
		h->flags &= ~FTKIT_F_COMPLETE;
	if (write_all(s->fd, h, sizeof(*h), 0) != 0 && !err)
		err = -EIO;
	/*
	 * Complete, but it cannot take its name (a process that dropped privileges after its
	 * file was made: nginx's workers in a directory of root's): the whole trace, at .part.
	 * An attach's trace that no thread recorded into is removed at the end of the process
	 * (the haproxy trial left one per `status`; a `finish` asked for keeps it).
	 */
	if (!err && discard_empty && (reason == FTKIT_R_EXIT || reason == FTKIT_R_SIGNAL) &&
	    !__atomic_load_n(&s->nreg, __ATOMIC_ACQUIRE) && !h->lost_nobuf)
		unlink(s->part);
	else if (!err && (wr = rename_output(s->part, s->final)))
		ft_msg_err("the trace is complete but stays at ", s->part, wr);
	if (locked)
		lock_put();
	if (err)
		ft_msg_err("cannot finalise trace file ", s->part, err);
	__atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
	return err;
}

void ft_session_release(void)
{
	struct ft_session *s = &ft_sess;

	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_DONE || s->fd < 0)
		return;
	lock_get();	/* the writer's last pass is over */
	ft_fd_close_same(s->fd, &s->fd_id);
	s->fd = -1;
	lock_put();
}

/* ---- snapshots ---- */

static int copy_range(int in, int out, uint64_t from, uint64_t len, uint64_t to)
{
	static char buf[65536];
	int err;

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		err = read_all(in, buf, n, (off_t)from);
		if (!err)
			err = write_all(out, buf, n, (off_t)to);
		if (err)
			return err;
		from += n;
		to += n;
		len -= n;
	}
	return 0;
}

static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned snap_seq;
static struct ft_batch snap_bt;

/*
 * Write a copy of the trace as it is now: the file so far, then what the threads hold
 * (blocks not yet written, the ones being filled as PARTIAL, the rings), THREAD chunks,
 * MAPS.  path NULL → <output>.snap.<n>.  Also the live `dump` of a flight recorder.
 */
int ft_session_snapshot(const char *path, char *out, size_t outlen)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header h;
	char final[PATH_MAX + 32] = "", tmp[PATH_MAX + 64];
	uint64_t end0, end, o, lost, depth, nthr;
	struct ft_batch *bt = &snap_bt;
	int fd, err = 0;

	if (out && outlen)
		out[0] = 0;
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE)
		return -ENODEV;
	pthread_mutex_lock(&snap_mu);
	if (path && *path)
		ft_strlcpy(final, path, sizeof(final));
	else if (snprintf(final, sizeof(final), "%s.snap.%u", s->final, ++snap_seq) >=
		 (int)sizeof(final))
		err = -ENAMETOOLONG;
	if (!err && snprintf(tmp, sizeof(tmp), "%s.tmp.%d", final, (int)getpid()) >= (int)sizeof(tmp))
		err = -ENAMETOOLONG;
	if (err)
		goto out;
	fd = ft_fd_high(create_private(tmp));
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	ft_strlcpy(snap_tmp, tmp, sizeof(snap_tmp));
	__atomic_store_n(&snap_tmp_live, 1, __ATOMIC_RELEASE);
	ft_maps_build(0, 0);
	/* the file is append-only: what is below its end now does not change */
	lock_get();
	end0 = s->end;
	lock_put();
	err = copy_range(s->fd, fd, sizeof(h), end0 - sizeof(h), sizeof(h));
	lock_get();	/* the writer waits: nothing is written twice or missed */
	end = s->end;
	if (!err)
		err = copy_range(s->fd, fd, end0, end - end0, end0);
	o = end;
	if (!err) {
		const char *m = __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE);
		size_t ml = __atomic_load_n(&s->maps_len, __ATOMIC_ACQUIRE);
		bt->fd = fd;
		bt->off = &o;
		/* the threads' names now, as finalisation gives them: a thread may have been
		   renamed since it started (redis's bio threads) */
		err = batch_write(bt, 1, 0, 1, m, ml);
	}
	lock_put();
	h = s->hdr;
	{
		/* the rate over the run so far (from the fields finalisation never changes) */
		struct ft_clock_ref c = { .source = s->clk.source, .ref_ticks = s->clk.ref_ticks,
					  .ref_mono_ns = s->clk.ref_mono_ns };

		ft_clock_recalibrate(&c);
		if (c.cal_ns) {
			h.ns_per_tick = c.ns_per_tick;
			h.tsc_hz = c.tsc_hz;
		}
	}
	h.end_ticks = ft_clock_read();
	h.flags |= FTKIT_F_COMPLETE | FTKIT_F_SNAPSHOT;
	h.reason = FTKIT_R_SNAPSHOT;
	ft_session_counts(&lost, &depth, &nthr);
	if (lost + depth)
		h.flags |= FTKIT_F_LOST;
	if (!err)
		err = write_all(fd, &h, sizeof(h), 0);
	close(fd);
	__atomic_store_n(&snap_tmp_live, 0, __ATOMIC_RELEASE);
	if (!err)
		err = rename_output(tmp, final);
	if (err)
		unlink(tmp);
out:
	/* the path also on failure: a worker that dropped root cannot write beside a trace
	   made in root's directory, and the caller says where it tried (the nginx trial) */
	if (out)
		ft_strlcpy(out, final, outlen);
	pthread_mutex_unlock(&snap_mu);
	return err;
}

/* A fork child of a process without a tracer: its trace opens when it gets one. */
static int fork_deferred;

int ft_session_fork_open(uint32_t tracer)
{
	struct ft_session *s = &ft_sess;

	if (!fork_deferred || tracer == FTKIT_TRACER_NONE)
		return 0;
	fork_deferred = 0;
	return ft_session_open(NULL, 0, tracer, s->hdr.graph_depth, 0, 1);
}

/*
 * A fork child's copy of the forking thread's buffer.  fork() may have been called by a
 * signal handler that interrupted this thread inside the runtime (holding its writer,
 * between an event and its frame, waiting for room): once the handler returns, that code
 * goes on with the pointers it holds.  So the buffer stays mapped, never reused, and the
 * thread keeps pointing into it until its next event takes a new one; what is written
 * there is nobody's.  Its pages after the header become fresh zero pages: the child would
 * otherwise keep the parent's copies of them as the parent goes on writing.  (Unmapped,
 * the child died of SIGSEGV in 25 to 67 of 100 such forks: TestTracerSignalFork.)
 */
static void tbuf_orphan(struct ft_tbuf *tb)
{
	uintptr_t pg = getauxval(AT_PAGESZ), from, to;

	if (!pg)
		pg = PAGE;
	from = ROUND_UP((uintptr_t)tb + sizeof(*tb), pg);	/* nblk, stride: still read */
	to = ((uintptr_t)tb + tb->bytes) & ~(pg - 1);
	if (from < to)
		mmap((void *)from, to - from, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

/*
 * fork child: the parent's buffers and writer are not ours (the writer thread does not
 * exist here); forget them and start this process's own file and writer (nop: once it has a tracer).
 */
void ft_session_forked(int nop)
{
	struct ft_session *s = &ft_sess;
	struct ft_thread *t = &ft_cur;
	struct ft_tbuf *own = t->tb;

	sess_lock = 0;
	writer_joinable = 0;	/* the parent's writer */
	/*
	 * The parent's writer or a snapshot may have been filling a batch at the fork: its
	 * chunks point into the parent's buffers, unmapped below.  Flushed by this process's
	 * writer they went into its file, and their buffers' counts were touched (the redis
	 * trial: a daemon's child died of SIGSEGV in 5 runs of 16).
	 */
	batch_reset(&writer_bt);
	batch_reset(&final_bt);
	batch_reset(&snap_bt);
	snap_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	snap_tmp_live = 0;	/* the parent's snapshot file: not this process's to remove */
	write_failed = write_err_later = writer_private = 0;
	/* another thread may have held it at fork; objects gone before are not this trace's */
	maps_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	gone.len = 0;
	gone.count = 0;
	for (uint64_t i = 0; i < s->nreg && i < FT_MAX_REG; i++) {
		if (s->reg[i] && s->reg[i] != own)
			munmap(s->reg[i], s->reg[i]->bytes);	/* our private copies */
		s->reg[i] = NULL;
	}
	while (tbuf_free) {
		struct ft_tbuf *tb = tbuf_free;

		tbuf_free = tb->next_free;
		munmap(tb, tb->bytes);
	}
	s->nreg = 0;
	if (own)
		tbuf_orphan(own);
	/* the thread's next event takes a buffer of this process (thread_buf_slow) */
	t->ndefer = t->defer_bytes = t->ext_kept = 0;
	t->state = FT_THREAD_NEW;
	if (s->state != FT_SESS_LIVE)
		return;
	ft_fd_close_same(s->fd, &s->fd_id);	/* the parent's file, unless reused since */
	s->fd = -1;
	s->state = FT_SESS_OFF;
	/* nothing to record (nop) yet: no file, which would stay empty (nginx's workers
	   after an attach: two per reload), until a tracer is set */
	fork_deferred = nop;
	if (!nop)
		ft_session_open(NULL, 0, s->tracer_now, s->hdr.graph_depth, 0, 1);
}
