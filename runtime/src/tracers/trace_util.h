/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tracers' common definitions and async-signal-safe helpers (trace_util.c).
 * The bottom of the tracers: includes no other tracer header (arch.h only).
 */
#ifndef FTKIT_TRACE_UTIL_H
#define FTKIT_TRACE_UTIL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "arch/arch.h"

#define FT_TLS __attribute__((tls_model("initial-exec")))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define barrier()	__asm__ volatile("" ::: "memory")
/* what an ftrace_ops callback needs on entry from a trampoline (arch.h) */
#define FT_CALLBACK	FTRT_ARCH_CALLBACK
/*
 * A lean callback (FTRT_OPS_FL_LEAN_FRAME): a leaf that touches no vector register
 * (trace.c is built with -mgeneral-regs-only) and calls out only through
 * ftrt_arch_lean_call, which aligns the stack itself.  So it needs nothing on entry: no
 * realigning prologue, which would cost it a frame and its callee-saved registers.
 */
#define FT_LEAN_CALLBACK

void ft_msg(const char *a, const char *b);
void ft_msg_err(const char *a, const char *b, int err);
const char *ft_strerror(int err);
size_t ft_strlcpy(char *dst, const char *src, size_t size);
/*
 * Wait a second at most for the joinable thread th to end (joined: 1), else detach it
 * (0): the runtime's helper threads at exit, so that none outlives the program's.
 */
int ft_join_briefly(pthread_t th);
char *ft_utoa(char *p, unsigned long v);
/*
 * A thread's name (comm, 16 bytes) as the program sees it: under qemu-user the kernel's
 * is the emulator's ("qemu-aarch64"), which is then replaced by the program's own short
 * name (xz's threads were all named qemu-aarch64).  A name the program set is kept.
 */
void ft_fix_comm(char name[16]);
/*
 * Copy up to n bytes of this process's memory at addr without faulting (process_vm_readv
 * on ourselves, split at the page boundary so that the readable start of a range running
 * into an unmapped page still arrives): bytes copied, -1 (nothing readable) or -2 (the
 * system call is not allowed here, e.g. seccomp).  errno is kept.
 */
long ft_mem_read(void *dst, unsigned long addr, size_t n);
/* The process itself (tracer start, a fork child): the id ft_mem_read keeps. */
void ft_mem_read_self(void);

/*
 * For a thread of the runtime (writer, control server, attach), created with every signal
 * blocked so that none of the program's reaches it: unblock the core's round signal
 * (ftrt_sync_signal), which it must answer to be parked while code changes.
 */
void ft_thread_answer_rounds(void);

/*
 * The mask a helper thread of the runtime (writer, control server) is created with, in
 * place of every signal blocked: none of the program's signals, but the core's round
 * signal, chosen here by the creating thread if no round has chosen it yet, and SIGTRAP
 * (it runs no site).  A writer made with every signal blocked chose the round signal
 * itself when it ran, under the core's lock, which the first patching round held while
 * it waited for the writer to answer: a traced make stalled 1.2 s or 5.2 s before main
 * (the round's waits, 0.2 + 1 + 4 s), 3 times in 4,500 processes.
 */
void ft_helper_sigmask(sigset_t *set);

/* A glob list's error as the user reads it: -ENODEV from the core means nothing matched. */
static inline const char *ft_glob_error(int err)
{
	return err == -ENODEV ? "matches no function" : strerror(-err);
}

#endif
