/* SPDX-License-Identifier: Apache-2.0 */
/* Live control socket (control.c; protocol in docs/trace-format.md). */
#ifndef FTKIT_CONTROL_H
#define FTKIT_CONTROL_H

#include <stddef.h>

int ft_control_start(void);
void ft_control_unlink(void);	/* async-signal-safe */
void ft_control_sweep(void);	/* sockets of dead processes; not async-signal-safe */
void ft_control_forked(void);
/* trace.c */
void ft_trace_status(char *buf, size_t len);
/* Drop the events the threads hold (live `clear`); -ENODEV if not tracing. */
int ft_session_clear(void);
/* a live filter (notrace = 0) or notrace change, all or nothing; bad: the glob refused */
/* The glob lists a tracer keeps (ft_trace_set_globs' list). */
enum { FT_LIST_FILTER, FT_LIST_NOTRACE, FT_LIST_GRAPH_FUNCTION, FT_LIST_GRAPH_NOTRACE, FT_NLISTS };

int ft_trace_set_globs(int list, const char *globs, char *bad, size_t badlen);

#endif
