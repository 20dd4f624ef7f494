// SPDX-License-Identifier: Apache-2.0
/*
 * Live control: a unix stream socket served by a background thread.
 *
 * Path: $XDG_RUNTIME_DIR/ftkit-<pid>.sock, else /tmp/ftkit-<uid>/ftkit-<pid>.sock
 * (directory 0700, must be ours). Socket mode 0600, and every connection's
 * peer uid (SO_PEERCRED) must be ours or root. One request line, one response
 * line (docs/trace-format.md).
 *
 * Attach on demand: a process started without any FTRACE_* variable has no thread and no
 * socket, only a handler for FT_ATTACH_SIG; `ftrace live PID` queues that signal (with a
 * magic value) to one of its threads that sleeps in a system call, and the handler starts
 * the server from there (see attach_handler()).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ftrace_trace.h>

#include "arch/arch.h"
#include "core/fdutil.h"
#include "control.h"
#include "trace.h"
#include "trace_buf.h"
#include "args.h"
#include "trigger.h"
#include "trace_util.h"

static char sock_path[104];	/* sun_path less ".new", the name it is bound under first */
static char sock_dir[96];	/* the directory of sock_path */
static int sock_fd = -1;
static struct ft_fdid sock_id;

/*
 * A directory the effective user alone controls: owned by it, no access for group or
 * others, not a symlink (checked on the opened directory, so it cannot be swapped between
 * the check and the use). A socket made inside it cannot be reached, replaced or re-pointed
 * by anyone else whatever its own mode.
 */
static int private_dir(const char *dir)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int ok;

	if (fd < 0)	/* not one (a symlink, a file, missing), or not openable now (EMFILE) */
		return errno == ELOOP || errno == ENOTDIR || errno == ENOENT || errno == EACCES ?
		       0 : -errno;
	ok = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	     !(st.st_mode & 077);
	close(fd);
	return ok;
}

static void sock_unlink(void);

static int make_path(void)
{
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	char dir[80];
	int ok;

	if (xdg && *xdg && strlen(xdg) < 80 && private_dir(xdg) > 0) {
		snprintf(sock_path, sizeof(sock_path), "%s/ftkit-%d.sock", xdg, (int)getpid());
		snprintf(sock_dir, sizeof(sock_dir), "%s", xdg);
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/ftkit-%u", (unsigned)geteuid());
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	ok = private_dir(dir);
	if (ok < 0) {
		fprintf(stderr, "ftkit: cannot open %s: %s; no control socket\n", dir, ft_strerror(-ok));
		return ok;
	}
	if (!ok) {
		fprintf(stderr, "ftkit: %s is not a private directory of this user; no control socket\n",
			dir);
		return -EPERM;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/ftkit-%d.sock", dir, (int)getpid());
	snprintf(sock_dir, sizeof(sock_dir), "%s", dir);
	return 0;
}

static void reply(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(fd, s, n);

		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void result(int fd, int err, const char *okmsg)
{
	char buf[PATH_MAX + 64];

	if (err)
		snprintf(buf, sizeof(buf), "error %s\n", strerror(-err));
	else if (okmsg && *okmsg)
		snprintf(buf, sizeof(buf), "ok %s\n", okmsg);
	else
		snprintf(buf, sizeof(buf), "ok\n");
	reply(fd, buf);
}

static const char *const list_cmds[FT_NLISTS] = {
	[FT_LIST_FILTER] = "filter", [FT_LIST_NOTRACE] = "notrace",
	[FT_LIST_GRAPH_FUNCTION] = "graph_function", [FT_LIST_GRAPH_NOTRACE] = "graph_notrace",
};

/* The glob list a command sets, or -1. */
static int glob_list(const char *cmd)
{
	for (int i = 0; i < FT_NLISTS; i++)
		if (!strcmp(cmd, list_cmds[i]))
			return i;
	return -1;
}

static void handle(int fd, char *line)
{
	char *arg = strchr(line, ' ');
	char out[PATH_MAX + 32];

	if (arg) {
		*arg++ = 0;
		while (*arg == ' ')
			arg++;
	} else {
		arg = line + strlen(line);
	}
	if (!strcmp(line, "status")) {
		ft_trace_status(out, sizeof(out));
		result(fd, 0, out);
	} else if (!strcmp(line, "enable")) {
		result(fd, ftrace_trace_enable(1), NULL);
	} else if (!strcmp(line, "disable")) {
		result(fd, ftrace_trace_enable(0), NULL);
	} else if (!strcmp(line, "tracer")) {
		if (!strcmp(arg, "function"))
			result(fd, ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION), NULL);
		else if (!strcmp(arg, "function_graph"))
			result(fd, ftrace_trace_set_tracer(FTRACE_TRACER_FUNCTION_GRAPH), NULL);
		else if (!strcmp(arg, "nop"))
			result(fd, ftrace_trace_set_tracer(FTRACE_TRACER_NOP), NULL);
		else
			reply(fd, "error unknown tracer (function, function_graph, nop)\n");
	} else if (glob_list(line) >= 0) {
		char bad[256] = "";
		int list = glob_list(line);
		int err = ft_trace_set_globs(list, arg, bad, sizeof(bad));

		if (err && bad[0]) {
			snprintf(out, sizeof(out), "error %s '%s': %s (nothing changed)\n",
				 list_cmds[list], bad, ft_glob_error(err));
			reply(fd, out);
		} else {
			result(fd, err, NULL);
		}
	} else if (!strcmp(line, "depth")) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		/* strtoul takes "-1" (as ULONG_MAX) and wraps: digits only, in range */
		if (*arg < '0' || *arg > '9' || *end || errno || v > UINT_MAX)
			reply(fd, "error depth needs a number from 0 (no limit) to 4294967295\n");
		else
			result(fd, ftrace_trace_set_depth((unsigned int)v), NULL);
	} else if (!strcmp(line, "snapshot") || !strcmp(line, "dump")) {
		/* dump: a flight recorder's rings, written as a snapshot is */
		int err = ftrace_trace_snapshot(*arg ? arg : NULL, out, sizeof(out));

		if (err && *out) {
			/* where it tried: a worker that dropped root cannot write beside a
			   trace started as root */
			char buf[PATH_MAX + 128];
			int busy = err == -EMFILE || err == -ENFILE || err == -ENOMEM;
			int n = busy ? snprintf(buf, sizeof(buf), "error %s: %s (the process has none "
						"left now: ask again later)\n", out, strerror(-err)) :
				snprintf(buf, sizeof(buf), "error %s: %s (name another: %s PATH)\n",
					 out, strerror(-err), line);

			if (n > 0 && n < (int)sizeof(buf))
				reply(fd, buf);
			else
				result(fd, err, NULL);
		} else {
			result(fd, err, out);
		}
	} else if (!strcmp(line, "ring")) {
		uint64_t bytes = 0;

		if (strcmp(arg, "off") && (ft_parse_size(arg, &bytes) || !bytes)) {
			reply(fd, "error ring needs a size (bytes, or with K, M, G, T) or off\n");
		} else {
			int err = ft_session_set_ring(bytes);

			/* the mode now: a ring is whole blocks, 256 KiB to 4 GiB */
			ft_session_mode(out, sizeof(out));
			result(fd, err, out);
		}
	} else if (!strcmp(line, "size")) {
		uint64_t bytes = 0;

		if (strcmp(arg, "off") && (ft_parse_size(arg, &bytes) || !bytes)) {
			reply(fd, "error size needs a size (bytes, or with K, M, G, T) or off\n");
		} else {
			ft_session_set_size(bytes);
			result(fd, 0, NULL);
		}
	} else if (!strcmp(line, "trigger")) {
		char bad[160] = "";
		int err = ft_set_triggers(arg, bad, sizeof(bad));

		if (err == -EINVAL)
			snprintf(out, sizeof(out), "error trigger '%s': not GLOB@ACTION[:COUNT],... (traceon, traceoff, snapshot, stacktrace, depth=N, finish)\n", bad);
		else if (err == -ENODEV)
			snprintf(out, sizeof(out), "error trigger '%s': matches no function (nothing changed)\n", bad);
		if (err == -EINVAL || err == -ENODEV)
			reply(fd, out);
		else
			result(fd, err, NULL);
	} else if (!strcmp(line, "args") || !strcmp(line, "retval")) {
		char bad[160] = "";
		int ret = line[0] == 'r';
		int err = ft_args_set(ret, strcmp(arg, "off") ? arg : NULL, bad, sizeof(bad));

		if (err == -EINVAL) {
			snprintf(out, sizeof(out), "error %s '%.159s': not FUNC@%s (nothing changed)\n",
				 ret ? "retval" : "args", bad, ret ? "retval[/FMT][%REG]" : "ARG[/FMT][%LOC],...");
			reply(fd, out);
		} else if (!err && (err = ft_args_unmatched(ret, bad, sizeof(bad)))) {
			snprintf(out, sizeof(out), "ok set, but '%.159s'%s no function loaded now\n", bad,
				 err > 1 ? " and others match" : " matches");
			reply(fd, out);
		} else {
			result(fd, err, NULL);
		}
	} else if (!strcmp(line, "threads")) {
		int err = ftrace_trace_set_threads(arg);

		if (err == -EINVAL)
			reply(fd, "error threads: thread ids and thread-name globs, comma-separated (at most 64, 63 bytes each)\n");
		else
			result(fd, err, NULL);
	} else if (!strcmp(line, "time_filter")) {
		uint64_t ns;

		if (ft_parse_duration(arg, &ns))
			reply(fd, "error time_filter needs a duration (e.g. 10us, 1.5ms; 0: off)\n");
		else
			result(fd, ftrace_trace_set_time_filter(ns), NULL);
	} else if (!strcmp(line, "clear")) {
		result(fd, ft_session_clear(), NULL);
	} else if (!strcmp(line, "finish")) {
		result(fd, ftrace_trace_finish(), NULL);
	} else {
		reply(fd, "error unknown command (status, enable, disable, tracer, filter, notrace, graph_function, graph_notrace, depth, threads, trigger, time_filter, args, retval, ring, size, snapshot, dump, clear, finish)\n");
	}
}

static void serve(int fd)
{
	char buf[4097];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		have += (size_t)n;
		buf[have] = 0;
		while ((nl = memchr(buf, '\n', have))) {
			*nl = 0;
			if (nl > buf && nl[-1] == '\r')
				nl[-1] = 0;
			handle(fd, buf);
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have);
			buf[have] = 0;
		}
		if (have == sizeof(buf) - 1) {
			reply(fd, "error line too long\n");
			return;
		}
	}
}

/*
 * The server thread: none, running, or being stopped by ft_control_stop (which joins it).
 * One that ends by itself (finish, an error) detaches itself.
 */
enum { CTL_NONE, CTL_RUNNING, CTL_STOPPING };
static atomic_int ctl_state;
static pthread_t ctl_thread;
static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;	/* ctl_thread set with the state */

static void *control_exit(void)
{
	int st = CTL_RUNNING;

	if (atomic_compare_exchange_strong(&ctl_state, &st, CTL_NONE))
		pthread_detach(pthread_self());
	return NULL;
}

static void *control_thread(void *arg)
{
	(void)arg;
	ft_thread_answer_rounds();
	for (;;) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		struct pollfd pfd = { .fd = sock_fd, .events = POLLIN };
		int c;

		/*
		 * Wait in poll, not in accept: a blocked accept() holds the lowest free
		 * descriptor number reserved, so the program's next open() would not get 3.
		 */
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return control_exit();
		}
		if (atomic_load(&ctl_state) == CTL_STOPPING)
			return control_exit();
		c = ft_fd_high(accept4(sock_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK));
		if (c >= 0)
			fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
		if (c < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				continue;	/* the client went away between poll and accept */
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
				/* no descriptor to take it now (a server at its -n limit): the
				   request waits in the queue (ftrace live tells its user why),
				   and is taken once the program closes one */
				struct timespec ts = { 0, 50 * 1000 * 1000 };

				nanosleep(&ts, NULL);
				continue;
			}
			return control_exit();
		}
		/* the effective uid: the one whose rights the process acts with */
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
		    (cr.uid == geteuid() || cr.uid == 0))
			serve(c);
		else
			reply(c, "error permission denied\n");
		close(c);
		if (!sock_path[0]) {	/* the trace was finished (finish): no more requests */
			ft_fd_close_same(sock_fd, &sock_id);
			sock_fd = -1;
			return control_exit();
		}
	}
}

/*
 * At exit: end the server thread and wait for it (a second at most: it may be serving a
 * client), so that no thread of ours is left running.  valgrind's leak check calls the
 * memory of a thread alive at exit "possibly lost", which fails test suites that run
 * under it with --error-exitcode (jq's).  Its poll is woken by shutting the listening
 * socket down, if the descriptor is still ours; if not, it is left to end with the process.
 */
void ft_control_stop(void)
{
	int st = CTL_RUNNING;

	if (atomic_load(&ctl_state) != CTL_RUNNING)
		return;
	pthread_mutex_lock(&ctl_mu);
	if (!atomic_compare_exchange_strong(&ctl_state, &st, CTL_STOPPING)) {
		pthread_mutex_unlock(&ctl_mu);
		return;
	}
	pthread_mutex_unlock(&ctl_mu);
	if (ft_fd_same(sock_fd, &sock_id) && shutdown(sock_fd, SHUT_RDWR) == 0)
		ft_join_briefly(ctl_thread);
	else
		pthread_detach(ctl_thread);	/* it cannot be woken: no wait */
	atomic_store(&ctl_state, CTL_NONE);
}

int ft_control_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t all, old;
	pthread_t th;
	int fd, err;

	if (sock_fd >= 0)
		return 0;
	/* a setuid/setgid program serves no one: its invoker is not who it acts as */
	if (getauxval(AT_SECURE))
		return -EPERM;
	err = make_path();
	if (err)
		return err;
	fd = ft_fd_high(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (fd < 0)
		return -errno;
	/*
	 * Bound under a name of its own and renamed once it listens: a client that sees
	 * the socket (ftrace live, waiting for an attach) is never refused by a socket that
	 * is bound but not listening yet.
	 */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.new", sock_path);
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(sa.sun_path, 0600) != 0 ||
	    listen(fd, 4) != 0 || rename(sa.sun_path, sock_path) != 0) {
		err = -errno;
		fprintf(stderr, "ftkit: control socket %s: %s\n", sock_path, strerror(-err));
		close(fd);
		unlink(sa.sun_path);
		sock_unlink();
		return err;
	}
	sock_fd = fd;
	ft_fd_remember(fd, &sock_id);
	/* the server thread takes none of the program's signals */
	ft_helper_sigmask(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_mutex_lock(&ctl_mu);
	atomic_store(&ctl_state, CTL_RUNNING);
	err = -pthread_create(&th, NULL, control_thread, NULL);
	if (!err)
		ctl_thread = th;
	else
		atomic_store(&ctl_state, CTL_NONE);
	pthread_mutex_unlock(&ctl_mu);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(fd);
		sock_fd = -1;
		sock_unlink();
		return err;
	}
	pthread_setname_np(th, "ftkit-control");
	return 0;
}

/*
 * Remove the sockets that processes killed before they could (SIGKILL) left in our socket
 * directory: ftkit-<pid>.sock of this user whose process is gone.  At a normal exit, not at
 * start-up (it would cost every traced process start a directory scan); bounded.
 */
void ft_control_sweep(void)
{
	DIR *d = sock_dir[0] ? opendir(sock_dir) : NULL;
	struct dirent *e;
	int n = 0;

	if (!d)
		return;
	while ((e = readdir(d)) && n++ < 4096) {
		const char *nm = e->d_name;
		size_t len = strlen(nm);
		char path[sizeof(sock_dir) + 280], *num_end;
		struct stat st;
		long pid;
		size_t tail = 5;	/* ".sock", or ".sock.new": killed before it listened */

		if (len >= 16 && strcmp(nm + len - 4, ".new") == 0)
			tail = 9;
		if (len < 12 || strncmp(nm, "ftkit-", 6) != 0 || strncmp(nm + len - tail, ".sock", 5) != 0)
			continue;
		pid = strtol(nm + 6, &num_end, 10);
		if (num_end != nm + len - tail || pid <= 0 || pid > INT_MAX || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;	/* alive (or not ours to ask about): leave it */
		snprintf(path, sizeof(path), "%s/%s", sock_dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
			unlink(path);
	}
	closedir(d);
}

static void sock_unlink(void)
{
	if (sock_path[0]) {
		unlink(sock_path);
		sock_path[0] = 0;
	}
}

static void attach_off(void);

/* The trace is finished: no socket, and nothing to attach to (the signal back to SIG_DFL). */
void ft_control_unlink(void)
{
	sock_unlink();
	attach_off();
}

/* ---- attach on demand ------------------------------------------------------------------ */

#define FT_ATTACH_SIG	63		/* SIGRTMAX - 1 with glibc and musl; cmd/ftrace knows it */
#define FT_ATTACH_MAGIC	0x66746b61	/* si_value of the request: "ftka" */
#define FT_STR_(x)	#x
#define FT_STR(x)	FT_STR_(x)

static atomic_int attach_state;		/* 1: a server was asked for */

/*
 * An ELF note (name "ftkit", type 1, the attach signal's number) that `ftrace live` reads
 * from the program's file: it sends the signal only to a process that has our runtime
 * (notes survive strip).
 */
__asm__(".pushsection .note.ftkit, \"a\", @note\n"
	".balign 4\n"
	".long 6, 4, 1\n"
	".asciz \"ftkit\"\n"
	".balign 4\n"
	".long " FT_STR(FT_ATTACH_SIG) "\n"
	".popsection\n");

/* System calls that only wait: a thread blocked in one holds none of libc's locks. */
static int idle_call(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_readv: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_accept: case SYS_accept4: case SYS_wait4: case SYS_waitid:
	case SYS_ppoll: case SYS_pselect6: case SYS_epoll_pwait: case SYS_nanosleep:
	case SYS_clock_nanosleep: case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait:
	case SYS_restart_syscall:
#ifdef SYS_poll
	case SYS_poll: case SYS_select: case SYS_pause: case SYS_epoll_wait:
#endif
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return 1;
	}
	return 0;
}

static void *attach_main(void *arg)
{
	struct ftrace_trace_config cfg = { .control = 1 };
	const char *env = secure_getenv("FTRACE_OUTPUT");
	char out[sizeof(sock_dir) + 32];
	int err;

	(void)arg;
	pthread_detach(pthread_self());
	ft_thread_answer_rounds();
	/*
	 * The trace goes where the socket does (a directory of this user alone), unless
	 * FTRACE_OUTPUT says otherwise: not into the program's working directory, which may be
	 * unwritable (a daemon in /) or served to others (a web server's root).
	 */
	if ((!env || !*env) && !make_path()) {
		snprintf(out, sizeof(out), "%s/ftrace-%%p.dat", sock_dir);
		cfg.output = out;
	} else {
		cfg.output = env;
	}
	/* tracing off until asked (as FTRACE_CONTROL=1); started already: the server only */
	err = ftrace_trace_start(&cfg);
	if (!err && cfg.output == out)
		ft_session_discard_if_empty();	/* a session of its own, in our directory */
	if (err == -EBUSY)
		err = ft_control_start();
	if (err)
		atomic_store(&attach_state, 0);	/* said on stderr; a later request tries again */
	return NULL;
}

/*
 * The request of `ftrace live`: start the server.  Creating a thread from a signal handler
 * is safe only if the interrupted code holds none of the locks pthread_create takes (the
 * stack cache, malloc's, the dynamic loader's): so only a thread interrupted while it waits
 * in a system call (idle_call(), or one that returns EINTR: only waits do) starts it;
 * elsewhere the request is left and the attacher asks again.  The server thread then does
 * the rest in an ordinary context.  The signal is sent by the user or root (the kernel's
 * rule); the socket checks every peer again.
 */
static void attach_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, at;
	long nr = -1;
	sigset_t all, old;
	pthread_t th;

	(void)sig;
	if (si->si_code != SI_QUEUE || si->si_value.sival_int != FT_ATTACH_MAGIC) {
		/*
		 * Not ftrace live's: what the signal would have done without the runtime's
		 * handler, its default (the program's own handler replaces this one).  An
		 * instrumented bash survived `kill -63 $$`, which kills it untraced.
		 */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigset_t one;

		sigaction(FT_ATTACH_SIG, &dfl, NULL);
		sigemptyset(&one);
		sigaddset(&one, FT_ATTACH_SIG);
		raise(FT_ATTACH_SIG);
		pthread_sigmask(SIG_UNBLOCK, &one, NULL);
		goto out;
	}
	if (si->si_uid != getuid() && si->si_uid != geteuid() && si->si_uid != 0)
		goto out;
	at = ftrt_arch_syscall_at(uc, &nr);
	if (!at || (at == 1 && !idle_call(nr)))
		goto out;
	if (atomic_exchange(&attach_state, 1))
		goto out;
	ft_helper_sigmask(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&th, NULL, attach_main, NULL))
		atomic_store(&attach_state, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	errno = saved;
}

static void attach_off(void)
{
	struct sigaction cur;

	/* still ours (the program may have taken it since): async-signal-safe calls only */
	if (!sigaction(FT_ATTACH_SIG, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == attach_handler) {
		memset(&cur, 0, sizeof(cur));
		cur.sa_handler = SIG_DFL;
		sigaction(FT_ATTACH_SIG, &cur, NULL);
	}
}

/*
 * At start-up, when no control was asked for (nor refused with FTRACE_CONTROL=0): take
 * FT_ATTACH_SIG if no one has (a library loaded before us may have).  Nothing in
 * secure-execution mode.
 */
void ft_control_attach_init(void)
{
	struct sigaction sa, cur;

	if (getauxval(AT_SECURE) || FT_ATTACH_SIG > SIGRTMAX)
		return;
	if (sigaction(FT_ATTACH_SIG, NULL, &cur) ||
	    (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = attach_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(FT_ATTACH_SIG, &sa, NULL);
}

/*
 * The child of a fork has no server thread and must not remove the parent's socket.  A
 * parent that served one offers attaching in the child (a daemon forks and its parent
 * exits: it is the process to control); one that offered attaching still does (the
 * handler stays across fork).
 */
void ft_control_forked(void)
{
	const char *attach = secure_getenv("FTRACE_ATTACH");
	int served = atomic_load(&ctl_state) != CTL_NONE;

	atomic_store(&attach_state, 0);	/* it can be attached on its own */
	atomic_store(&ctl_state, CTL_NONE);	/* the server thread stayed in the parent */
	if (served && !(attach && !strcmp(attach, "0")))
		ft_control_attach_init();
	pthread_mutex_init(&ctl_mu, NULL);	/* it may have been held there at the fork */
	if (sock_fd >= 0)
		ft_fd_close_same(sock_fd, &sock_id);	/* unless the program reused the number */
	sock_fd = -1;
	sock_path[0] = 0;
}
