/* Ending by a signal whose default action terminates the process (argv[1]):
     wait   traced calls, then "ready" and a loop answering "ping" with "pong" from
            inside a traced frame until stdin ends (the test signals it meanwhile)
     pipe   writes lines from a traced frame until stdout is closed (SIGPIPE)
   argv[2], if given, sets the default action of those signals first, as dash does at
   start-up and gnulib's tests do: "sigaction" or "signal"; the program checks that it is
   told the default action afterwards. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static const int term[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE };

/* Sets the signals' default action; 0 when the program is told so after. */
static int reset(const char *how)
{
	for (size_t i = 0; i < sizeof(term) / sizeof(term[0]); i++) {
		struct sigaction sa, old;

		if (!strcmp(how, "signal")) {
			if (signal(term[i], SIG_DFL) == SIG_ERR || signal(term[i], SIG_DFL) != SIG_DFL)
				return -1;
		} else {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = SIG_DFL;
			sigemptyset(&sa.sa_mask);
			if (sigaction(term[i], &sa, NULL))
				return -1;
		}
		if (sigaction(term[i], NULL, &old) || (old.sa_flags & SA_SIGINFO) ||
		    old.sa_handler != SIG_DFL)
			return -1;
	}
	return 0;
}

volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }

__attribute__((noinline)) void work(int n)
{
	for (int i = 0; i < n; i++)
		leaf(i);
}

__attribute__((noinline)) void waiter(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		leaf(1);
		printf(strcmp(line, "ping\n") ? "what\n" : "pong\n");
		fflush(stdout);
	}
}

__attribute__((noinline)) void writer(void)
{
	for (long i = 0;; i++) {
		leaf(i);
		printf("line %ld\n", i);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	if (argc > 2 && reset(argv[2])) {
		printf("not told the default action\n");
		return 1;
	}
	work(100);
	if (argc > 1 && !strcmp(argv[1], "pipe"))
		writer();
	else
		waiter();
	printf("bye\n");
	return 0;
}
