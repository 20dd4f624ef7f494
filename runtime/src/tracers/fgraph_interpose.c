// SPDX-License-Identifier: Apache-2.0
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
 * backtrace() and _Unwind_Backtrace() get the real return addresses for the duration
 * of the call.
 *
 * swapcontext() and setcontext() leave the stack: its frames are closed and unhooked
 * first (fgraph_switch_out). glibc's own switch to uc_link when a makecontext function
 * returns is internal, but that stack has no hooked frame left by then.
 *
 * std::rethrow_exception (std::future::get, std::rethrow_if_nested and
 * exception_ptr users throw through it) calls _Unwind_RaiseException itself,
 * not __cxa_throw: it is interposed too.
 *
 * Not covered: _Unwind_RaiseException called directly by other code (an
 * interposed definition of it would clash with libgcc_eh.a in programs linked
 * with -static-libgcc), pthread_cancel (its forced unwind starts inside libc and
 * stops at the first hooked return address: C++ destructors above it do not run;
 * the frames are closed at thread exit, fgraph_close_all).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "fgraph.h"
#include "trace_buf.h"

/* The next definition of name after ours (dlsym RTLD_NEXT); aborts if there is none. */
void *ft_next_sym(const char *name)
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

/* Resolved at start-up when present (a throw under memory pressure must not need dlsym). */
static cxa_throw_t real_cxa_throw;
static cxa_rethrow_t real_cxa_rethrow;
static cxa_begin_catch_t real_cxa_begin_catch;
static pthread_exit_t real_pthread_exit;
static backtrace_t real_backtrace;
typedef void (*rethrow_exception_t)(void *);
static rethrow_exception_t real_rethrow_exception;
typedef int (*swapcontext_t)(ucontext_t *, const ucontext_t *);
typedef int (*setcontext_t)(const ucontext_t *);
static swapcontext_t real_swapcontext;
static setcontext_t real_setcontext;

#define RETHROW_EXCEPTION "_ZSt17rethrow_exceptionNSt15__exception_ptr13exception_ptrE"

__attribute__((constructor)) static void interpose_init(void)
{
	real_cxa_throw = (cxa_throw_t)dlsym(RTLD_NEXT, "__cxa_throw");
	real_cxa_rethrow = (cxa_rethrow_t)dlsym(RTLD_NEXT, "__cxa_rethrow");
	real_cxa_begin_catch = (cxa_begin_catch_t)dlsym(RTLD_NEXT, "__cxa_begin_catch");
	real_pthread_exit = (pthread_exit_t)dlsym(RTLD_NEXT, "pthread_exit");
	real_backtrace = (backtrace_t)dlsym(RTLD_NEXT, "backtrace");
	real_rethrow_exception = (rethrow_exception_t)dlsym(RTLD_NEXT, RETHROW_EXCEPTION);
	real_swapcontext = (swapcontext_t)dlsym(RTLD_NEXT, "swapcontext");
	real_setcontext = (setcontext_t)dlsym(RTLD_NEXT, "setcontext");
}

/* The caller's frames are at or above our CFA (its stack pointer before the call). */
int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	swapcontext_t real = real_swapcontext;

	if (!real)
		real = real_swapcontext = (swapcontext_t)ft_next_sym("swapcontext");
	if (ft_cur.depth)
		fgraph_switch_out(__builtin_dwarf_cfa());
	return real(oucp, ucp);
}

int setcontext(const ucontext_t *ucp)
{
	setcontext_t real = real_setcontext;

	if (!real)
		real = real_setcontext = (setcontext_t)ft_next_sym("setcontext");
	if (ft_cur.depth)
		fgraph_switch_out(__builtin_dwarf_cfa());
	return real(ucp);
}

void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
	cxa_throw_t real = real_cxa_throw;

	if (!real)
		real = real_cxa_throw = (cxa_throw_t)ft_next_sym("__cxa_throw");
	if (ft_cur.depth)
		fgraph_unhook_all();
	real(obj, tinfo, dest);
	__builtin_unreachable();
}

void __cxa_rethrow(void)
{
	cxa_rethrow_t real = real_cxa_rethrow;

	if (!real)
		real = real_cxa_rethrow = (cxa_rethrow_t)ft_next_sym("__cxa_rethrow");
	if (ft_cur.depth)
		fgraph_unhook_all();
	real();
	__builtin_unreachable();
}

/*
 * std::rethrow_exception(std::exception_ptr): the class is not trivially copyable, so the
 * argument is passed by invisible reference (Itanium C++ ABI): one pointer, forwarded.
 */
void ft_rethrow_exception(void *ep) __asm__(RETHROW_EXCEPTION);

void ft_rethrow_exception(void *ep)
{
	rethrow_exception_t real = real_rethrow_exception;

	if (!real)
		real = real_rethrow_exception = (rethrow_exception_t)ft_next_sym(RETHROW_EXCEPTION);
	if (ft_cur.depth)
		fgraph_unhook_all();
	real(ep);
	__builtin_unreachable();
}

void *__cxa_begin_catch(void *exc)
{
	cxa_begin_catch_t real = real_cxa_begin_catch;

	if (!real)
		real = real_cxa_begin_catch = (cxa_begin_catch_t)ft_next_sym("__cxa_begin_catch");
	if (ft_cur.depth)
		fgraph_rehook_live((unsigned long)__builtin_dwarf_cfa());
	return real(exc);
}

void pthread_exit(void *ret)
{
	pthread_exit_t real = real_pthread_exit;

	if (!real)
		real = real_pthread_exit = (pthread_exit_t)ft_next_sym("pthread_exit");
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
		real = (backtrace_t)ft_next_sym("backtrace");
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

/*
 * _Unwind_Backtrace (libgcc's DWARF unwinder, used directly by crash reporters and
 * profilers) reads return addresses from the stack: like backtrace(), run it with
 * the real ones back in place. Weak: a program that links libgcc_eh statically keeps
 * its own definition (and sees return_to_handler). The real one is in libgcc_s, which
 * a C program calling only this function does not load by itself (our definition
 * satisfies the link): load it then, as glibc's backtrace() does.
 */
struct _Unwind_Context;
typedef int (*unwind_trace_fn)(struct _Unwind_Context *, void *);
typedef int (*unwind_backtrace_t)(unwind_trace_fn, void *);

struct unwind_skip {
	unwind_trace_fn fn;
	void *arg;
	int skip;
};

/* Hide our own frame (the first one reported) from the caller's callback. */
static int unwind_skip_cb(struct _Unwind_Context *ctx, void *arg)
{
	struct unwind_skip *s = arg;

	if (s->skip) {
		s->skip = 0;
		return 0;	/* _URC_NO_REASON */
	}
	return s->fn(ctx, s->arg);
}

__attribute__((weak)) int _Unwind_Backtrace(unwind_trace_fn fn, void *arg)
{
	static unwind_backtrace_t real;
	struct unwind_skip s = { fn, arg, 1 };
	int r;

	if (!real) {
		unwind_backtrace_t p = (unwind_backtrace_t)dlsym(RTLD_NEXT, "_Unwind_Backtrace");

		if (!p) {
			void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);

			p = h ? (unwind_backtrace_t)dlsym(h, "_Unwind_Backtrace") : NULL;
		}
		if (!p)
			return 5;	/* _URC_END_OF_STACK: nothing to unwind with */
		real = p;
	}
	if (!ft_cur.depth)
		return real(unwind_skip_cb, &s);
	fgraph_unhook_all();
	r = real(unwind_skip_cb, &s);
	fgraph_rehook_live(0);
	return r;
}
