/*
 * A minimal stand-in for the runtime core, used only by the tracer tests while
 * the real core (issue 4) is not in the tree: __fentry__ stays a real call (no
 * patching) and dispatches to every registered ops whose filter matches the
 * function's name (dladdr: link with -rdynamic). Non-PIE only (e8 sites). Lets the
 * tracer tests run on their own, independent of the core's patching.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <ftrace.h>

/* The filter is one glob, kept (as a string) in the ops' filter_hash pointer. */
static char *filter_of(struct ftrace_ops *ops)
{
	return (char *)ops->filter_hash;
}

static struct ftrace_ops *ops_list;
static __thread int in_cb __attribute__((tls_model("initial-exec")));

int register_ftrace_function(struct ftrace_ops *ops)
{
	ops->next = ops_list;
	__atomic_store_n(&ops_list, ops, __ATOMIC_RELEASE);
	return 0;
}

int unregister_ftrace_function(struct ftrace_ops *ops)
{
	for (struct ftrace_ops **p = &ops_list; *p; p = &(*p)->next)
		if (*p == ops) {
			*p = ops->next;
			return 0;
		}
	return -EINVAL;
}

int ftrace_set_filter(struct ftrace_ops *ops, const void *buf, int len, int reset)
{
	if (reset) {
		free(filter_of(ops));
		ops->filter_hash = NULL;
	}
	if (buf && len > 0) {
		free(filter_of(ops));
		ops->filter_hash = (struct ftrt_hash *)strndup(buf, (size_t)len);
	}
	return 0;
}

void ftrace_free_filter(struct ftrace_ops *ops)
{
	free(filter_of(ops));
	ops->filter_hash = NULL;
}

int ftrace_set_notrace(struct ftrace_ops *ops, const void *buf, int len, int reset)
{
	(void)ops, (void)buf, (void)len, (void)reset;
	return 0;
}

/* Does ops's filter match the function at ip? (no filter: all) */
/* The mock has no sites table: say one object has one, so the tracers stay quiet. */
/* No site table: argument specs match nothing here. */
int ftrace_for_each_function(int (*fn)(const struct ftrace_func_info *, void *), void *data)
{
	(void)fn;
	(void)data;
	return 0;
}

void ftrace_get_stats(struct ftrace_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->nr_objects = 1;
}

static int mock_match(struct ftrace_ops *o, unsigned long ip)
{
	Dl_info di;

	if (!filter_of(o))
		return 1;
	return dladdr((void *)ip, &di) && di.dli_sname && fnmatch(filter_of(o), di.dli_sname, 0) == 0;
}

int ftrt_sync_signal(void)
{
	return 0;	/* no rounds here */
}

int ftrt_ops_match(struct ftrace_ops *ops, unsigned long ip)
{
	return mock_match(ops, ip);
}

void mock_dispatch(unsigned long ret, unsigned long sp)
{
	struct ftrace_regs fr;
	unsigned long ip = ret - 5, parent = *(unsigned long *)sp;

	if (in_cb)
		return;
	fr.regs.sp = sp;
	fr.regs.full = 0;
	in_cb = 1;
	for (struct ftrace_ops *o = __atomic_load_n(&ops_list, __ATOMIC_ACQUIRE); o; o = o->next) {
		if (mock_match(o, ip))
			o->func(ip, parent, o, &fr);
	}
	in_cb = 0;
}

__asm__(
	"	.text\n"
	"	.globl __fentry__\n"
	"	.type __fentry__, @function\n"
	"__fentry__:\n"
	"	pushq %rbp\n"
	"	movq %rsp, %rbp\n"
	"	pushq %rdi\n pushq %rsi\n pushq %rdx\n pushq %rcx\n"
	"	pushq %r8\n pushq %r9\n pushq %rax\n pushq %r10\n"
	"	andq $-16, %rsp\n"
	"	movq 8(%rbp), %rdi\n"
	"	leaq 16(%rbp), %rsi\n"
	"	call mock_dispatch\n"
	"	leaq -64(%rbp), %rsp\n"
	"	popq %r10\n popq %rax\n popq %r9\n popq %r8\n"
	"	popq %rcx\n popq %rdx\n popq %rsi\n popq %rdi\n"
	"	popq %rbp\n"
	"	ret\n"
	"	.size __fentry__, .-__fentry__\n");

/* The core's ftrt_lean_call: no lean frame here (the mock passes its own), so a plain call. */
void ftrt_lean_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		    struct ftrace_regs *fregs, ftrace_func_t fn);
void ftrt_lean_call(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
		    struct ftrace_regs *fregs, ftrace_func_t fn)
{
	fn(ip, parent_ip, op, fregs);
}

/* The core's list splitting, without its C++ bracket rule (the mock's filters are plain). */
size_t ftrt_glob_item(const char *s, const char *seps);
size_t ftrt_glob_item(const char *s, const char *seps)
{
	return strcspn(s, seps);
}

/* The core's parameter-list finder, without its operator rule (the mock's names are C). */
size_t ftrt_name_plen(const char *d);
size_t ftrt_name_plen(const char *d)
{
	const char *p = strchr(d, '(');

	return p ? (size_t)(p - d) : 0;
}

/* The core's ABI-tag cutter: the mock's names are C, without tags. */
int ftrt_cut_abi_tags(char *s);
int ftrt_cut_abi_tags(char *s)
{
	(void)s;
	return 0;
}

/* The core's aliases of a function: the mock's functions have one name each. */
int ftrt_func_alias(unsigned long ip, unsigned i, const char **name, const char **symbol,
		    const char **demangled);
int ftrt_func_alias(unsigned long ip, unsigned i, const char **name, const char **symbol,
		    const char **demangled)
{
	(void)ip;
	(void)i;
	(void)name;
	(void)symbol;
	(void)demangled;
	return -ENOENT;
}

/* The core's demangler: the mock's names are C, none to demangle. */
void ftrt_demangler_want(const char *text, size_t len);
void ftrt_demangler_want(const char *text, size_t len)
{
	(void)text;
	(void)len;
}

int ftrt_have_demangler(void);
int ftrt_have_demangler(void)
{
	return 1;
}

/* The core's trap handler: the mock patches nothing and installs none. */
int ftrt_trap_on_fatal(void (*fn)(int sig));
int ftrt_trap_on_fatal(void (*fn)(int sig))
{
	(void)fn;
	return 0;
}

/* The core's sigaction interposer: the mock has none, the C library's is the raw one. */
typedef int (*ftrt_sigaction_hook_t)(int sig, const struct sigaction *act,
				     struct sigaction *old, int *ret);
void ftrt_sigaction_hook(ftrt_sigaction_hook_t fn);
void ftrt_sigaction_hook(ftrt_sigaction_hook_t fn)
{
	(void)fn;
}

int ftrt_sigaction_raw(int sig, const struct sigaction *act, struct sigaction *old);
int ftrt_sigaction_raw(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}
