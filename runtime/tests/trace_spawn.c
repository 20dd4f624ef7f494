/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts itself as a child three times with an environment of its own making, as servers
 * and build tools do: posix_spawn with {PATH=/usr/bin}, fork + execve with an empty
 * environment, and fork + environ replaced + execvp (libuv's uv_spawn). A child ("child")
 * calls work() 7 times. Prints what the children said.
 */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int work(int x)
{
	__asm__ volatile("");
	return x + 1;
}

int main(int argc, char **argv)
{
	char *const cargv[] = { argv[0], "child", NULL };
	char *const spawn_env[] = { "PATH=/usr/bin", NULL };
	char *const empty_env[] = { NULL };
	int st1 = -1, st2 = -1, st3 = -1, s = 0;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "child")) {
		for (int i = 0; i < 7; i++)
			s = work(s);
		return s == 7 ? 0 : 1;
	}
	s = work(s);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, cargv, spawn_env) == 0)
		waitpid(pid, &st1, 0);
	pid = fork();
	if (pid == 0) {
		execve("/proc/self/exe", cargv, empty_env);
		_exit(127);
	}
	waitpid(pid, &st2, 0);
	pid = fork();
	if (pid == 0) {
		extern char **environ;

		environ = (char **)spawn_env;
		execvp("/proc/self/exe", cargv);
		_exit(127);
	}
	waitpid(pid, &st3, 0);
	printf("children %d %d %d\n", WIFEXITED(st1) ? WEXITSTATUS(st1) : -1, WIFEXITED(st2) ? WEXITSTATUS(st2) : -1,
	       WIFEXITED(st3) ? WEXITSTATUS(st3) : -1);
	return 0;
}
