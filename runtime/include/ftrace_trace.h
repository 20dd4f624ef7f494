/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ftkit tracers: the function and function_graph tracers writing trace files
 * (format and controls: docs/trace-format.md).
 *
 * Normally driven by the FTRACE_* environment variables at start-up and by
 * the live-control socket; this API does the same from the program itself.
 * Not async-signal-safe (they register ops and write files). Return 0 or a
 * negative errno.
 */
#ifndef FTRACE_TRACE_H
#define FTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ftrace_tracer {
	FTRACE_TRACER_NOP = 0,
	FTRACE_TRACER_FUNCTION = 1,
	FTRACE_TRACER_FUNCTION_GRAPH = 2,
};

struct ftrace_trace_config {
	enum ftrace_tracer tracer;
	const char *filter;		/* comma-separated globs, NULL/"" = all */
	const char *notrace;		/* comma-separated globs */
	unsigned int graph_depth;	/* 0 = unlimited */
	const char *output;		/* NULL = "ftrace.dat"; "%p" → pid */
	size_t buffer_kb;		/* per thread; 0 = 16384 */
	int control;			/* also start the control socket */
	/*
	 * function_graph only (the kernel's set_graph_function / set_graph_notrace): graph
	 * only the calls made inside the functions matching graph_function (the functions
	 * and everything they call); leave out the functions matching graph_notrace and
	 * everything they call.  Comma-separated globs, NULL/"" = no such list.
	 */
	const char *graph_function;
	const char *graph_notrace;
};

/* Open the trace file and start the tracer (-EBUSY if already started). */
int ftrace_trace_start(const struct ftrace_trace_config *cfg);
/* Switch tracer / filters / depth while running. */
int ftrace_trace_set_tracer(enum ftrace_tracer tracer);
int ftrace_trace_set_filter(const char *globs);
int ftrace_trace_set_notrace(const char *globs);
int ftrace_trace_set_graph_function(const char *globs);
int ftrace_trace_set_graph_notrace(const char *globs);
int ftrace_trace_set_depth(unsigned int depth);
/*
 * Flight recorder (bytes > 0: each thread keeps its newest bytes of events, written at
 * snapshot, dump, exit and on a fatal signal) or streaming (0: every event to the file),
 * switched while running: each thread changes mode when it next starts a block.
 */
int ftrace_trace_set_ring(size_t bytes);
/*
 * function_graph: record only the calls that last at least ns nanoseconds (0: all), and
 * what they call that lasts that long (the kernel's tracing_thresh, uftrace -t).
 */
int ftrace_trace_set_time_filter(uint64_t ns);
/*
 * Record only the threads that match (the kernel's set_ftrace_pid, for threads): a
 * comma-separated list of thread ids and thread-name globs (*, ?, [...]); NULL or ""
 * records every thread.  -EINVAL for a malformed list (nothing changes).
 */
int ftrace_trace_set_threads(const char *spec);
/*
 * Triggers on function hits: "GLOB@ACTION[:COUNT][,ACTION...][;GLOB@...]" with ACTION
 * traceon, traceoff, snapshot, stacktrace, depth=N or finish (recording off when the call
 * returns); COUNT limits how often it fires.  NULL or "" removes them.  All or nothing:
 * -EINVAL (malformed), -ENODEV (a glob matches no function), nothing changes.
 */
int ftrace_trace_set_triggers(const char *spec);
/*
 * Arguments and return values (uftrace's -A / -R): "GLOB@ITEM[,ITEM...][;GLOB@...]",
 * ITEM argN, fpargN (set_args) or retval (set_retval), each with an optional /FMT[BITS]
 * (d i u x s S c f p) and %REG or %stack+N; "@FILE" reads the list from a file of the
 * caller's that no one else may write.  The function tracer records arguments with its
 * FUNC events, function_graph arguments with ENTRY and return values with EXIT.  Strings
 * (/s; /S: the text of the libstdc++ std::string at the address) are copied, at most 64
 * bytes, with a read that cannot fault.  NULL or "" stops.
 * All or nothing: -EINVAL for a malformed list (nothing changes).  The globs are matched
 * against the functions loaded when called.
 */
int ftrace_trace_set_args(const char *spec);
int ftrace_trace_set_retval(const char *spec);
/*
 * A marker in the calling thread's trace (the kernel's trace_marker): a timestamped
 * message, at most 1000 bytes (longer is cut), shown by ftrace graph as a comment among
 * the calls, by dump --chrome as an instant event and listed by report.  0, or -ENODEV
 * when not recording (not started, or disabled), -EBUSY from a signal handler that
 * interrupted the tracer on this thread when the room for such markers (16 records,
 * 1536 bytes; they are written after the interrupted event) is full, -ENOSPC when it
 * was dropped (buffer full).
 * ftrace_trace_marker formats with vsnprintf (not async-signal-safe);
 * ftrace_trace_marker_write takes the text as it is and is async-signal-safe.
 */
int ftrace_trace_marker(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ftrace_trace_marker_write(const char *text, size_t len);
/* Stop / resume recording (ops unregistered / registered again). */
int ftrace_trace_enable(int on);
/* Write a snapshot; path NULL = "<output>.snap.<n>"; the name used goes to out (also on
   failure: where it tried; "" when no trace is being written, -ENODEV). */
int ftrace_trace_snapshot(const char *path, char *out, size_t outlen);
/* Stop tracing and finalise the trace file now. */
int ftrace_trace_finish(void);

#ifdef __cplusplus
}
#endif

#endif
