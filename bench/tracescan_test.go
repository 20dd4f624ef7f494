package bench_test

// A counting reader of version-2 and 3 trace files, written from docs/trace-format.md alone, for
// the acceptance benchmarks (accept_test.go): the reader of cmd/ftrace is internal to it and
// keeps every event in memory (40 bytes each: 20 GB for a 10 s fib trace), while this one
// only counts, streaming the file. TestTraceScanAgrees checks it against `ftrace info`.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
)

// traceCounts is what scanTrace finds in a trace file.
type traceCounts struct {
	Bytes         int64
	Flags         uint32 // header flags: 1 complete, 2 abnormal, 4 snapshot, 8 lost
	Ring          bool   // header mode: flight recorder
	RingBytes     uint64
	Threads       int    // tids with EVENTS or THREAD chunks
	Blocks        int    // distinct (tid, seq) blocks
	Partial       int    // PARTIAL chunks superseded by a later chunk of the same block
	PartialBytes  int64  // the bytes of those superseded chunks
	Entries       uint64 // ENTRY events
	Exits         uint64 // EXIT events (returns)
	Unwound       uint64 // EXIT_UNWOUND events
	Funcs         uint64 // FUNC and FUNC_NEAR events
	LostNoBuf     uint64 // header lost_nobuf
	LostBlocks    uint64 // sum of the blocks' lost fields
	LostExt       uint64 // sum of EXT LOST payloads
	LostThreads   uint64 // sum over tids of the last THREAD chunk's lost
	LostDepth     uint64 // sum over tids of the last THREAD chunk's lost_depth
	MissingBlocks uint64 // seq gaps (in a ring: after the thread's first block in the file)
	// FirstDepth sums, over the threads, the frames open at the start of each thread's
	// first block in the file (a ring that begins inside calls: readers enter them there).
	FirstDepth uint64
}

// Events is the number of events (EXT records not counted).
func (c traceCounts) Events() uint64 { return c.Entries + c.Exits + c.Unwound + c.Funcs }

// Lost is every lost-event count the file holds, added up (0 when nothing was lost).
func (c traceCounts) Lost() uint64 {
	return c.LostNoBuf + c.LostBlocks + c.LostExt + c.LostThreads
}

var le = binary.LittleEndian

// scanTrace reads the version-2 or 3 trace at path: a first pass over the chunk headers
// keeps, for each (tid, seq), the last chunk with the most events (a PARTIAL chunk is
// superseded by a later one of the same block) with the MORE chunks that continue it, a
// second pass decodes those blocks' event words.
func scanTrace(path string) (traceCounts, error) {
	var c traceCounts
	f, err := os.Open(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return c, err
	}
	size := st.Size()
	c.Bytes = size
	h := make([]byte, 256)
	if _, err := f.ReadAt(h, 0); err != nil {
		return c, fmt.Errorf("%s: header: %v", path, err)
	}
	if v := le.Uint32(h[8:]); string(h[:8]) != "FTKITTRC" || v != 2 && v != 3 && v != 4 {
		return c, fmt.Errorf("%s: not a version-2, 3 or 4 ftkit trace", path)
	}
	c.Flags = le.Uint32(h[16:])
	c.LostNoBuf = le.Uint64(h[104:])
	c.Ring = le.Uint32(h[116:]) == 1
	c.RingBytes = le.Uint64(h[120:])

	type key struct {
		tid int
		seq uint64
	}
	type seg struct{ off, n int64 } // event data in the file
	type blk struct {
		off     int64
		segs    []seg
		dataLen int64 // all the segments'
		nev     uint32
		depth   uint32
		lost    uint64
		size    int64 // its chunks' bytes
	}
	blocks := map[key]blk{}
	type thr struct{ lost, lostDepth uint64 }
	threads := map[int]thr{}
	seen := map[int]bool{}
	off := int64(le.Uint32(h[12:]))
	var ch [72]byte
	for off+16 <= size {
		if _, err := f.ReadAt(ch[:16], off); err != nil {
			return c, err
		}
		typ, hdr, csize := le.Uint32(ch[0:]), int64(le.Uint32(ch[4:])), le.Uint64(ch[8:])
		if typ == 0 && csize == 0 {
			break
		}
		if csize%8 != 0 || csize < 16 || csize > uint64(size-off) || hdr < 16 || uint64(hdr) > csize {
			if c.Flags&1 == 0 {
				break // a live or killed process's file: its last chunk may be cut
			}
			return c, fmt.Errorf("%s: chunk at %d: bad size %d (header %d)", path, off, csize, hdr)
		}
		switch typ {
		case 4: // EVENTS
			if hdr < 72 {
				return c, fmt.Errorf("%s: EVENTS chunk at %d: header size %d", path, off, hdr)
			}
			if _, err := f.ReadAt(ch[:72], off); err != nil {
				return c, err
			}
			tid := int(le.Uint32(ch[16:]))
			k := key{tid, le.Uint64(ch[24:])}
			b := blk{off: off, dataLen: int64(le.Uint32(ch[56:])), nev: le.Uint32(ch[48:]), depth: le.Uint32(ch[52:]), lost: le.Uint64(ch[40:]), size: int64(csize)}
			b.segs = []seg{{off + hdr, b.dataLen}}
			if hdr+b.dataLen > int64(csize) {
				return c, fmt.Errorf("%s: EVENTS chunk at %d: %d data bytes in a %d-byte chunk", path, off, b.dataLen, csize)
			}
			if old, ok := blocks[k]; ok {
				c.Partial++
				if old.nev > b.nev {
					b, old = old, b
				}
				c.PartialBytes += old.size
			}
			blocks[k] = b
			seen[tid] = true
		case 6: // MORE: the next bytes of a block's data
			if hdr != 48 {
				return c, fmt.Errorf("%s: MORE chunk at %d: header size %d", path, off, hdr)
			}
			if _, err := f.ReadAt(ch[:48], off); err != nil {
				return c, err
			}
			k := key{int(le.Uint32(ch[16:])), le.Uint64(ch[24:])}
			from, nev, n := int64(le.Uint32(ch[32:])), le.Uint32(ch[36:]), int64(le.Uint32(ch[40:]))
			b, ok := blocks[k]
			if !ok || b.dataLen != from || 48+n > int64(csize) {
				return c, fmt.Errorf("%s: MORE chunk at %d (thread %d block %d, from byte %d) does not continue its block", path, off, k.tid, k.seq, from)
			}
			b.segs = append(b.segs, seg{off + 48, n})
			b.dataLen += n
			b.nev += nev
			b.size += int64(csize)
			blocks[k] = b
		case 5: // THREAD
			if csize < 64 {
				return c, fmt.Errorf("%s: THREAD chunk at %d: %d bytes", path, off, csize)
			}
			if _, err := f.ReadAt(ch[:40], off); err != nil {
				return c, err
			}
			tid := int(le.Uint32(ch[16:]))
			threads[tid] = thr{lost: le.Uint64(ch[24:]), lostDepth: le.Uint64(ch[32:])}
			seen[tid] = true
		}
		off += int64(csize)
	}
	c.Threads = len(seen)
	for _, t := range threads {
		c.LostThreads += t.lost
		c.LostDepth += t.lostDepth
	}
	keys := make([]key, 0, len(blocks))
	for k := range blocks {
		keys = append(keys, k)
	}
	// file order: the second pass reads forward
	sort.Slice(keys, func(i, j int) bool { return blocks[keys[i]].off < blocks[keys[j]].off })
	c.Blocks = len(keys)
	first, last := map[int]uint64{}, map[int]uint64{}
	for _, k := range keys {
		if q, ok := first[k.tid]; !ok || k.seq < q {
			first[k.tid] = k.seq
		}
		if k.seq > last[k.tid] {
			last[k.tid] = k.seq
		}
	}
	for tid, q := range first {
		c.FirstDepth += uint64(blocks[key{tid, q}].depth)
	}
	for tid, q := range last {
		from := uint64(0)
		if c.Ring {
			from = first[tid]
		}
		n := uint64(0)
		for _, k := range keys {
			if k.tid == tid {
				n++
			}
		}
		c.MissingBlocks += q - from + 1 - n
	}
	// every kept segment in file order (the writer cuts a block's data between events, so
	// each segment counts on its own)
	type kseg struct {
		k key
		seg
	}
	var segs []kseg
	for _, k := range keys {
		c.LostBlocks += blocks[k].lost
		for _, sg := range blocks[k].segs {
			segs = append(segs, kseg{k, sg})
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].off < segs[j].off })
	decoded := map[key]uint32{}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	pos := int64(0)
	var data []byte
	for _, sg := range segs {
		if _, err := r.Discard(int(sg.off - pos)); err != nil {
			return c, err
		}
		if int64(cap(data)) < sg.n {
			data = make([]byte, sg.n)
		}
		data = data[:sg.n]
		if _, err := io.ReadFull(r, data); err != nil {
			return c, err
		}
		pos = sg.off + sg.n
		n, err := c.decode(data)
		if err != nil {
			return c, fmt.Errorf("%s: thread %d block %d: %v", path, sg.k.tid, sg.k.seq, err)
		}
		decoded[sg.k] += n
	}
	for _, k := range keys {
		if decoded[k] != blocks[k].nev {
			return c, fmt.Errorf("%s: thread %d block %d: %d events decoded, headers say %d", path, k.tid, k.seq, decoded[k], blocks[k].nev)
		}
	}
	return c, nil
}

// decode counts the events of one block's data and returns how many there were.
func (c *traceCounts) decode(data []byte) (uint32, error) {
	if len(data)%4 != 0 {
		return 0, fmt.Errorf("%d data bytes, not whole words", len(data))
	}
	words := len(data) / 4
	n := uint32(0)
	for i := 0; i < words; {
		w := le.Uint32(data[4*i:])
		size := 1
		switch w & 7 {
		case 0:
			c.Exits++
		case 1:
			c.Unwound++
		case 2:
			c.Entries++
			size = 2
		case 3:
			c.Funcs++
			size = 3
		case 4:
			c.Funcs++
			size = 2
		case 5: // FUNC_AGAIN
			c.Funcs++
		case 6: // ENTRY_AGAIN
			c.Entries++
		case 7:
			sub, nw := w>>3&31, int(w>>8&0xff)
			if i+1+nw > words {
				return n, fmt.Errorf("EXT %d at word %d: %d payload words past the end", sub, i, nw)
			}
			if sub == 4 && nw >= 2 {
				c.LostExt += le.Uint64(data[4*(i+1):])
			}
			i += 1 + nw
			continue
		default:
			return n, fmt.Errorf("event type %d at word %d", w&7, i)
		}
		if i+size > words {
			return n, fmt.Errorf("event at word %d runs past the end", i)
		}
		n++
		i += size
	}
	return n, nil
}
