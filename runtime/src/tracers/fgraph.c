// SPDX-License-Identifier: Apache-2.0
/*
 * Function graph: return hooking with a per-thread shadow stack (kernel fgraph
 * model, see fgraph_api.h in ftrace.h).
 *
 * Each graph user registers its own ftrace_ops (its filters) whose callback is
 * fgraph_entry(). At a traced function's entry, the return-address slot is the
 * stack pointer the trampoline saw (ftrace_regs_get_stack_pointer). The entry
 * hook pushes {real return address, slot, ip, time, users} and writes
 * return_to_handler into the slot. When the function returns there,
 * fgraph_return() pops the frame, runs the users' return callbacks and hands
 * back the real return address.
 *
 * Frames that are left without returning are detected and closed as
 * "unwound":
 *  - longjmp/siglongjmp: at the next entry, frames whose slot is below the new
 *    slot are dead (the stack has been cut back above them); at a return,
 *    every frame pushed after the returning one is dead;
 *  - C++ exceptions: __cxa_throw/__cxa_rethrow put every real return address
 *    back (the unwinder reads them), __cxa_begin_catch closes the frames below
 *    the catching one and re-hooks the survivors (fgraph_interpose.c);
 *  - pthread_exit: all frames are restored and closed before the real one runs.
 * Tail calls need nothing: the callee's slot holds return_to_handler, which
 * is saved as its "real" return address, so both frames return in turn.
 *
 * Stack switches (swapcontext, coroutines): the kernel keeps a shadow stack per
 * task, but a user-space context has no identity to hang one on (any
 * ucontext_t, copied at will, or a coroutine library's own registers). So:
 *  - swapcontext/setcontext (interposed) close every open frame as unwound and
 *    put its real return address back: a suspended function returns directly
 *    when its context resumes, untraced; the calls it makes then are graphed;
 *  - a switch the runtime does not see looks like a longjmp: frames closed as
 *    unwound that way keep their {slot, real return address} in a per-thread
 *    table ("orphans") that a return without a shadow frame searches, so they
 *    still return to the right place. A full table gives its oldest entry's
 *    address back to its slot (read and written so that a stack unmapped since
 *    cannot fault).
 *
 * A thread whose shadow stack is full stops hooking deeper calls (counted in
 * the trace's lost_depth); nothing is lost above.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ftrace.h>

#include "core/ftrt_core.h"
#include "fgraph_fast.h"

#define SHADOW_BYTES (FGRAPH_SHADOW_DEPTH * sizeof(struct fgraph_frame))
#define ORPHANS 1024
#define MAP_BYTES (SHADOW_BYTES + ORPHANS * sizeof(struct fgraph_orphan))

struct fgraph_user fgraph_users[FGRAPH_MAX_USERS];
uint32_t fgraph_epoch;
static pthread_mutex_t fgraph_mu = PTHREAD_MUTEX_INITIALIZER;

/* What return_to_handler calls: fgraph_return, or the fused user's return (fgraph_fast.h). */
__attribute__((visibility("hidden"))) fgraph_return_t fgraph_return_hook = fgraph_return;
static struct fgraph_ops *fgraph_fused;

unsigned long long ftrace_graph_clock(void)
{
	return ft_clock_read();
}

static struct fgraph_frame *shadow_get(struct ft_thread *t)
{
	void *p;

	if (likely(t->shadow))
		return t->shadow;
	if (t->shadow_failed)
		return NULL;
	{
		int saved_errno = errno;	/* inside a traced function: the program's errno */

		p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		errno = saved_errno;
	}
	if (p == MAP_FAILED) {
		t->shadow_failed = 1;
		return NULL;
	}
	t->depth = 0;
	t->norphans = 0;
	t->orphans = (struct fgraph_orphan *)((char *)p + SHADOW_BYTES);
	t->shadow = p;
	return p;
}

/*
 * Run the return callbacks of frame f (already popped; depth = its index), with t->in_ret
 * raised by the caller (their own calls are not graphed).  Inline: fgraph_return, the
 * path of every return, then builds the record once and calls no function of its own.
 */
static inline __attribute__((always_inline)) void frame_close_raised(struct fgraph_frame *f,
		int depth, unsigned int flags, uint64_t now, const struct ftrace_ret_regs *rr)
{
	struct ftrace_graph_ret r = {
		.func = f->ip,
		.depth = depth,
		.flags = flags,
		.calltime = f->calltime,
		.rettime = now,
		.retaddr = f->ret,
		.ret_regs = rr,
		.retval = rr ? ftrace_ret_regs_get_value(rr) : 0,
	};
	uint32_t users = f->users;

	while (users) {
		int i = __builtin_ctz(users);
		struct fgraph_ops *g;

		users &= users - 1;
		g = __atomic_load_n(&fgraph_users[i].gops, __ATOMIC_ACQUIRE);
		if (g && fgraph_users[i].epoch <= f->epoch && g->retfunc)
			g->retfunc(&r, g);
	}
}

/* frame_close_raised from anywhere. */
static void frame_close(struct fgraph_frame *f, int depth, unsigned int flags, uint64_t now,
			const struct ftrace_ret_regs *rr)
{
	struct ft_thread *t = &ft_cur;

	t->in_ret++;
	barrier();
	frame_close_raised(f, depth, flags, now, rr);
	barrier();
	t->in_ret--;
}

/*
 * Words that may lie on a stack unmapped since (a coroutine's, freed by the program):
 * process_vm_readv/writev on ourselves fail there instead of faulting, one system call
 * for many words. Where they are not allowed (seccomp), plain access. Slow paths only;
 * the program's errno is kept. ok[i] tells whether word i was transferred.
 */
#define VM_BATCH 64

static void vm_words(pid_t pid, unsigned long *const *addr, unsigned long *val, char *ok, int n,
		     int write)
{
	struct iovec l[VM_BATCH], r[VM_BATCH];
	int saved_errno = errno, i = 0;

	while (i < n) {
		int m = n - i < VM_BATCH ? n - i : VM_BATCH, done;
		ssize_t got;

		for (int j = 0; j < m; j++) {
			l[j] = (struct iovec){ &val[i + j], sizeof(*val) };
			r[j] = (struct iovec){ addr[i + j], sizeof(*val) };
		}
		got = write ? process_vm_writev(pid, l, (unsigned long)m, r, (unsigned long)m, 0)
			    : process_vm_readv(pid, l, (unsigned long)m, r, (unsigned long)m, 0);
		if (got < 0 && (errno == ENOSYS || errno == EPERM || errno == EACCES)) {
			for (; i < n; i++) {
				if (write)
					*addr[i] = val[i];
				else
					val[i] = *addr[i];
				ok[i] = 1;
			}
			break;
		}
		/* transfers stop at the first word that is not mapped: skip it */
		done = got < 0 ? 0 : (int)(got / (ssize_t)sizeof(*val));
		for (int j = 0; j < done; j++)
			ok[i + j] = 1;
		i += done;
		if (i < n && done < m)
			ok[i++] = 0;
	}
	errno = saved_errno;
}

/*
 * A saved return address that is return_to_handler, signed or not (arm64 pac-ret: a
 * function signs what it saves in its frame record).
 */
static inline int is_handler(unsigned long v)
{
	return ftrt_arch_ret_strip(v) == (unsigned long)return_to_handler;
}

/*
 * What to store over stored, a return address frame f's function saved in its frame
 * record: v, signed as stored was (arm64 pac-ret, with the function's entry sp, slot + 1).
 * Without pointer authentication (x86-64, or not enabled) both are v.
 */
static inline unsigned long ret_like(unsigned long v, unsigned long stored,
				     const struct fgraph_frame *f)
{
	return ftrt_arch_ret_resign(v, stored, (unsigned long)(f->slot + 1), f->ip);
}

/*
 * FTRT_ARCH_RET_IN_FRAME_RECORD: find where each hooked function saved return_to_handler,
 * walking the frame records {fp, lr} from the caller's frame outwards.  A record at R
 * belongs to the innermost hooked function whose entry sp (slot + 1) is above R.  The
 * walk stays between our own frame and the outermost hooked function's entry sp, memory
 * of the live stack, and stops at a record that does not go outwards.
 */
static __attribute__((noinline)) void find_saved_returns(struct ft_thread *t)
{
	unsigned long *r = __builtin_frame_address(0);
	unsigned long *top = t->shadow[0].slot + 1;
	int d = t->depth - 1;

	for (int n = 0; n < 100000 && d >= 0 && r && r + 2 <= top; n++) {
		unsigned long *next = (unsigned long *)r[0];

		if (is_handler(r[1])) {
			while (d > 0 && t->shadow[d].slot + 1 <= r)
				d--;
			if (t->shadow[d].slot + 1 > r)
				t->shadow[d].lr = &r[1];
		}
		if (next <= r || ((unsigned long)next & 15))
			break;
		r = next;
	}
}

/*
 * Put the real return addresses of n frames back in their slots where these are still
 * hooked (newest first: of a tail call's frames, the caller's address is written last).
 */
static void unhook_frames(pid_t pid, struct fgraph_frame *const *f, int n)
{
	/* a frame's slot, and where the function saved the address (f->lr) if known */
	unsigned long *addr[2 * VM_BATCH], val[2 * VM_BATCH];
	const struct fgraph_frame *of[2 * VM_BATCH];
	char ok[2 * VM_BATCH];

	for (int i = 0; i < n; i += VM_BATCH) {
		int m = n - i < VM_BATCH ? n - i : VM_BATCH, k = 0, w = 0;

		for (int j = 0; j < m; j++) {
			of[k] = f[i + j];
			addr[k++] = f[i + j]->slot;
			if (f[i + j]->lr && f[i + j]->lr != f[i + j]->slot) {
				of[k] = f[i + j];
				addr[k++] = f[i + j]->lr;
			}
		}
		vm_words(pid, addr, val, ok, k, 0);
		for (int j = 0; j < k; j++)
			if (ok[j] && is_handler(val[j])) {
				addr[w] = addr[j];
				val[w++] = ret_like(of[j]->ret, val[j], of[j]);
			}
		vm_words(pid, addr, val, ok, w, 1);
	}
}

static void unhook_slot(unsigned long *slot, unsigned long ret)
{
	struct fgraph_frame fr = { .slot = slot, .ret = ret }, *f = &fr;

	/* getpid() not cached: a child of a bare clone() would write its parent */
	unhook_frames(getpid(), &f, 1);
}

static void orphan_del(struct ft_thread *t, int i)
{
	t->norphans--;
	memmove(&t->orphans[i], &t->orphans[i + 1],
		(size_t)(t->norphans - i) * sizeof(t->orphans[0]));
}

/* Orphan i leaves the table: its return must still find its real address. */
static void orphan_release(struct ft_thread *t, int i)
{
	struct fgraph_orphan o = t->orphans[i];
	int d;

	orphan_del(t, i);
	for (d = 0; d < t->depth; d++) {
		struct fgraph_frame *f = &t->shadow[d];

		if (f->slot != o.slot)
			continue;
		/*
		 * A live frame hooked the slot since: a tail call from the orphan (which
		 * continues to the orphan's address) or a new call (the orphan is dead).
		 */
		if (f->ret == (unsigned long)return_to_handler)
			f->ret = o.ret;
		return;
	}
	unhook_slot(o.slot, o.ret);
}

static void orphan_add(struct ft_thread *t, const struct fgraph_frame *f)
{
	int i;

	/* an older record of this slot is dead: a call wrote the slot since (not a tail call) */
	if (f->ret != (unsigned long)return_to_handler)
		for (i = t->norphans - 1; i >= 0; i--)
			if (t->orphans[i].slot == f->slot)
				orphan_del(t, i);
	if (t->norphans == ORPHANS)
		orphan_release(t, 0);
	t->orphans[t->norphans].slot = f->slot;
	t->orphans[t->norphans].ret = f->ret;
	t->norphans++;
}

/* Say once per process that the graph could not follow a thread through a switch. */
static void switch_note(int *told, const char *how, const char *what)
{
	char buf[160], num[24];
	size_t n;

	if (__atomic_exchange_n(told, 1, __ATOMIC_RELAXED))
		return;
	ft_utoa(num, (unsigned long)gettid());
	n = ft_strlcpy(buf, "function_graph: stack switch (", sizeof(buf));
	n += ft_strlcpy(buf + n, how, sizeof(buf) - n);
	n += ft_strlcpy(buf + n, ") in thread ", sizeof(buf) - n);
	ft_strlcpy(buf + n, num, sizeof(buf) - n);
	ft_msg(buf, what);
}

enum { POP_DEAD, POP_RESTORE, POP_ORPHAN };

/*
 * Pop frames above index keep (exclusive) as unwound at time now, most recent first.
 * how: POP_DEAD (their slots are gone or hold the real addresses already), POP_RESTORE
 * (put the real return addresses back), POP_ORPHAN (believed dead, but they may be live
 * on a stack left by an unseen switch: keep their addresses).
 */
static void pop_unwound_at(struct ft_thread *t, int keep, int how, uint64_t now)
{
	if (how == POP_ORPHAN)
		for (int d = keep; d < t->depth; d++)	/* oldest first */
			orphan_add(t, &t->shadow[d]);
	while (t->depth > keep) {
		int d = t->depth - 1;
		struct fgraph_frame f = t->shadow[d];

		/* the slot may be the frame record's word (arm64): then it is f.lr's to write */
		if (how == POP_RESTORE && f.lr != f.slot && *f.slot == (unsigned long)return_to_handler)
			*f.slot = f.ret;
		if (how == POP_RESTORE && f.lr && is_handler(*f.lr))
			*f.lr = ret_like(f.ret, *f.lr, &f);
		t->depth = d;
		barrier();
		frame_close(&f, d, FGRAPH_RET_UNWOUND, now, NULL);
	}
}

static void pop_unwound(struct ft_thread *t, int keep, int how)
{
	pop_unwound_at(t, keep, how, ft_clock_read());
}

/* Is addr on this thread's alternate signal stack while we are running on it? */
static int on_altstack(unsigned long addr)
{
	stack_t ss;

	if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	return addr >= (unsigned long)ss.ss_sp && addr < (unsigned long)ss.ss_sp + ss.ss_size;
}

/*
 * Frames whose slot is below the slot of a new call are dead: the stack was
 * cut back above them (longjmp). A frame at the very same slot is dead too
 * unless the slot still holds return_to_handler (a tail call from it). A
 * signal handler on an alternate stack is the one exception: its frames may
 * be above the interrupted ones.
 */
static void drop_stale(struct ft_thread *t, unsigned long *slot)
{
	int d = t->depth, alt = -1;

	while (d > 0) {
		struct fgraph_frame *f = &t->shadow[d - 1];

		if (f->slot > slot)
			break;
		if (f->slot == slot && *slot == (unsigned long)return_to_handler)
			break;
		if (f->slot < slot) {
			if (alt < 0)
				alt = on_altstack((unsigned long)slot);
			if (alt && !on_altstack((unsigned long)f->slot))
				break;
		}
		d--;
	}
	if (d < t->depth)
		pop_unwound(t, d, POP_ORPHAN);
}


/*
 * The body of fgraph_entry, run with t->in_ret raised: a signal handler that
 * interrupts it (or fgraph_return) on this thread, between reading the clock,
 * recording the entry, pushing the shadow frame and hooking the slot, must not
 * push frames of its own (it would overwrite the half-built frame and record
 * out of order), so its traced calls are not graphed; they are counted with
 * the frames over depth. A handler that runs anywhere else nests normally.
 * The same guard keeps the entry callbacks' own calls (traced code) out of the graph.
 */
static void fgraph_entry_guarded(struct ft_thread *t, struct fgraph_ops *gops, int idx,
				 unsigned long ip, unsigned long *slot, struct ftrace_regs *fregs)
{
	struct ftrace_graph_ent e;
	struct fgraph_frame *f;
	int d;

	/*
	 * Another graph user of the same call: join its frame, the innermost, of this slot
	 * and function, which hooked this very call (*slot was the caller's return address
	 * until a user of this call hooked it; a stale frame of an earlier call at the same
	 * slot left it so).  The same user again at the same slot is a new call instead: the
	 * function tail-called (through untraced code) back into itself, and returns once
	 * for each entry.
	 */
	if (t->depth > 0 && t->shadow[t->depth - 1].slot == slot &&
	    t->shadow[t->depth - 1].ip == ip && *slot == (unsigned long)return_to_handler &&
	    !(t->shadow[t->depth - 1].users & (1u << idx))) {
		f = &t->shadow[t->depth - 1];
		e.func = ip;
		e.depth = t->depth - 1;
		e.calltime = f->calltime;
		e.retaddr = f->ret;
		e.fregs = fregs;
		if (gops->entryfunc(&e, gops))
			f->users |= 1u << idx;
		return;
	}
	if (t->depth > 0)
		drop_stale(t, slot);
	d = t->depth;
	if (unlikely(d >= FGRAPH_SHADOW_DEPTH)) {
		ft_note_lost_depth();
		return;
	}
	e.func = ip;
	e.depth = d;
	e.calltime = ft_clock_read();
	e.retaddr = *slot;
	e.fregs = fregs;
	if (gops->entryfunc(&e, gops))
		fgraph_fast_push(t, d, idx, ip, slot, e.calltime);	/* the same push */
}

FT_CALLBACK void fgraph_entry(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
			      struct ftrace_regs *fregs)
{
	struct fgraph_ops *gops = op->private;
	struct ft_thread *t = &ft_cur;
	unsigned long *slot = ftrace_regs_get_return_slot(fregs);
	int idx = gops->idx;

	(void)parent_ip;
	if (unlikely(idx < 0))
		return;
	if (unlikely(t->in_ret)) {
		/* a graph callback's own call, or a signal handler interrupting us */
		ft_note_lost_depth();
		return;
	}
	if (unlikely(!shadow_get(t)))
		return;
	t->in_ret++;
	barrier();
	fgraph_entry_guarded(t, gops, idx, ip, slot, fregs);
	barrier();
	t->in_ret--;
}

/*
 * A return without a shadow frame: a frame closed as unwound when it was not dead (its
 * stack was switched away from, unseen). Its exit was recorded then; the most recent
 * record of the slot has its address (an older one is a tail call's caller, whose turn
 * comes next).
 */
static __attribute__((noinline)) unsigned long orphan_return(struct ft_thread *t,
							    unsigned long *slot)
{
	for (int i = t->norphans - 1; i >= 0; i--) {
		unsigned long ret = t->orphans[i].ret;

		if (t->orphans[i].slot != slot)
			continue;
		static int told;

		orphan_del(t, i);
		switch_note(&told, "not seen by ftkit: a coroutine library?",
			    ": frames left on another stack were closed as unwound; they return untraced");
		return ret;
	}
	/* no record of the real address anywhere: nothing correct can follow */
	ft_msg("fatal: return_to_handler without a shadow-stack frame", NULL);
	abort();
}

/*
 * Called by return_to_handler with the stack pointer after the traced
 * function's `ret` (its slot is sp - 8) and the registers it returned in.
 * Returns where to continue.
 */
unsigned long fgraph_return(unsigned long sp, const struct ftrace_ret_regs *rr)
{
	struct ft_thread *t = &ft_cur;
	unsigned long *slot = (unsigned long *)sp - 1;
	struct fgraph_frame f;
	uint64_t now;
	int d;

	t->in_ret++;	/* see fgraph_entry_guarded */
	barrier();
	now = ft_clock_read();
	/* the most recent frame of this slot; anything pushed after it is dead */
	for (d = t->depth - 1; d >= 0; d--)
		if (t->shadow[d].slot == slot)
			break;
	if (unlikely(d < 0)) {
		unsigned long ret = orphan_return(t, slot);

		barrier();
		t->in_ret--;
		return ret;
	}
	/* closed at the parent's exit time, not later: a child never ends after its parent */
	if (d < t->depth - 1)
		pop_unwound_at(t, d + 1, POP_ORPHAN, now);
	f = t->shadow[d];
	t->depth = d;
	barrier();
	frame_close_raised(&f, d, 0, now, rr);
	barrier();
	t->in_ret--;
	return f.ret;
}

/*
 * The thread leaves its stack for another context (swapcontext, setcontext): its frames
 * would otherwise mix with the other stack's, whose calls would be taken for a longjmp
 * over them. Close them all as unwound; frames at or above sp (the caller's live ones)
 * get their real return addresses back and return directly, untraced, when the context
 * resumes. Frames below sp are dead here, or belong to a stack left unseen: orphans.
 */
void fgraph_switch_out(unsigned long *sp)
{
	struct ft_thread *t = &ft_cur;
	struct fgraph_frame *batch[VM_BATCH];
	static int told;
	int d, n = 0, saved_errno;
	pid_t pid;

	if (!t->shadow || !t->depth)
		return;
	saved_errno = errno;
	pid = getpid();
	errno = saved_errno;
	t->in_ret++;	/* a signal handler's calls must not push frames meanwhile */
	barrier();
	if (FTRT_ARCH_RET_IN_FRAME_RECORD)
		find_saved_returns(t);
	for (d = t->depth - 1; d >= 0; d--) {
		struct fgraph_frame *f = &t->shadow[d];

		if (f->slot < sp || f->ret == (unsigned long)return_to_handler)
			continue;	/* below: not ours; a tail call: its caller writes */
		/* a newer frame of the same slot with its own address: this one is dead */
		if (d + 1 < t->depth && t->shadow[d + 1].slot == f->slot &&
		    t->shadow[d + 1].ret != (unsigned long)return_to_handler)
			continue;
		batch[n++] = f;
		if (n == VM_BATCH) {
			unhook_frames(pid, batch, n);
			n = 0;
		}
	}
	unhook_frames(pid, batch, n);
	for (d = 0; d < t->depth; d++)
		if (t->shadow[d].slot < sp)
			orphan_add(t, &t->shadow[d]);
	pop_unwound(t, 0, POP_DEAD);
	switch_note(&told, "swapcontext/setcontext",
		    ": the frames open at a switch are closed as unwound; they return untraced");
	barrier();
	t->in_ret--;
}

/*
 * The address frame d really returns to: its ret, or for a frame pushed on a hooked slot
 * (a tail call: its caller's hook was its return address) the older frame's.
 */
static unsigned long real_ret(const struct ft_thread *t, int d)
{
	unsigned long ret = t->shadow[d].ret;

	while (ret == (unsigned long)return_to_handler && --d >= 0)
		ret = t->shadow[d].ret;
	return ret;
}

/* Put every real return address back (an exception is about to be thrown). */
void fgraph_unhook_all(void)
{
	struct ft_thread *t = &ft_cur;

	if (FTRT_ARCH_RET_IN_FRAME_RECORD && t->depth > 0)
		find_saved_returns(t);
	for (int d = t->depth - 1; d >= 0; d--) {
		struct fgraph_frame *f = &t->shadow[d];

		/* a tail-called function's record is its own, its caller kept none (arm64,
		   `b inner`): the caller's address goes there, or the unwinder met
		   return_to_handler and went round for ever (the jsoncpp trial) */
		if (f->lr && is_handler(*f->lr))
			*f->lr = ret_like(real_ret(t, d), *f->lr, f);
		/* the slot may be the frame record's word (arm64, signed): written above */
		if (f->slot != f->lr && *f->slot == (unsigned long)return_to_handler)
			*f->slot = f->ret;
	}
	/* the unwinder may walk through orphans (a resumed context's frames): unhook them */
	while (t->norphans)
		orphan_release(t, t->norphans - 1);
}

/*
 * An exception was caught in the frame whose CFA is cfa: frames below it are
 * gone (close them as unwound), the others are hooked again.
 */
void fgraph_rehook_live(unsigned long cfa)
{
	struct ft_thread *t = &ft_cur;
	int d = t->depth;

	while (d > 0 && (unsigned long)t->shadow[d - 1].slot < cfa)
		d--;
	if (d < t->depth)
		pop_unwound(t, d, POP_DEAD);	/* fgraph_unhook_all restored them */
	for (d = 0; d < t->depth; d++) {
		struct fgraph_frame *f = &t->shadow[d];

		/* a frame whose slot holds something else was re-used: leave it (a slot that
		   is the frame record's word, maybe signed, is f->lr's to write) */
		if (f->slot != f->lr && *f->slot == f->ret)
			*f->slot = (unsigned long)return_to_handler;
		if (f->lr && ftrt_arch_ret_strip(*f->lr) == real_ret(t, d))
			*f->lr = ret_like((unsigned long)return_to_handler, *f->lr, f);
		f->lr = NULL;
	}
}

/* The thread is about to unwind completely (pthread_exit). */
void fgraph_unwind_all(void)
{
	struct ft_thread *t = &ft_cur;

	if (!t->shadow)
		return;
	if (FTRT_ARCH_RET_IN_FRAME_RECORD && t->depth > 0)
		find_saved_returns(t);
	pop_unwound(t, 0, POP_RESTORE);
}

/*
 * A thread ends with frames still on its shadow stack: pthread_cancel's forced unwind
 * stopped at the first hooked return address and jumped to the thread's end.  Close them
 * as unwound (their stack is dead: nothing is restored there).
 */
void fgraph_close_all(void)
{
	struct ft_thread *t = &ft_cur;

	if (t->shadow && t->depth > 0)
		pop_unwound(t, 0, POP_DEAD);
}

/*
 * Thread exit: free the shadow stack if no frame is hooked any more. Orphans may live on
 * in a context another thread resumes: their slots get their real addresses back.
 */
void fgraph_thread_release(void)
{
	struct ft_thread *t = &ft_cur;

	while (t->shadow && t->norphans)
		orphan_release(t, t->norphans - 1);
	if (t->shadow && t->depth == 0) {
		munmap(t->shadow, MAP_BYTES);
		t->shadow = NULL;
	}
}

/* Empty place i (under fgraph_mu): frames of its user skip it from now on. */
static void user_clear(int i)
{
	struct fgraph_ops *gops = fgraph_users[i].gops;

	__atomic_store_n(&fgraph_users[i].gops, NULL, __ATOMIC_RELEASE);
	fgraph_users[i].draining = 0;
	gops->idx = -1;
	if (fgraph_fused == gops) {
		/* a thread still in the fused return finishes there: its code stays */
		fgraph_fused = NULL;
		__atomic_store_n(&fgraph_return_hook, fgraph_return, __ATOMIC_RELEASE);
	}
}

static int graph_register(struct fgraph_ops *gops, ftrace_func_t entry, fgraph_return_t ret)
{
	int i, err;

	if (!gops || !gops->entryfunc)
		return -EINVAL;
	pthread_mutex_lock(&fgraph_mu);
	for (i = 0; i < FGRAPH_MAX_USERS; i++)
		if (fgraph_users[i].gops == gops)
			break;
	if (i < FGRAPH_MAX_USERS) {
		if (!fgraph_users[i].draining) {
			pthread_mutex_unlock(&fgraph_mu);
			return -EBUSY;
		}
		/* back in its place: its frames, and its fused return if it had one, stay */
		err = register_ftrace_function(&gops->ops);
		if (!err)
			fgraph_users[i].draining = 0;
		pthread_mutex_unlock(&fgraph_mu);
		return err;
	}
	for (i = 0; i < FGRAPH_MAX_USERS; i++)
		if (!fgraph_users[i].gops)
			break;
	if (i == FGRAPH_MAX_USERS)	/* take over a draining user's place */
		for (i = 0; i < FGRAPH_MAX_USERS; i++)
			if (fgraph_users[i].draining) {
				user_clear(i);
				break;
			}
	if (i == FGRAPH_MAX_USERS) {
		pthread_mutex_unlock(&fgraph_mu);
		return -EBUSY;
	}
	fgraph_users[i].epoch = __atomic_add_fetch(&fgraph_epoch, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&fgraph_users[i].gops, gops, __ATOMIC_RELEASE);
	gops->idx = i;
	if (ret && fgraph_fused) {	/* one fused user at a time */
		entry = fgraph_entry;
		ret = NULL;
		gops->ops.flags &= ~FTRT_OPS_FL_LEAN_FRAME;	/* fgraph_entry reads it all */
	}
	gops->ops.func = entry;
	gops->ops.private = gops;
	if (ret) {
		/* before the first site calls entry: its frames return through ret */
		fgraph_fused = gops;
		__atomic_store_n(&fgraph_return_hook, ret, __ATOMIC_RELEASE);
	}
	err = register_ftrace_function(&gops->ops);
	if (err)
		user_clear(i);
	pthread_mutex_unlock(&fgraph_mu);
	return err;
}

int register_ftrace_graph(struct fgraph_ops *gops)
{
	return graph_register(gops, fgraph_entry, NULL);
}

int fgraph_register_fused(struct fgraph_ops *gops, ftrace_func_t entry, fgraph_return_t ret)
{
	return graph_register(gops, entry, ret);
}

/*
 * 0, or the core's error when gops's ops is still registered (its sites could not be
 * written: nothing changed, gops keeps its place).
 */
static int graph_unregister(struct fgraph_ops *gops, int drain)
{
	int i, err = 0;

	pthread_mutex_lock(&fgraph_mu);
	for (i = 0; i < FGRAPH_MAX_USERS; i++)
		if (fgraph_users[i].gops == gops)
			break;
	if (i < FGRAPH_MAX_USERS) {
		if (!fgraph_users[i].draining)
			err = unregister_ftrace_function(&gops->ops);
		if (err && (gops->ops.flags & FTRACE_OPS_FL_ENABLED)) {
			pthread_mutex_unlock(&fgraph_mu);
			return err;
		}
		/* frames already hooked still return through the handler: to us, or past us */
		if (drain)
			fgraph_users[i].draining = 1;
		else
			user_clear(i);
	}
	pthread_mutex_unlock(&fgraph_mu);
	return 0;
}

void unregister_ftrace_graph(struct fgraph_ops *gops)
{
	graph_unregister(gops, 0);
}

int fgraph_unregister_draining(struct fgraph_ops *gops)
{
	return graph_unregister(gops, 1);
}
