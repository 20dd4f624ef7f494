/* Signal handlers on an alternate stack interrupting traced code (function_graph).
   Two layouts, because the graph tracer tells a cut-back stack (longjmp) from a handler
   by comparing stack addresses:
     below  the main thread's altstack is malloc'd: below the interrupted frames;
     above  a worker thread's altstack is mapped before the thread (mmap hands out
            addresses downwards): above the interrupted frames.
   In each, the handler is entered synchronously (raise() at a known depth) and
   asynchronously (pthread_kill from another thread while the target runs traced
   calls, so it lands anywhere: in a traced function, in __fentry__'s trampoline, in
   return_to_handler). The handler calls traced functions. Output: counts only. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ALT_SIZE (256 * 1024)
#define ASYNC 200

static volatile long sink;
static volatile int handled, stop, armed;
static volatile unsigned long alt_lo, alt_hi, bad;

__attribute__((noinline)) void h_leaf(long i) { sink += i; }
__attribute__((noinline)) void h_mid(long i) { h_leaf(i); h_leaf(i + 1); }

static void on_usr1(int sig)
{
	unsigned long sp = (unsigned long)__builtin_frame_address(0);

	if (sp < alt_lo || sp >= alt_hi)
		bad++;		/* not on the alternate stack */
	h_mid(sig);
	armed = 0;
	__atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
}

__attribute__((noinline)) long leaf(long i) { sink += i; return i; }
__attribute__((noinline)) long deep(int n)
{
	if (!n) {
		raise(SIGUSR1);
		return leaf(1);
	}
	return deep(n - 1) + leaf(n);
}

__attribute__((noinline)) long calm(int n) { return n ? calm(n - 1) + leaf(n) : 0; }

__attribute__((noinline)) long busy(void)
{
	long s = 0;

	for (int i = 0; i < 50; i++)
		s += leaf(i) + calm(2 + i % 3);
	return s;
}

static void set_altstack(void *p)
{
	stack_t ss = { .ss_sp = p, .ss_size = ALT_SIZE };

	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		exit(2);
	}
	alt_lo = (unsigned long)p;
	alt_hi = alt_lo + ALT_SIZE;
}

/*
 * The target runs traced calls while a signal is on its way (armed), until the
 * signaller has seen ASYNC handlers run; in between it spins without calls, so
 * that the trace stays small however slow the machine.
 */
__attribute__((noinline)) long target_run(void)
{
	long s = 0;

	for (int i = 0; i < 5; i++)
		s += deep(4);	/* synchronous: handler on top of deep() x5 */
	while (!stop)
		if (armed)
			s += busy();
	return s;
}

struct target { pthread_t th; void *alt; long result; int above; };

static void *target_main(void *arg)
{
	struct target *tg = arg;
	char here;

	set_altstack(tg->alt);
	tg->above = (unsigned long)tg->alt > (unsigned long)&here;
	tg->result = target_run();
	return NULL;
}

/* Signal the target ASYNC times, each after the previous handler ran. */
static void signaller(pthread_t th)
{
	int base = handled;

	for (int i = 0; i < ASYNC; i++) {
		armed = 1;
		pthread_kill(th, SIGUSR1);
		while (handled < base + i + 1)
			sched_yield();
	}
	stop = 1;
}

static void *signaller_main(void *arg)
{
	while (handled < 5)	/* the synchronous ones first */
		sched_yield();
	signaller(*(pthread_t *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	const char *mode = argc > 1 ? argv[1] : "below";
	struct target tg = { 0 };
	char here;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	if (!strcmp(mode, "above")) {
		tg.alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tg.alt == MAP_FAILED || pthread_create(&tg.th, NULL, target_main, &tg) != 0)
			return 2;
		/* wait for 5 synchronous handlers, then signal asynchronously */
		while (handled < 5)
			sched_yield();
		signaller(tg.th);
		pthread_join(tg.th, NULL);
	} else {
		pthread_t s, self = pthread_self();

		tg.alt = malloc(ALT_SIZE);
		set_altstack(tg.alt);
		tg.above = (unsigned long)tg.alt > (unsigned long)&here;
		if (pthread_create(&s, NULL, signaller_main, &self) != 0)
			return 2;
		tg.result = target_run();
		pthread_join(s, NULL);
	}
	printf("%s: altstack %s the frames, handled=%d off-altstack=%lu sink-ok=%d\n", mode,
	       tg.above ? "above" : "below", handled, bad, sink != 0);
	return 0;
}
