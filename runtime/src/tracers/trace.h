/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The function and function_graph tracers (trace.c) as the live control socket
 * (control.c) and the fork handlers use them; the public API is ftrace_trace.h.
 * Includes no other tracer header.
 */
#ifndef FTKIT_TRACE_H
#define FTKIT_TRACE_H

#include <stddef.h>

void ft_trace_atfork_prepare(void);
void ft_trace_atfork_parent(void);
void ft_trace_atfork_child(void);

struct ft_thread;

/* The calling thread's buffer for a marker or stack trace, NULL if it does not record. */
struct ft_thread *ft_trace_ext_thread(void);

/* Recording on/off for every thread (triggers' traceon/traceoff, finish). */
void ft_trace_pause(int off);
int ft_trace_paused(void);

/* "status" line for the control socket. */
void ft_trace_status(char *buf, size_t len);

/* The glob lists a tracer keeps (ft_trace_set_globs' list). */
enum { FT_LIST_FILTER, FT_LIST_NOTRACE, FT_LIST_GRAPH_FUNCTION, FT_LIST_GRAPH_NOTRACE, FT_NLISTS };

/* a live filter (notrace = 0) or notrace change, all or nothing; bad: the glob refused */
int ft_trace_set_globs(int list, const char *globs, char *bad, size_t badlen);

#endif
