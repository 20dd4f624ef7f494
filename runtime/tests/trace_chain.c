/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program whose signal handlers chain to the handler they replaced, as libraries and
 * crash reporters do: SIGUSR1 through signal(), SIGTERM through sigaction(). Untraced the
 * previous handler is SIG_DFL and is not called; traced it is the runtime's, and calling
 * it must not end the process. Prints what it did and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void (*old_usr1)(int);
static struct sigaction old_term;
static volatile sig_atomic_t seen;

__attribute__((noinline)) static int work(int n)
{
	__asm__ volatile("");
	return n * 2;
}

static void on_usr1(int sig)
{
	seen++;
	if (old_usr1 != SIG_DFL && old_usr1 != SIG_IGN && old_usr1 != SIG_ERR)
		old_usr1(sig);
}

static void on_term(int sig, siginfo_t *si, void *uc)
{
	seen++;
	if (old_term.sa_flags & SA_SIGINFO)
		old_term.sa_sigaction(sig, si, uc);
	else if (old_term.sa_handler != SIG_DFL && old_term.sa_handler != SIG_IGN)
		old_term.sa_handler(sig);
}

int main(void)
{
	struct sigaction sa;

	old_usr1 = signal(SIGUSR1, on_usr1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_term;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTERM, &sa, &old_term);
	raise(SIGUSR1);
	raise(SIGTERM);
	printf("handled %d, work %d\n", (int)seen, work(21));
	return 0;
}
