/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The function graph (fgraph.c): the per-thread shadow stack of hooked return
 * addresses, and the library functions it interposes (fgraph_interpose.c).
 * Includes no other tracer header (arch.h only): the thread state (trace_buf.h) holds the
 * shadow stack by pointer, and the thread exit of trace_buf.c closes it here.
 */
#ifndef FTKIT_FGRAPH_H
#define FTKIT_FGRAPH_H

#include <stdint.h>

#include "arch/arch.h"

/* One shadow-stack frame. */
struct fgraph_frame {
	unsigned long ret;		/* real return address */
	unsigned long *slot;		/* where it lives on the stack */
	unsigned long ip;
	uint64_t calltime;
	uint32_t users;			/* graph users that accepted the call */
	uint32_t epoch;			/* fgraph_epoch at entry */
	unsigned long *lr;		/* FTRT_ARCH_RET_IN_FRAME_RECORD: where the function
					   saved return_to_handler (set while unhooked), or NULL */
};

/*
 * A frame closed as unwound while its slot may still be live on a stack the thread left
 * without the runtime seeing the switch (fgraph.c): its real return address, kept for
 * the day it returns.
 */
struct fgraph_orphan {
	unsigned long *slot;
	unsigned long ret;
};

/* fgraph.c */
void fgraph_unhook_all(void);
void fgraph_rehook_live(unsigned long cfa);
void fgraph_unwind_all(void);
void fgraph_close_all(void);	/* frames left at thread exit (pthread_cancel) */
void fgraph_thread_release(void);
void fgraph_switch_out(unsigned long *sp);	/* swapcontext/setcontext: sp = caller's */
/* return_to_handler (arch.h), the return hook, calls fgraph_return() of fgraph.c */

/* fgraph_interpose.c: the next definition of name after the runtime's (RTLD_NEXT) */
void *ft_next_sym(const char *name);

#endif
