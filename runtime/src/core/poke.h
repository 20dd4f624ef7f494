/* SPDX-License-Identifier: Apache-2.0 */
/*
 * poke.h - live patching of code under running threads (ftkit runtime).
 *
 * Owned by the live-patching work (issue 5); used by the runtime core (issue 4).
 * Design and guarantees: docs/live-patching.md.
 *
 * Three services:
 *
 *  1. ftrt_text_poke_batch(): change a batch of call sites while other threads run them
 *     (int3 + serialise protocol, SIGTRAP emulation, pages never left writable).
 *  2. Quiescence, no cooperation from program threads needed: ftrt_sync_callbacks()
 *     (SRCU-like: membarrier + per-thread counters; what unregister waits for),
 *     ftrt_sync_retired() (before releasing retired trampolines' memory) and the
 *     conservative ftrt_synchronize() (RCU-tasks-like).  They rely on what the core
 *     provides:
 *       - every code range whose execution means "inside tracing" (cloned trampolines,
 *         the shared ftrace_caller / ftrace_regs_caller, the list function and any
 *         wrapper that runs before ftrt_cb_enter()) is registered with
 *         ftrt_sync_range_add();
 *       - every call of a callback (ops->func), and the read of the slot or list that
 *         yields it, is bracketed by a raised ftrt_cb_depth on the calling thread (the
 *         trampolines do it; ftrt_cb_enter()/ftrt_cb_exit() for C code), and the
 *         trampolines skip the call when their op slot has been cleared.
 *  3. ftrt_lock()/ftrt_unlock(): the one (FIFO) lock that serialises the API (register,
 *     unregister, filters, dlopen hooks) and fork().
 * poke_sigmask.c also defines pthread_sigmask/sigprocmask/sigaction for the program so that
 * SIGTRAP is never blocked (a blocked trap kills the process).  FTRT_POKE=procmem|mprotect,
 * FTRT_SYNC_CORES=membarrier-sync-core|membarrier|signals, FTRT_SYNC_SIGNAL=n and
 * FTRT_KEEP_SIGTRAP_BLOCKED=1 override the automatic choices.
 *
 * Lock order: ftrt_lock() → internal patch lock.  ftrt_text_poke_batch() and the
 * quiescence functions may be called with or without ftrt_lock() held.
 */
#ifndef FTRT_POKE_H
#define FTRT_POKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One site to change.  len is 1..8; old/new hold len bytes. */
struct ftrt_poke {
	void *addr;
	unsigned char old[8];
	unsigned char new[8];
	unsigned char len;
};

/*
 * Change every site of the batch from old to new.
 *
 * First compares every site's current bytes with old; on any mismatch (or on a transition
 * that cannot be done safely, see below) nothing is written, *bad (if not NULL) is set to
 * the index of the offending entry, a line naming the address is written to stderr, and
 * -EINVAL is returned.  Otherwise all sites are switched so that a thread executing any of
 * them concurrently sees either the old or the new instruction, never a torn one.
 * Entries may come in any order (ascending address is fastest); they must not overlap.
 * Entries whose old equals new are skipped.
 *
 * Supported instructions (x86-64): e8 rel32 (call), e9 rel32 (jmp), 67 e8 rel32,
 * ff 15 rel32 (call through memory), 0f 1f 44 00 00 (nop5), 66 0f 1f 44 00 00 (nop6),
 * 90 (nop).  old and new are sequences of these covering len bytes.  A thread may be
 * stopped at any instruction boundary inside old (e.g. returned from a call at site+5 to the
 * 90 of "e8 rel32 90"); such a boundary must stay a boundary of new with unchanged bytes
 * after it.  Hence "66 0f 1f 44 00 00" -> "e8 rel32 90" is allowed (one-time conversion:
 * the return address is site+5 and byte 5 becomes 90 and stays), while
 * "e8 rel32 90" -> "66 0f 1f 44 00 00" is refused; toggle "e8 rel32" <-> "0f 1f 44 00 00"
 * on the first five bytes instead.
 *
 * Cost: three serialisations of all cores per batch (membarrier SYNC_CORE), not per site.
 * Returns 0 or -errno (-EINVAL bad entry, -ENOMEM, -EACCES/-EPERM when the system forbids
 * writing code, -EIO when writing failed).  Must not be called from a signal handler or a
 * callback.
 */
int ftrt_text_poke_batch(struct ftrt_poke *p, size_t n, size_t *bad);

/*
 * Write bytes inside code mappings that are no instruction and that no thread executes or
 * reads while the call runs (the CALL_OPS slots before functions, written while their site
 * is still a nop): old is compared as above (-EINVAL, *bad), then the bytes are written in
 * one pass (W^X kept as for code), without breakpoints or serialisation.  A reader that
 * comes later through a site patched afterwards sees them (that patch serialises).
 */
int ftrt_text_write_data(struct ftrt_poke *p, size_t n, size_t *bad);

/*
 * Return once no thread can still be executing code reached through sites or trampolines
 * that were unpatched before this call: every other thread of the process has been seen
 * outside every registered range and outside callbacks (ftrt_cb_depth == 0).  Threads are
 * interrupted with a real-time signal; they need not cooperate.  A thread parked inside a
 * callback keeps this waiting.
 *
 * A thread running a signal handler that interrupted a registered range counts as inside
 * (its signal frames are examined).
 * Returns 0, or -EDEADLK when called from inside a callback on this thread, or from a
 * handler that interrupted a range (it would wait for itself).
 */
int ftrt_synchronize(void);

/*
 * The cheap grace period for callbacks (SRCU-like), for trampolines that raise
 * ftrt_cb_depth as their first instruction and call their callback only if their op slot
 * is still set.  The caller has cleared the slots (or unlinked the ops from the list the
 * list function walks); this issues membarrier, so that every thread either sees the change
 * or has its raised counter seen here, then waits until every thread whose counter was
 * raised has been seen at zero (read from memory; threads never sampled before get one
 * signal, whose handler also tells where their counter is).  On return no thread runs, or
 * will run, a callback through a cleared slot; threads may still execute the trampolines'
 * own instructions: their memory is released only after ftrt_sync_retired().
 * busy (NULL: every thread whose counter is raised) narrows which threads are waited for,
 * from what a thread published (ftrt_cb_node below); it is evaluated on
 * values read after the barrier, so a frame that already held the old slot or ops is seen.
 * Without membarrier this is ftrt_synchronize().  0, -EDEADLK (inside a callback), -errno.
 */
struct ftrt_cb_view {
	int depth;		/* ftrt_cb_depth */
	uintptr_t node;		/* ftrt_cb_node */
};
/* Must a thread whose counters read v be waited for?  Async-signal-safe, no side effects. */
typedef int (*ftrt_cb_busy_fn)(const struct ftrt_cb_view *v, void *ctx);
int ftrt_sync_callbacks(ftrt_cb_busy_fn busy, void *ctx);

/*
 * Quiescence for retired ranges only (ftrt_sync_range_retire): returns 0 once no thread
 * executes code in them or is in a signal handler that interrupted such code (signal
 * frames on its stacks are examined).  Threads inside other code, callbacks included, do
 * not hold it up.  -EAGAIN if the calling thread itself is in such a handler (an API call
 * from a handler), or limit_us > 0 passed first.
 */
int ftrt_sync_retired(long limit_us);

/*
 * Every other thread waits in the signal handler, off its CPU, until ftrt_sync_unpark()
 * (those that answer within limit_us of asking).  Meanwhile the caller only writes code: a
 * parked thread may hold any lock.  Used so that the first writes to text pages (copy on
 * write) need no TLB shoot-down of CPUs running this process.  0, -EAGAIN (some run on),
 * -errno (none parked).
 */
int ftrt_sync_park(long limit_us);
/*
 * ftrt_sync_park(), sparing the threads that wait in a call a signal would cut short
 * (ftrt_sync_sleeper()): they are off their CPUs, but may wake and run at any moment, so
 * this park only saves the IPIs of running threads (a page's first write), and no code may
 * be written whole under it.
 */
int ftrt_sync_park_running(long limit_us);
void ftrt_sync_unpark(void);

/*
 * Another thread that blocks SIGTRAP (SigBlk of /proc/self/task/TID/status): one that set
 * its mask by a raw system call, sigsuspend, ppoll..., which poke_sigmask.c does not see,
 * or that runs a SIGTRAP handler of the program's.  Reaching an int3 it would be killed
 * with the process (the kernel resets a blocked trap signal to its default action).  Its
 * tid and name (16 bytes), or 0 (none, or the threads cannot be read).
 */
pid_t ftrt_sync_trap_blocker(char name[16]);
/*
 * A thread off the CPU in a system call that a signal handler would end with EINTR, even
 * under SA_RESTART (epoll_wait, poll, select, nanosleep, sigtimedwait, semop…: signal(7)):
 * its tid, or 0 (none).  Parking is optional where this matters.
 */
pid_t ftrt_sync_sleeper(void);

/*
 * Code ranges whose execution counts as "inside tracing" for ftrt_synchronize(): the
 * handler treats a thread whose interrupted PC lies in [start, start+len) as not quiescent.
 * Register a trampoline before any site can reach it; unregister it after the
 * ftrt_synchronize() that follows the unpatch, just before freeing it.
 * Returns 0, -EINVAL, -ENOSPC (more than FTRT_SYNC_MAX_RANGES live ranges).
 * Call with ftrt_lock() held (or otherwise serialised); reading is lock-free.
 */
#define FTRT_SYNC_MAX_RANGES 4096
int ftrt_sync_range_add(const void *start, size_t len);
int ftrt_sync_range_retire(const void *start);
int ftrt_sync_range_del(const void *start);

/*
 * Per-thread callback depth (initial-exec TLS: no lazy allocation, async-signal-safe).
 * Raise it before a callback (or the list walk) can run and lower it after; assembly can
 * use "movq ftrt_cb_depth@gottpoff(%rip), %rax; incl %fs:(%rax)".
 * The compiler barriers keep the increment before the call in program order; the signal
 * handler that reads it runs on the same thread, so no CPU fence is needed.
 */
extern __thread int ftrt_cb_depth __attribute__((tls_model("initial-exec")));

/*
 * Where the list function is in its walk (ftrace_core.c), published before each read that
 * can yield an ops; 0 outside a walk (saved and put back by nested walks).
 */
extern __thread uintptr_t ftrt_cb_node __attribute__((tls_model("initial-exec")));

static inline void ftrt_cb_enter(void)
{
	ftrt_cb_depth++;
	__asm__ __volatile__("" ::: "memory");
}

static inline void ftrt_cb_exit(void)
{
	__asm__ __volatile__("" ::: "memory");
	ftrt_cb_depth--;
}

/*
 * The API lock (FIFO ticket lock: a thread looping over register/unregister cannot starve
 * the others).  ftrt_lock() returns 0, or -EBUSY when called from inside a callback
 * (ftrt_cb_depth > 0) and the lock is held by someone else: waiting could deadlock against
 * an unregister that waits in ftrt_synchronize() for this very callback to finish.
 * Taken across fork() (pthread_atfork), so a child never sees a half-done update.
 */
int ftrt_lock(void);
/* Grow a long-lived buffer from old to new bytes (big ones: huge pages, populated). */
void *ftrt_big_grow(void *p, size_t old, size_t new);
void ftrt_unlock(void);

/* ---- runtime-internal (poke*.c, sync*.c) ---------------------------------------------- */

/* What the trap handler needs of one site, sorted by address; read lock-free. */
struct ftrt_poke_site {
	uintptr_t addr;
	unsigned char new[8];
	unsigned char len;
	unsigned char early;	/* bytes [early, len) are written before the int3 (0: none) */
};

/* The architecture's part (instruction rules, emulation): arch/arch.h, "live patching". */

/* Serialise all cores of the process (sync.c); used between patch phases. */
int ftrt_sync_cores(void);
/* Is ftrt_sync_cores() a membarrier, i.e. also a full memory barrier on every thread? */
int ftrt_sync_cores_barrier(void);
/* Which serialisation is in use: "membarrier-sync-core", "membarrier", "signals". */
const char *ftrt_sync_cores_method(void);
/* Which code writing method is in use: "procmem" or "mprotect". */
const char *ftrt_poke_method(void);
/* Is pc inside a registered range?  Async-signal-safe. */
int ftrt_sync_in_range(uintptr_t pc);
/* Reset state in a fork child (called from the atfork child handler). */
void ftrt_sync_atfork_child(void);

/*
 * The runtime's SIGTRAP handler (poke.c) sees every SIGTRAP: its own breakpoints, and the
 * program's (an int3, __builtin_debugtrap, googletest's --gtest_break_on_failure), which it
 * passes to the program's disposition.  fn, when set, runs just before such a trap takes the
 * default action, which ends the process (a tracer finalises its trace there; async-signal-
 * safe).  Installs the handler now, so that a trap before any patching is seen too.
 */
int ftrt_trap_on_fatal(void (*fn)(int sig));

/*
 * The program's sigaction() calls (poke_sigmask.c interposes it) go to a tracer's hook
 * first, if one is set: it returns 0 when it made the call itself (the call's result in
 * *ret), else the call goes on.  The runtime's own calls use ftrt_sigaction_raw, which
 * the hook does not see.  Async-signal-safe.
 */
struct sigaction;
typedef int (*ftrt_sigaction_hook_t)(int sig, const struct sigaction *act,
				     struct sigaction *old, int *ret);
void ftrt_sigaction_hook(ftrt_sigaction_hook_t fn);
int ftrt_sigaction_raw(int sig, const struct sigaction *act, struct sigaction *old);

#endif /* FTRT_POKE_H */
