/* SPDX-License-Identifier: Apache-2.0 */
/* The trace file session and per-thread buffers (trace_buf.c). */
#ifndef FTKIT_TRACE_BUF_H
#define FTKIT_TRACE_BUF_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "core/fdutil.h"
#include "trace_format.h"
#include "trace_internal.h"

/* FTRACE_BUFFER_KB's range (format v2 uses 256 KiB to 4 MiB of it: 4 to 64 blocks) */
#define FT_BUFFER_KB_MIN	4
#define FT_BUFFER_KB_MAX	(4UL << 20)

#define FT_MAX_REG 4096		/* threads recording at the same time */

enum { FT_SESS_OFF = 0, FT_SESS_LIVE, FT_SESS_DONE };


struct ft_session {
	int fd;
	struct ft_fdid fd_id;		/* what fd names (closed after fork only if still so) */
	int state;			/* FT_SESS_* */
	uint32_t gen;			/* bumped at each open (fork child) */
	int maps_startup_done;
	uint64_t end;			/* file size (under the session lock) */
	struct ftkit_file_header hdr;
	struct ft_clock_ref clk;
	char final[PATH_MAX];		/* output name */
	char base[PATH_MAX];		/* final without the .exec<n> suffix (exec naming) */
	char part[PATH_MAX + 32];	/* live name */
	char *maps;			/* last MAPS chunk image */
	size_t maps_len;
	uint64_t nreg;			/* reg slots in use (high-water) */
	uint64_t nthreads;		/* threads that recorded */
	uint64_t lost_exited, lost_depth_exited;	/* counts of exited threads */
	struct ft_tbuf *reg[FT_MAX_REG];	/* threads the writer serves */
};

extern struct ft_session ft_sess;

/*
 * Set (trace.c) when this image was exec'd by a traced image of the same process: its
 * generation (1, 2, …) and that image's base output name.  A session whose name would be
 * that one gets ".exec<gen>" appended instead of replacing the pre-exec trace.
 */
extern unsigned ft_exec_gen;
extern char ft_exec_prev[PATH_MAX];

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
