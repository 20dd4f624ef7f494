/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk layout of the ftkit trace file, version 4 (docs/trace-format.md).
 * Little-endian LP64 (x86-64, arm64: the same layout): the structs are written as they are
 * in memory.
 */
#ifndef FTKIT_TRACE_FORMAT_H
#define FTKIT_TRACE_FORMAT_H

#include <stdint.h>

#define FTKIT_TRACE_MAGIC	"FTKITTRC"
#define FTKIT_TRACE_VERSION	4

/* file header flags */
#define FTKIT_F_COMPLETE	0x1
#define FTKIT_F_ABNORMAL	0x2
#define FTKIT_F_SNAPSHOT	0x4
#define FTKIT_F_LOST		0x8
#define FTKIT_F_WRITE_ERROR	0x10	/* a write of the file failed (full disk, size limit) */

/* finalisation reasons */
enum {
	FTKIT_R_LIVE = 0,
	FTKIT_R_EXIT = 1,
	FTKIT_R_SIGNAL = 2,
	FTKIT_R_SNAPSHOT = 3,
	FTKIT_R_SHUTDOWN = 4,
	FTKIT_R_EXEC = 5,
	FTKIT_R_SIZE = 6,	/* FTRACE_SIZE reached (ftrace record --size) */
	FTKIT_R_DURATION = 7,	/* FTRACE_DURATION passed (ftrace record --duration) */
};

/* tracers */
enum {
	FTKIT_TRACER_NONE = 0,
	FTKIT_TRACER_FUNCTION = 1,
	FTKIT_TRACER_GRAPH = 2,
};

struct ftkit_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t flags;
	uint32_t pid;
	uint32_t signal;
	uint32_t clock;
	double ns_per_tick;
	uint64_t ref_ticks;
	uint64_t ref_mono_ns;
	uint64_t ref_real_ns;
	uint64_t start_ticks;
	uint64_t end_ticks;
	uint32_t tracer;		/* FTKIT_TRACER_* bits: every tracer that ran */
	uint32_t reason;
	uint32_t record_size;
	uint32_t graph_depth;
	uint64_t tsc_hz;
	uint64_t lost_nobuf;
	uint32_t block_size;		/* bytes of event data a block holds */
	uint32_t mode;			/* FTKIT_MODE_* */
	uint64_t ring_bytes;		/* per-thread ring (ring mode), else 0 */
	uint8_t reserved[128];
};
_Static_assert(sizeof(struct ftkit_file_header) == 256, "file header is 256 bytes");

enum {
	FTKIT_CHUNK_END = 0,
	FTKIT_CHUNK_MAPS = 1,
	FTKIT_CHUNK_THREAD_V1 = 2,
	FTKIT_CHUNK_CMDLINE = 3,
	FTKIT_CHUNK_EVENTS = 4,
	FTKIT_CHUNK_THREAD = 5,
	FTKIT_CHUNK_MORE = 6,
	FTKIT_CHUNK_SKIP = 7,		/* to be passed over (a block torn while copied) */
};

enum { FTKIT_MODE_STREAM = 0, FTKIT_MODE_RING = 1 };

struct ftkit_chunk {
	uint32_t type;
	uint32_t hdr_size;
	uint64_t size;
};

struct ftkit_maps_chunk {
	struct ftkit_chunk c;
	uint32_t count;
	uint32_t reserved;
	uint64_t ts;			/* ticks when written; 0 = at start-up */
};
_Static_assert(sizeof(struct ftkit_maps_chunk) == 32, "maps chunk header");

#define FTKIT_MAP_MAIN		0x1
#define FTKIT_MAP_VDSO		0x2
#define FTKIT_MAP_DLOPEN	0x4

struct ftkit_map_entry {
	uint32_t entry_size;
	uint16_t path_len;
	uint8_t build_id_len;
	uint8_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t bias;
	/* build_id, path, padding */
};
_Static_assert(sizeof(struct ftkit_map_entry) == 32, "map entry");

#define FTKIT_T_EXITED		0x1
#define FTKIT_T_LOST		0x2

struct ftkit_thread_chunk {
	struct ftkit_chunk c;
	uint32_t tid;
	uint32_t flags;
	uint64_t lost;
	uint64_t lost_depth;
	uint64_t blocks;
	char name[16];
};
_Static_assert(sizeof(struct ftkit_thread_chunk) == 64, "thread chunk header");

#define FTKIT_B_RING		0x1
#define FTKIT_B_PARTIAL		0x2
#define FTKIT_B_CLEARED		0x4	/* blocks just before it were dropped by a live `clear` */
#define FTKIT_B_DROPPED		0x8	/* blocks just before it could not be written (a full
					   disk, a size limit): its lost counts their events */

/* An EVENTS chunk: one block of one thread's events; the open frames, then the data. */
struct ftkit_events_chunk {
	struct ftkit_chunk c;
	uint32_t tid;
	uint32_t flags;
	uint64_t seq;
	uint64_t base_ts;
	uint64_t lost;
	uint32_t nev;
	uint32_t depth;
	uint32_t data_len;
	uint32_t ip_hi;
	uint32_t parent_hi;
	uint32_t reserved;
};
_Static_assert(sizeof(struct ftkit_events_chunk) == 72, "events chunk header");

/*
 * A MORE chunk: the next bytes of a block whose start is already in the file (the
 * writer flushes a block being filled every 100 ms and writes only what is new).
 */
struct ftkit_more_chunk {
	struct ftkit_chunk c;
	uint32_t tid;
	uint32_t flags;			/* FTKIT_B_PARTIAL: more may follow */
	uint64_t seq;
	uint32_t data_off;		/* bytes of the block's data before this chunk's */
	uint32_t nev;
	uint32_t data_len;
	uint32_t reserved;
};
_Static_assert(sizeof(struct ftkit_more_chunk) == 48, "more chunk header");

struct ftkit_frame {
	uint64_t ip;
	uint64_t entry_ts;
};

/* Event word 0: bits 0-2 type, 3-31 delta ticks. */
enum {
	FTKIT_EV_EXIT = 0,
	FTKIT_EV_EXIT_UNWOUND = 1,
	FTKIT_EV_ENTRY = 2,
	FTKIT_EV_FUNC = 3,
	FTKIT_EV_FUNC_NEAR = 4,
	FTKIT_EV_FUNC_AGAIN = 5,	/* version 4: a FUNC of the block's pair cache (one word) */
	FTKIT_EV_ENTRY_AGAIN = 6,	/* version 4: an ENTRY of the block's pair cache (one word) */
	FTKIT_EV_EXT = 7,
};

enum {
	FTKIT_EXT_TIME = 0,
	FTKIT_EXT_IP_HI = 1,
	FTKIT_EXT_PARENT_HI = 2,
	FTKIT_EXT_DEPTH = 3,
	FTKIT_EXT_LOST = 4,
	FTKIT_EXT_MARKER = 5,
	FTKIT_EXT_STACK = 6,
	FTKIT_EXT_ARGS = 7,
	FTKIT_EXT_RETVAL = 8,
	FTKIT_EXT_ARGS_NEXT = 9,	/* ARGS of the event right after it: no time, no address */
	FTKIT_EXT_RETVAL_NEXT = 10,	/* RETVAL of the EXIT right after it */
};

/*
 * STACK payload (after the u64 time): u64 code addresses, innermost first: the function
 * hit, then return addresses; one with FTKIT_STACK_ENTRY set is the site of a traced
 * function whose graph frame is open, before the return into its caller.
 */
#define FTKIT_STACK_ENTRY (1ULL << 63)

/*
 * ARGS_NEXT / RETVAL_NEXT payload: the descriptors and values alone (no string), for the
 * event that follows at once (ENTRY or FUNC / EXIT), whose time and address they take.
 * ARGS / RETVAL payload (after the u64 time): u32 low half of the function's address,
 * one descriptor byte per value (padded to a word), then each value: its low u32 word,
 * the high one too for an 8-byte value, and for FTKIT_ARG_STR a u32 string header
 * (length | FTKIT_STR_*) and the bytes, padded.
 */
enum {
	FTKIT_ARG_AUTO = 0,	/* formatted from the program's DWARF by readers */
	FTKIT_ARG_INT = 1, FTKIT_ARG_UINT = 2, FTKIT_ARG_HEX = 3, FTKIT_ARG_STRING = 4,
	FTKIT_ARG_CHAR = 5, FTKIT_ARG_FLOAT = 6, FTKIT_ARG_PTR = 7,
	/* with FTKIT_ARG_STR: the bytes the word points to, as many as the value before it
	   says (a std::string_view's length, then its data pointer) */
	FTKIT_ARG_COUNTED = 8,
};
#define FTKIT_ARG_FMT_MASK	0x0f
#define FTKIT_ARG_SIZE_SHIFT	4	/* bits 4-5: log2 of the value's size in bytes */
#define FTKIT_ARG_STR		0x40	/* a string header and bytes follow the word */
/* with FTKIT_ARG_STR: the word is the address of a std::string (libstdc++'s layout: the
   data pointer, then the length), whose bytes follow; with FTKIT_ARG_COUNTED, the address
   of a std::string_view (the length, then the data pointer) */
#define FTKIT_ARG_STDSTR	0x80
#define FTKIT_STR_LEN_MASK	0xffff
#define FTKIT_STR_BAD		0x10000	/* the pointer could not be read */
#define FTKIT_STR_TRUNC		0x20000	/* no NUL within the bytes copied */
#define FTKIT_STR_UNREAD	0x40000	/* not read: no fault-safe read here (seccomp) */

#define FTKIT_DELTA_MAX		(1U << 29)	/* deltas below this fit */
#define FTKIT_NEAR_DELTA_MAX	(1U << 13)
#define FTKIT_AGAIN_DELTA_MAX	(1U << 21)	/* *_AGAIN: bits 3-23 delta, 24-31 slot */

/*
 * The pair cache of FUNC_AGAIN: per block, FTKIT_PAIR_SLOTS (function, parent) pairs, all
 * zero at the block's start; every FUNC and FUNC_NEAR of the block stores its pair in the
 * slot ftkit_pair_slot gives, and a FUNC_AGAIN names the slot of its pair.  Writer and
 * readers compute the same slot.
 */
#define FTKIT_PAIR_SLOTS	256

struct ftkit_pair {
	uint64_t ip, parent;
};

static inline uint32_t ftkit_pair_slot(uint64_t ip, uint64_t parent)
{
	return (uint32_t)(((ip ^ parent) * 0x9E3779B97F4A7C15ULL) >> 56);
}

/* ENTRY_AGAIN's cache: per block, FTKIT_PAIR_SLOTS function addresses, all zero at the
   block's start; every ENTRY stores its function in slot ftkit_entry_slot. */
static inline uint32_t ftkit_entry_slot(uint64_t ip)
{
	return (uint32_t)((ip * 0x9E3779B97F4A7C15ULL) >> 56);
}

static inline uint32_t ftkit_ext(uint32_t sub, uint32_t n, uint32_t arg)
{
	return FTKIT_EV_EXT | sub << 3 | n << 8 | arg << 16;
}

#endif
