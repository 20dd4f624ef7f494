/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live control socket (control.c; protocol in docs/trace-format.md).  Started and
 * stopped by the tracer (trace.c); its commands go to the tracer through trace.h
 * and ftrace_trace.h.  Includes no other tracer header.
 */
#ifndef FTKIT_CONTROL_H
#define FTKIT_CONTROL_H

int ft_control_start(void);
void ft_control_unlink(void);	/* async-signal-safe */
void ft_control_sweep(void);	/* sockets of dead processes; not async-signal-safe */
void ft_control_stop(void);	/* at exit: end the server thread; not async-signal-safe */
void ft_control_forked(void);
void ft_control_attach_init(void);	/* attach on demand (`ftrace live PID`) */

#endif
