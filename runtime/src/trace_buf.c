// SPDX-License-Identifier: Apache-2.0
/*
 * The trace file and the per-thread event buffers (docs/trace-format.md).
 *
 * Each thread has a chunk of the trace file and a staging buffer (see
 * "Staging buffers" below). A thread gets them on its first event (mmap, no
 * malloc: this may run in a signal handler); the global spin lock below is
 * taken only then, never per event. A chunk's space is a hole until its records
 * are written: reserving all of it (fallocate) and giving the rest back at exit
 * cost a short-lived process milliseconds of file-system work.  A thread that
 * flushes during the run reserves blocks ahead of its writes instead, in growing
 * steps (writing into reserved blocks costs ext4 a third less than into a hole),
 * and gives back what it did not use when it ends.  A full disk shows up as a
 * failed write (the thread stops recording, counted and reported once).
 *
 * Finalisation (exit, fatal signal, shutdown) uses only async-signal-safe
 * calls: pwrite, rename, clock_gettime, open/read.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>

#include "trace_buf.h"
#include "trace_internal.h"

#define PAGE 4096UL
#define ROUND_UP(x, a) (((x) + (a) - 1) & ~((a) - 1))

__thread struct ft_thread ft_cur FT_TLS;

struct ft_session ft_sess = { .fd = -1 };

static volatile int sess_lock;
static pthread_key_t exit_key;
static int exit_key_ok;

static int lock_try(int spins)
{
	while (__atomic_exchange_n(&sess_lock, 1, __ATOMIC_ACQUIRE)) {
		if (spins-- == 0)
			return 0;
		__builtin_ia32_pause();
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

/* fallocate and ftruncate under the same rule as write_all */
static int falloc_guarded(int fd, int mode, off_t off, off_t len)
{
	struct xfsz_guard g;
	int err;

	fd = sess_fd(fd);
	if (fd < 0)
		return fd;
	xfsz_block(&g);
	err = fallocate(fd, mode, off, len) == 0 ? 0 : -errno;
	xfsz_unblock(&g, err);
	return err;
}

static int truncate_guarded(int fd, off_t len)
{
	struct xfsz_guard g;
	int err;

	fd = sess_fd(fd);
	if (fd < 0)
		return fd;
	xfsz_block(&g);
	err = ftruncate(fd, len) == 0 ? 0 : -errno;
	xfsz_unblock(&g, err);
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

/* Replaced MAPS images (never freed: a fatal-signal handler may be reading one). */
static char *retired[64];
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
	struct ftkit_maps_chunk h = { { FTKIT_CHUNK_MAPS, sizeof(h), 0 }, 0, 0 };
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
 * Trace format v1 has one MAPS chunk, written at finalisation: an object loaded later at
 * the same address comes first there, and readers take the first entry that contains an
 * address.
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

/*
 * The output path as given, made absolute against the directory at start-up: a daemon
 * that chdir()s later still finalises the file it started (renaming a relative .part
 * from another directory failed).
 */
static void absolute_output(const char *in, char *out, size_t size)
{
	size_t n;

	if (in[0] == '/' || !getcwd(out, size) || (n = strlen(out)) + 2 + strlen(in) > size) {
		ft_strlcpy(out, in, size);
		return;
	}
	if (n == 0 || out[n - 1] != '/')
		out[n++] = '/';
	ft_strlcpy(out + n, in, size - n);
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

static void thread_key_dtor(void *v)
{
	(void)v;
	ft_thread_exit();
}

/*
 * Open the trace file for this process: header, CMDLINE, MAPS (padded so that
 * thread chunks start page-aligned). fork_child: name it after the parent's
 * output with ".<pid>" appended.
 */
int ft_session_open(const char *output, size_t buf_kb, uint32_t tracer, uint32_t depth,
		    int force_mono, int fork_child)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header *h = &s->hdr;
	char cmd[8192];
	struct ftkit_chunk cc;
	ssize_t cn = 0;
	int fd, err;

	if (!fork_child) {
		char abs[PATH_MAX];

		absolute_output(output && *output ? output : "ftrace.dat", abs, sizeof(abs));
		expand_output(abs, s->final, sizeof(s->final), NULL);
	} else {
		char sfx[32] = ".";

		ft_utoa(sfx + 1, (unsigned long)getpid());
		if (strlen(s->final) + strlen(sfx) + 1 < sizeof(s->final))
			strcat(s->final, sfx);
	}
	if (snprintf(s->part, sizeof(s->part), "%s.%d.part", s->final, (int)getpid()) >=
	    (int)sizeof(s->part))
		return -ENAMETOOLONG;
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
	h->record_size = sizeof(struct ftkit_rec);
	h->graph_depth = depth;
	h->tsc_hz = s->clk.tsc_hz;

	s->end = sizeof(*h);
	/* CMDLINE */
	int cfd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (cfd >= 0) {
		cn = read(cfd, cmd, sizeof(cmd));
		close(cfd);
		if (cn < 0)
			cn = 0;
	}
	cc.type = FTKIT_CHUNK_CMDLINE;
	cc.hdr_size = sizeof(cc);
	cc.size = ROUND_UP(sizeof(cc) + (size_t)cn, 8UL);
	memset(cmd + cn, 0, (size_t)(cc.size - sizeof(cc) - (size_t)cn));
	err = write_all(fd, h, sizeof(*h), 0);
	if (!err)
		err = write_all(fd, &cc, sizeof(cc), (off_t)s->end);
	if (!err)
		err = write_all(fd, cmd, cc.size - sizeof(cc), (off_t)(s->end + sizeof(cc)));
	s->end += cc.size;
	if (!err)
		err = ft_maps_build(s->end, PAGE);
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
	s->chunk_bytes = ROUND_UP(buf_kb * 1024 + sizeof(struct ftkit_thread_chunk), PAGE);
	s->fd = fd;
	ft_fd_remember(fd, &s->fd_id);
	s->nreg = 0;
	s->lost_exited = s->lost_depth_exited = 0;
	s->gen++;
	__atomic_store_n(&s->state, FT_SESS_LIVE, __ATOMIC_RELEASE);
	return 0;
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
}

/*
 * Staging buffers. A thread records into a private staging buffer (anonymous
 * memory, populated once, reused); when it is full the thread appends it to
 * its chunk of the file with one pwrite (one system call per FT_STAGE_RECS
 * events) and updates the chunk's nrec in the mapped chunk header. Writing
 * fresh memory costs a page fault and the kernel's zeroing of every new page;
 * reusing one buffer avoids both (on the project's VM they were 2/3 of an
 * event's cost). Exit, fatal signals and snapshots also take what is staged.
 * Staging buffers of exited threads are reused by new threads.
 */
#define FT_STAGE_RECS 8192UL	/* 256 KiB */
#define FT_STAGE_BYTES (PAGE + FT_STAGE_RECS * sizeof(struct ftkit_rec))

static struct ft_stage *stage_free;	/* under the session lock */
/* a snapshot's temporary file while it is written: finalisation removes it (the process may
   end during a long snapshot) */
static char snap_tmp[PATH_MAX + 64];
static int snap_tmp_live;
static const char zero_page[PAGE];
static int write_failed;		/* reported once */

static struct ft_stage *stage_get(void)
{
	struct ft_stage *st = stage_free;
	void *p;

	if (st) {
		stage_free = st->next_free;
		return st;
	}
	p = mmap(NULL, FT_STAGE_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static inline struct ftkit_rec *stage_recs(struct ft_stage *st)
{
	return (struct ftkit_rec *)((char *)st + PAGE);
}

/* Records are about to be written up to file offset `to` by a flush: reserve ahead. */
static void stage_reserve(struct ft_stage *st, uint64_t to)
{
	uint64_t start = st->rec_off, end = st->rec_off + st->cap * sizeof(struct ftkit_rec);
	uint64_t from = st->alloc_end ? st->alloc_end : start;
	uint64_t want;

	if (to <= st->alloc_end)
		return;
	want = from + (from - start > (1UL << 20) ? from - start : (1UL << 20));
	want = ROUND_UP(want > to ? want : to, PAGE);
	if (want > end)
		want = end;
	/* errors only cost speed (e.g. no fallocate here): the write itself still goes */
	if (falloc_guarded(ft_sess.fd, 0, (off_t)from, (off_t)(want - from)) == 0)
		st->alloc_end = want;
	else
		st->alloc_end = end;	/* do not try again */
}

/*
 * Give back the blocks reserved after the records of a chunk whose thread is done with
 * it (thread exit, finalisation): the file's size and layout do not change, a hole reads
 * as zeros. One syscall, async-signal-safe.
 */
static void stage_trim(const struct ft_stage *st)
{
	uint64_t nrec = __atomic_load_n(&st->hdr->nrec, __ATOMIC_ACQUIRE);
	uint64_t from = ROUND_UP(st->rec_off + nrec * sizeof(struct ftkit_rec), PAGE);

	if (st->alloc_end > from)
		(void)falloc_guarded(ft_sess.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)from, (off_t)(st->alloc_end - from));
}

/*
 * Write the staged records [0, n) of st to the file after its base and set the
 * chunk's nrec (records in the file). Does not change st (the owner does).
 */
static int stage_write(struct ft_stage *st, uint64_t n)
{
	int err = 0;

	if (n && st->base + n <= st->cap)
		err = write_all(ft_sess.fd, stage_recs(st), n * sizeof(struct ftkit_rec),
				(off_t)(st->rec_off + st->base * sizeof(struct ftkit_rec)));
	if (!err)
		__atomic_store_n(&st->hdr->nrec, st->base + n, __ATOMIC_RELEASE);
	return err;
}

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

static struct ft_thread *thread_buf_slow(void)
{
	struct ft_thread *t = &ft_cur;
	struct ft_session *s = &ft_sess;
	struct ftkit_thread_chunk *c;
	struct ft_stage *st;
	uint64_t off;
	void *p;

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
	off = s->end;
	/*
	 * The chunk's first page (its header) is written, so that it has a block: a store
	 * through the mapping below can then never meet a full disk (SIGBUS). The rest of
	 * the chunk stays a hole until written; the file is extended over it so that the
	 * layout holds even if no record is ever written there.
	 */
	if (s->state != FT_SESS_LIVE || write_all(s->fd, zero_page, PAGE, (off_t)off) != 0 ||
	    truncate_guarded(s->fd, (off_t)(off + s->chunk_bytes)) != 0) {
		lock_put();
		goto fail;
	}
	/* only the first page (the chunk header) is mapped */
	/* s->fd was checked (and reopened if need be) by the writes just above */
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)off);
	st = p == MAP_FAILED ? NULL : stage_get();
	if (!st) {
		if (p != MAP_FAILED)
			munmap(p, PAGE);
		lock_put();
		goto fail;
	}
	c = p;
	c->c.type = FTKIT_CHUNK_THREAD;
	c->c.hdr_size = sizeof(*c);
	c->c.size = s->chunk_bytes;
	c->tid = (uint32_t)syscall(SYS_gettid);
	prctl(PR_GET_NAME, c->name);
	s->end = off + s->chunk_bytes;
	lock_put();

	st->hdr = c;
	st->rec_off = off + sizeof(*c);
	st->base = 0;
	st->head = 0;
	st->cap = (s->chunk_bytes - sizeof(*c)) / sizeof(struct ftkit_rec);
	st->next_free = NULL;
	st->alloc_end = 0;
	t->chunk = c;
	t->stage = st;
	t->recs = stage_recs(st);
	t->cap = st->cap;
	t->head = 0;
	t->limit = FT_STAGE_RECS < st->cap ? FT_STAGE_RECS : st->cap;
	t->open = 0;
	t->gen = s->gen;
	t->reg = __atomic_fetch_add(&s->nreg, 1, __ATOMIC_RELAXED);
	if (t->reg < FT_MAX_REG)
		__atomic_store_n(&s->reg[t->reg], st, __ATOMIC_RELEASE);
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

/*
 * The staging buffer cannot take `need` more records: append it to the file
 * and start it again. 0 if the chunk is full (or a flush is already running on
 * this thread, i.e. we are in a signal handler that interrupted it).
 */
int ftkit_trace_flush(struct ft_thread *t, uint64_t need)
{
	struct ft_stage *st = t->stage;
	uint64_t n = t->head, room;
	int saved_errno = errno, err;

	if (t->busy)
		return 0;
	if (__atomic_load_n(&ft_sess.state, __ATOMIC_ACQUIRE) != FT_SESS_LIVE) {
		/*
		 * Finalised (at exit: shared libraries' and later ELF destructors still run
		 * traced code): what finalisation wrote stays as it is.  The thread's later events
		 * find no buffer and are counted in memory only.
		 */
		t->state = FT_THREAD_NOBUF;
		t->gen = ft_sess.gen;
		return 0;
	}
	t->busy = 1;
	barrier();
	if (n)
		stage_reserve(st, st->rec_off + (st->base + n) * sizeof(struct ftkit_rec));
	err = n ? stage_write(st, n) : 0;
	if (n && !err) {
		/* readers see the records either staged or in the file, never twice */
		__atomic_store_n(&st->head, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&st->base, st->base + n, __ATOMIC_RELEASE);
		t->head = 0;
		need -= n;
	} else if (err) {
		/*
		 * The file cannot be written (disk full, or the descriptor is no longer the
		 * trace file): this thread stops recording rather than try again at every
		 * event.  What it staged stays for finalisation to try once more.
		 */
		if (!__atomic_exchange_n(&write_failed, 1, __ATOMIC_RELAXED))
			ft_msg_err("cannot write the trace file, recording stops", NULL, err);
		t->state = FT_THREAD_NOBUF;
		t->gen = ft_sess.gen;
		barrier();
		t->busy = 0;
		errno = saved_errno;
		return 0;
	}
	room = st->cap - st->base - t->head;
	t->limit = t->head + (FT_STAGE_RECS - t->head < room ? FT_STAGE_RECS - t->head : room);
	barrier();
	t->busy = 0;
	errno = saved_errno;
	return need <= t->limit;
}

void ft_note_lost_depth(void)
{
	struct ft_thread *t = &ft_cur;

	if (t->state == FT_THREAD_LIVE && t->gen == ft_sess.gen)
		t->chunk->lost_depth++;
}

/* Thread-exit hook (pthread key destructor): flush; the chunk stays in the file. */
void ft_thread_exit(void)
{
	struct ft_thread *t = &ft_cur;
	struct ft_session *s = &ft_sess;

	fgraph_close_all();	/* recorded while the buffer is still there */
	if (t->state == FT_THREAD_LIVE && t->gen == s->gen) {
		struct ftkit_thread_chunk *c = t->chunk;
		struct ft_stage *st = t->stage;

		t->state = FT_THREAD_DEAD;
		barrier();
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == FT_SESS_LIVE) {
			/* the header is mapped from the file: not touched once the file is final */
			stage_write(st, t->head);
			stage_trim(st);
			read_comm((pid_t)c->tid, c->name);
			c->flags |= FTKIT_T_EXITED;
		}
		__atomic_fetch_add(&s->lost_exited, c->lost, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->lost_depth_exited, c->lost_depth, __ATOMIC_RELAXED);
		if (t->reg < FT_MAX_REG)
			__atomic_store_n(&s->reg[t->reg], NULL, __ATOMIC_RELEASE);
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == FT_SESS_LIVE) {
			lock_get();
			st->next_free = stage_free;
			stage_free = st;
			lock_put();
			munmap(c, PAGE);
		}
		t->chunk = NULL;
		t->stage = NULL;
		t->recs = NULL;
		t->cap = t->limit = 0;
	}
	t->state = FT_THREAD_DEAD;
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
		struct ft_stage *st = __atomic_load_n(&s->reg[i], __ATOMIC_ACQUIRE);

		if (st) {
			l += st->hdr->lost;
			d += st->hdr->lost_depth;
		}
	}
	*lost = l;
	*depth = d;
	*threads = n;
}

/*
 * Finalise the trace file: header, last MAPS chunk, rename to the output name.
 * in_signal: only async-signal-safe calls (the MAPS image from the last build).
 */
int ft_session_finish(int reason, int sig, int in_signal)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header *h = &s->hdr;
	uint64_t lost, depth, nthr;
	int locked, err = 0;

	if (!__atomic_compare_exchange_n(&s->state, &(int){ FT_SESS_LIVE }, FT_SESS_DONE, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EALREADY;
	if (!in_signal)
		ft_maps_build(0, 0);
	/* a signal may have interrupted a chunk allocation on this very thread */
	locked = in_signal ? lock_try(1 << 20) : (lock_get(), 1);

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
	ft_session_counts(&lost, &depth, &nthr);
	if (lost + depth)
		h->flags |= FTKIT_F_LOST;
	/* what the threads have staged (they may still be adding to it) */
	for (uint64_t i = 0; i < nthr && i < FT_MAX_REG; i++) {
		struct ft_stage *st = __atomic_load_n(&s->reg[i], __ATOMIC_ACQUIRE);

		if (st) {
			stage_write(st, __atomic_load_n(&st->head, __ATOMIC_ACQUIRE));
			stage_trim(st);
			read_comm((pid_t)st->hdr->tid, st->hdr->name);
		}
	}
	if (locked) {
		const char *m = __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE);
		size_t ml = __atomic_load_n(&s->maps_len, __ATOMIC_ACQUIRE);

		if (m && ml) {
			struct ftkit_maps_chunk mh;

			memcpy(&mh, m, sizeof(mh));
			mh.c.size = ml;
			err = write_all(s->fd, &mh, sizeof(mh), (off_t)s->end);
			if (!err)
				err = write_all(s->fd, m + sizeof(mh), ml - sizeof(mh),
						(off_t)(s->end + sizeof(mh)));
			if (!err)
				s->end += ml;
		}
	}
	if (!err)
		err = write_all(s->fd, h, sizeof(*h), 0);
	if (locked)
		lock_put();
	if (!err && rename(s->part, s->final) != 0)
		err = -errno;
	if (err)
		ft_msg_err("cannot finalise trace file ", s->part, err);
	return err;
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

/* The live thread whose records start at file offset rec_off, if any. */
static struct ft_stage *stage_of(uint64_t rec_off)
{
	uint64_t n = __atomic_load_n(&ft_sess.nreg, __ATOMIC_ACQUIRE);

	for (uint64_t i = 0; i < n && i < FT_MAX_REG; i++) {
		struct ft_stage *st = __atomic_load_n(&ft_sess.reg[i], __ATOMIC_ACQUIRE);

		if (st && st->rec_off == rec_off)
			return st;
	}
	return NULL;
}

/*
 * A consistent cut of a live thread's records: *base records in the file and a private copy
 * of the *staged ones after them.  Taken before the (slow) copy of the file's records: the
 * owner refills its staging buffer after each flush.  A flush during the copy (base moved)
 * makes it start again; after a few tries the staged records are left out.
 */
static int staged_copy(struct ft_stage *st, uint64_t *base, uint64_t *staged,
		       struct ftkit_rec **copy)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t b = __atomic_load_n(&st->base, __ATOMIC_ACQUIRE);
		uint64_t n = __atomic_load_n(&st->head, __ATOMIC_ACQUIRE);
		struct ftkit_rec *p = n ? malloc(n * sizeof(*p)) : NULL;

		if (n && !p)
			return -1;
		if (n)
			memcpy(p, stage_recs(st), n * sizeof(*p));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&st->base, __ATOMIC_ACQUIRE) == b) {
			*base = b;
			*staged = n;
			*copy = p;
			return 0;
		}
		free(p);
	}
	*base = __atomic_load_n(&st->base, __ATOMIC_ACQUIRE);
	*staged = 0;
	*copy = NULL;
	return 0;
}

static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned snap_seq;

/* Write a compact copy of the trace as it is now. path NULL → <output>.snap.<n>. */
int ft_session_snapshot(const char *path, char *out, size_t outlen)
{
	struct ft_session *s = &ft_sess;
	struct ftkit_file_header h;
	char final[PATH_MAX + 32], tmp[PATH_MAX + 64];
	uint64_t end, off, o = sizeof(h), lost, depth, nthr;
	int fd, err = 0;

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
	fd = create_private(tmp);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	ft_strlcpy(snap_tmp, tmp, sizeof(snap_tmp));
	__atomic_store_n(&snap_tmp_live, 1, __ATOMIC_RELEASE);
	ft_maps_build(0, 0);
	lock_get();
	end = s->end;
	lock_put();

	for (off = sizeof(h); off < end && !err;) {
		struct ftkit_thread_chunk c;
		uint64_t size;	/* of the chunk in the file (the copy is trimmed) */

		err = read_all(s->fd, &c, sizeof(c), (off_t)off);
		if (err || c.c.type == FTKIT_CHUNK_END || c.c.size < sizeof(c.c))
			break;
		size = c.c.size;
		if (c.c.type == FTKIT_CHUNK_THREAD) {
			/* records in the file, then what the thread has staged */
			struct ft_stage *st = stage_of(off + sizeof(c));
			uint64_t base = c.nrec, staged = 0, bytes;
			struct ftkit_rec *copy = NULL;

			if (st && staged_copy(st, &base, &staged, &copy) != 0) {
				err = -ENOMEM;
				break;
			}
			bytes = sizeof(c) + (base + staged) * sizeof(struct ftkit_rec);
			c.nrec = base + staged;
			c.c.size = bytes;
			err = write_all(fd, &c, sizeof(c), (off_t)o);
			if (!err)
				err = copy_range(s->fd, fd, off + sizeof(c), base * sizeof(struct ftkit_rec),
						 o + sizeof(c));
			if (!err && staged)
				err = write_all(fd, copy, staged * sizeof(struct ftkit_rec),
						(off_t)(o + sizeof(c) + base * sizeof(struct ftkit_rec)));
			free(copy);
			o += bytes;
		} else if (c.c.type == FTKIT_CHUNK_CMDLINE) {
			err = copy_range(s->fd, fd, off, c.c.size, o);
			o += c.c.size;
		}
		off += size;
	}
	if (!err) {
		const char *m = __atomic_load_n(&s->maps, __ATOMIC_ACQUIRE);
		size_t ml = __atomic_load_n(&s->maps_len, __ATOMIC_ACQUIRE);

		err = write_all(fd, m, ml, (off_t)o);
	}
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
	if (!err && rename(tmp, final) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	else if (out)
		ft_strlcpy(out, final, outlen);
out:
	pthread_mutex_unlock(&snap_mu);
	return err;
}

/*
 * fork child: the parent's chunks are shared mappings of the parent's file;
 * forget them (never write to them again) and start this process's own file.
 */
void ft_session_forked(void)
{
	struct ft_session *s = &ft_sess;
	struct ft_thread *t = &ft_cur;

	sess_lock = 0;
	/* another thread may have held it at fork; objects gone before are not this trace's */
	maps_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	gone.len = 0;
	gone.count = 0;
	if (t->state == FT_THREAD_LIVE && t->chunk) {
		munmap(t->chunk, PAGE);			/* the parent's file */
		munmap(t->stage, FT_STAGE_BYTES);	/* our private copy */
	}
	stage_free = NULL;
	t->chunk = NULL;
	t->stage = NULL;
	t->recs = NULL;
	t->cap = t->head = t->limit = 0;
	t->state = FT_THREAD_NEW;
	t->open = 0;
	if (s->state != FT_SESS_LIVE)
		return;
	ft_fd_close_same(s->fd, &s->fd_id);	/* the parent's file, unless reused since */
	s->fd = -1;
	s->state = FT_SESS_OFF;
	for (int i = 0; i < FT_MAX_REG; i++)
		s->reg[i] = NULL;
	ft_session_open(NULL, (s->chunk_bytes - sizeof(struct ftkit_thread_chunk)) / 1024,
			s->hdr.tracer, s->hdr.graph_depth, 0, 1);
}
