// SPDX-License-Identifier: Apache-2.0
/*
 * poke_sigmask.c - keep SIGTRAP deliverable.
 *
 * A thread that reaches a site while a batch is being written executes an int3.  If that
 * thread blocks SIGTRAP, the kernel cannot run the handler that finishes the instruction: it
 * resets SIGTRAP to its default action and the process dies.  Blocking SIGTRAP never has
 * another effect (a trap is always forced), yet threads routinely block "every signal"
 * (thread pools that leave signals to one thread, handlers installed with a full sa_mask).
 *
 * The runtime is linked into the executable, so these definitions of pthread_sigmask(),
 * sigprocmask() and sigaction() take precedence over the C library's: they remove SIGTRAP
 * from the signals to block and pass everything else on unchanged (to the next definition,
 * e.g. a sanitizer's interceptor, then the C library).  FTRT_KEEP_SIGTRAP_BLOCKED=1 turns
 * this off.  A tracer may see the program's sigaction() calls first (ftrt_sigaction_hook);
 * the runtime's own calls go to ftrt_sigaction_raw.  Masks set by other means (sigsuspend,
 * pselect, ppoll, signalfd, raw system calls, the C library's internal use) are not
 * changed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "poke.h"

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
typedef int (*action_fn)(int, const struct sigaction *, struct sigaction *);

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static mask_fn _Atomic next_pthread_sigmask, next_sigprocmask;
static action_fn _Atomic next_sigaction;
static atomic_int keep;			/* 0 unknown, 1 strip, 2 keep SIGTRAP blocked */

/*
 * Resolved in a constructor (dlsym is not async-signal-safe, the wrappers must be), or at
 * the first call if that comes earlier (another constructor: not in a signal handler).
 */
__attribute__((constructor(101))) static void sigmask_init(void)
{
	const char *env = secure_getenv("FTRT_KEEP_SIGTRAP_BLOCKED");

	atomic_store(&keep, env && *env && strcmp(env, "0") ? 2 : 1);
	atomic_store(&next_pthread_sigmask, (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask"));
	atomic_store(&next_sigprocmask, (mask_fn)dlsym(RTLD_NEXT, "sigprocmask"));
	atomic_store(&next_sigaction, (action_fn)dlsym(RTLD_NEXT, "sigaction"));
}

static void resolve(void)
{
	if (!atomic_load(&keep))
		sigmask_init();
}

static const sigset_t *strip(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK || atomic_load(&keep) == 2 || !sigismember(set, SIGTRAP))
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

/* Without a next definition (static link): the system call,
 * leaving the C library's two internal signals alone as it does. */
static int raw_mask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (set && how != SIG_UNBLOCK) {
		copy = *set;
		sigdelset(&copy, SIGRTMIN - 2);
		sigdelset(&copy, SIGRTMIN - 1);
		set = &copy;
	}
	return (int)syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8);
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn next;
	sigset_t copy;

	resolve();
	next = atomic_load(&next_pthread_sigmask);
	set = strip(how, set, &copy);
	if (next)
		return next(how, set, old);
	return raw_mask(how, set, old) ? errno : 0;
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	mask_fn next;
	sigset_t copy;

	resolve();
	next = atomic_load(&next_sigprocmask);
	set = strip(how, set, &copy);
	if (next)
		return next(how, set, old);
	return raw_mask(how, set, old);
}

static ftrt_sigaction_hook_t _Atomic action_hook;

void ftrt_sigaction_hook(ftrt_sigaction_hook_t fn)
{
	atomic_store(&action_hook, fn);
}

int ftrt_sigaction_raw(int sig, const struct sigaction *act, struct sigaction *old)
{
	action_fn next;
	struct sigaction copy;

	resolve();
	next = atomic_load(&next_sigaction);
	if (act && atomic_load(&keep) != 2 && sigismember(&act->sa_mask, SIGTRAP)) {
		copy = *act;
		sigdelset(&copy.sa_mask, SIGTRAP);
		act = &copy;
	}
	if (next)
		return next(sig, act, old);
	return __sigaction(sig, act, old);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	ftrt_sigaction_hook_t hook = atomic_load(&action_hook);
	int ret;

	if (hook && !hook(sig, act, old, &ret))
		return ret;
	return ftrt_sigaction_raw(sig, act, old);
}
