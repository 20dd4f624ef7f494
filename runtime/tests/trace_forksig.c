// SPDX-License-Identifier: Apache-2.0
/*
 * A shell's pattern: children that exit at once, reaped by a SIGCHLD handler that calls
 * traced code, while the parent keeps forking.  The handler's calls must be recorded even
 * when the signal arrives while the parent is inside fork() (the runtime's fork window
 * records nothing): the program prints how often the handler ran.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled, reaped;

__attribute__((noinline)) void on_child(void)
{
	int st;

	while (waitpid(-1, &st, WNOHANG) > 0)
		reaped++;
}

static void handler(int sig)
{
	int saved = errno;

	(void)sig;
	handled++;
	on_child();
	errno = saved;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
	sigset_t set, old;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p < 0)
			return 1;
	}
	/* the last children: wait for their signals */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	while (reaped < n)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("handled %d\n", (int)handled);
	return 0;
}
