/*
 * Stand-in for the core's ftrace.h (issue 4) while it is being written: the subset of
 * the API the tracers use, with the kernel's names. Used only by the tracer tests'
 * mock core (trace_mockcore.c); the real build uses runtime/include/ftrace.h.
 */
#ifndef FTRACE_H
#define FTRACE_H

struct ftrace_regs;
struct ftrace_ops;
typedef void (*ftrace_func_t)(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs);

struct ftrace_ops {
	ftrace_func_t func;
	unsigned long flags;
	void *private;
	struct ftrace_ops *next;
	char filter[256];
};

int register_ftrace_function(struct ftrace_ops *ops);
int unregister_ftrace_function(struct ftrace_ops *ops);
int ftrace_set_filter(struct ftrace_ops *ops, unsigned char *buf, int len, int reset);
int ftrace_set_notrace(struct ftrace_ops *ops, unsigned char *buf, int len, int reset);
unsigned long ftrace_regs_get_stack_pointer(struct ftrace_regs *fregs);

/* --- function graph --- */
#include "../../src/fgraph_api.h"
/* --- function graph --- */
#endif
