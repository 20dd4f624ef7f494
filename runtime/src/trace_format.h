/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk layout of the ftkit trace file, version 1 (docs/trace-format.md).
 * Little-endian x86-64: the structs are written as they are in memory.
 */
#ifndef FTKIT_TRACE_FORMAT_H
#define FTKIT_TRACE_FORMAT_H

#include <stdint.h>

#define FTKIT_TRACE_MAGIC	"FTKITTRC"
#define FTKIT_TRACE_VERSION	1

/* file header flags */
#define FTKIT_F_COMPLETE	0x1
#define FTKIT_F_ABNORMAL	0x2
#define FTKIT_F_SNAPSHOT	0x4
#define FTKIT_F_LOST		0x8

/* finalisation reasons */
enum {
	FTKIT_R_LIVE = 0,
	FTKIT_R_EXIT = 1,
	FTKIT_R_SIGNAL = 2,
	FTKIT_R_SNAPSHOT = 3,
	FTKIT_R_SHUTDOWN = 4,
	FTKIT_R_EXEC = 5,
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
	uint32_t tracer;
	uint32_t reason;
	uint32_t record_size;
	uint32_t graph_depth;
	uint64_t tsc_hz;
	uint64_t lost_nobuf;
	uint8_t reserved[144];
};
_Static_assert(sizeof(struct ftkit_file_header) == 256, "file header is 256 bytes");

enum {
	FTKIT_CHUNK_END = 0,
	FTKIT_CHUNK_MAPS = 1,
	FTKIT_CHUNK_THREAD = 2,
	FTKIT_CHUNK_CMDLINE = 3,
};

struct ftkit_chunk {
	uint32_t type;
	uint32_t hdr_size;
	uint64_t size;
};

struct ftkit_maps_chunk {
	struct ftkit_chunk c;
	uint32_t count;
	uint32_t reserved;
};
_Static_assert(sizeof(struct ftkit_maps_chunk) == 24, "maps chunk header");

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
#define FTKIT_T_FULL		0x2

struct ftkit_thread_chunk {
	struct ftkit_chunk c;
	uint32_t tid;
	uint32_t flags;
	uint64_t nrec;
	uint64_t lost;
	uint64_t lost_depth;
	char name[16];
};
_Static_assert(sizeof(struct ftkit_thread_chunk) == 64, "thread chunk header");

enum {
	FTKIT_REC_FUNC = 1,
	FTKIT_REC_ENTRY = 2,
	FTKIT_REC_EXIT = 3,
};

#define FTKIT_REC_UNWOUND	0x1

struct ftkit_rec {
	uint64_t ts;
	uint64_t ip;
	uint64_t aux;
	uint32_t depth;
	uint16_t type;
	uint16_t flags;
};
_Static_assert(sizeof(struct ftkit_rec) == 32, "record is 32 bytes");

#endif
