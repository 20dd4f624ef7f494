/*
 * exec finalises the trace: the calls before it are in a complete file (reason exec).
 * Argument "fail": the exec fails and the program goes on (untraced) and exits normally.
 * "self": it execs itself (same pid) with "again", which calls work() 4 times and execs
 * itself with "last", which calls it 3 times and prints whether FTRACE_EXEC is in its
 * environment.  "forkexec": a child execs it with "last" (as a shell runs a command) while
 * the parent waits, then calls work() twice more; "vforkexec": the same with vfork (dash);
 * "chain": it execs itself with "forkexec"; "system": system() runs it with "last", then
 * work() twice more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) void work(int i) { sink += i; }

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "last")) {
		for (int i = 0; i < 3; i++)
			work(i);
		printf("last: FTRACE_EXEC %s\n", getenv("FTRACE_EXEC") ? "set" : "unset");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "again")) {
		for (int i = 0; i < 4; i++)
			work(i);
		execl("/proc/self/exe", argv[0], "last", (char *)NULL);
		perror("execl");
		return 1;
	}
	for (int i = 0; i < 5; i++)
		work(i);
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "chain")) {	/* this image execs one that forkexecs */
		execl("/proc/self/exe", argv[0], "forkexec", (char *)NULL);
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "system")) {	/* a child no exec naming reaches */
		char self[4096], cmd[4200];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			return 1;
		self[n] = 0;
		snprintf(cmd, sizeof(cmd), "'%s' last", self);
		if (system(cmd) != 0)
			return 1;
		work(5);
		work(6);
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "forkexec") || !strcmp(argv[1], "vforkexec"))) {
		int st;
		pid_t pid = argv[1][0] == 'v' ? vfork() : fork();

		if (pid == 0) {
			execl("/proc/self/exe", argv[0], "last", (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		work(5);
		work(6);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "self")) {
		char *const av[] = { argv[0], "again", NULL };

		execv("/proc/self/exe", av);
		perror("execv");
		return 1;
	}
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "fail")) {
		execl("/nonexistent/ftkit-test", "x", (char *)NULL);
		for (int i = 0; i < 5; i++)
			work(i);
		printf("exec failed, sink %d\n", sink);
		return 0;
	}
	execlp("true", "true", (char *)NULL);
	perror("execlp");
	return 1;
}
