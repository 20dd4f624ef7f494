/* SPDX-License-Identifier: Apache-2.0 */
/* The trace file session and per-thread buffers (trace_buf.c). */
#ifndef FTKIT_TRACE_BUF_H
#define FTKIT_TRACE_BUF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "fdutil.h"
#include "trace_format.h"
#include "trace_internal.h"

/* FTRACE_BUFFER_KB's range: a page of records, to 4 GiB per thread */
#define FT_BUFFER_KB_MIN	4
#define FT_BUFFER_KB_MAX	(4UL << 20)

#define FT_MAX_REG 4096		/* threads whose chunk stays reachable for names/counts */

enum { FT_SESS_OFF = 0, FT_SESS_LIVE, FT_SESS_DONE };


struct ft_session {
	int fd;
	struct ft_fdid fd_id;		/* what fd names (closed after fork only if still so) */
	int state;			/* FT_SESS_* */
	uint32_t gen;			/* bumped at each open (fork child) */
	int maps_startup_done;
	uint64_t end;			/* file size (under the session lock) */
	uint64_t chunk_bytes;		/* size of one thread chunk */
	struct ftkit_file_header hdr;
	struct ft_clock_ref clk;
	char final[PATH_MAX];		/* output name */
	char part[PATH_MAX + 32];	/* live name */
	char *maps;			/* last MAPS chunk image */
	size_t maps_len;
	uint64_t nreg;
	uint64_t lost_exited, lost_depth_exited;	/* counts of exited threads */
	struct ft_stage *reg[FT_MAX_REG];
};

extern struct ft_session ft_sess;

int ft_session_open(const char *output, size_t buf_kb, uint32_t tracer, uint32_t depth,
		    int force_mono, int fork_child);
int ft_session_finish(int reason, int sig, int in_signal);
int ft_session_snapshot(const char *path, char *out, size_t outlen);
void ft_session_forked(void);
/* events lost, graph frames not recorded (depth), threads that recorded */
void ft_session_counts(uint64_t *lost, uint64_t *depth, uint64_t *threads);
int ft_maps_build(uint64_t at, unsigned long pad_to);
int ft_known_at_startup(unsigned long start);

#endif
