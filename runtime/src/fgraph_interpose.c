// SPDX-License-Identifier: MIT
/*
 * Interposed C++ exception and thread-exit entry points (fgraph.c explains why).
 *
 * Linked from libftrt.a, these definitions are in the executable, so they win
 * over libstdc++'s and libc's for every caller that goes through the dynamic
 * symbol table (the program and the shared libraries it loads). Each one fixes
 * the shadow stack of the calling thread and then calls the next definition
 * (dlsym RTLD_NEXT). Without any graph frame on the thread they cost one TLS
 * load.
 *
 * backtrace() gets the real return addresses for the duration of the call.
 *
 * Not covered: _Unwind_RaiseException called directly (not through
 * __cxa_throw), std::rethrow_exception, pthread_cancel (the forced unwind
 * starts in a signal handler inside libc).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

static void *next_sym(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		ft_msg("fatal: cannot find the real ", name);
		abort();
	}
	return p;
}

typedef void (*cxa_throw_t)(void *, void *, void (*)(void *));
typedef void (*cxa_rethrow_t)(void);
typedef void *(*cxa_begin_catch_t)(void *);
typedef void (*pthread_exit_t)(void *);
typedef int (*backtrace_t)(void **, int);

void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
	static cxa_throw_t real;

	if (!real)
		real = (cxa_throw_t)next_sym("__cxa_throw");
	if (ft_cur.depth)
		fgraph_unhook_all();
	real(obj, tinfo, dest);
	__builtin_unreachable();
}

void __cxa_rethrow(void)
{
	static cxa_rethrow_t real;

	if (!real)
		real = (cxa_rethrow_t)next_sym("__cxa_rethrow");
	if (ft_cur.depth)
		fgraph_unhook_all();
	real();
	__builtin_unreachable();
}

void *__cxa_begin_catch(void *exc)
{
	static cxa_begin_catch_t real;

	if (!real)
		real = (cxa_begin_catch_t)next_sym("__cxa_begin_catch");
	if (ft_cur.depth)
		fgraph_rehook_live((unsigned long)__builtin_dwarf_cfa());
	return real(exc);
}

void pthread_exit(void *ret)
{
	static pthread_exit_t real;

	if (!real)
		real = (pthread_exit_t)next_sym("pthread_exit");
	if (ft_cur.depth)
		fgraph_unwind_all();
	real(ret);
	__builtin_unreachable();
}

/*
 * glibc's backtrace() unwinds with return addresses: show it the real ones for
 * the time of the call (the frames are hooked again afterwards).
 */
int backtrace(void **buf, int size)
{
	static backtrace_t real;
	int n;

	if (!real)
		real = (backtrace_t)next_sym("backtrace");
	if (!ft_cur.depth)
		return real(buf, size);
	fgraph_unhook_all();
	n = real(buf, size);
	fgraph_rehook_live(0);
	/* drop our own frame (the untraced path above is a tail call: no frame) */
	if (n > 0)
		memmove(buf, buf + 1, (size_t)(n - 1) * sizeof(*buf));
	return n > 0 ? n - 1 : n;
}
