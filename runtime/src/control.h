/* SPDX-License-Identifier: Apache-2.0 */
/* Live control socket (control.c; protocol in docs/trace-format.md). */
#ifndef FTKIT_CONTROL_H
#define FTKIT_CONTROL_H

#include <stddef.h>

int ft_control_start(void);
void ft_control_unlink(void);	/* async-signal-safe */
void ft_control_forked(void);
/* trace.c */
void ft_trace_status(char *buf, size_t len);

#endif
