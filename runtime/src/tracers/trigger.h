/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Triggers on function hits (trigger.c): what the control socket and the start-up
 * controls call; the public API is ftrace_trace_set_triggers() (ftrace_trace.h).
 */
#ifndef FTKIT_TRIGGER_H
#define FTKIT_TRIGGER_H

#include <stddef.h>

/* Replace the triggers, all or nothing; bad gets the item refused. */
int ft_set_triggers(const char *spec, char *bad, size_t badlen);
/* The same at start-up: a trigger whose glob matches nothing yet waits for a later library. */
int ft_set_triggers_startup(const char *spec, char *bad, size_t badlen);
/* Objects with call sites were loaded (ftrt_objects_added): waiting triggers try again. */
void ft_triggers_added(void);

#endif
