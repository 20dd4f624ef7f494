package tracefile

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format versions 2 and 3 (docs/trace-format.md): per-thread blocks of compact events,
// each block self-contained (its header carries the graph frames open when it started).
// Version 3 adds MORE chunks: a block's data may come in pieces, the first in its EVENTS
// chunk and the rest appended by MORE chunks. Version 4 adds FUNC_AGAIN and ENTRY_AGAIN
// events: a function-tracer call whose (function, parent) pair an earlier call of the
// block had, a graph entry of a function an earlier entry of the block entered.
const (
	Version2       = 2
	Version3       = 3
	Version4       = 4
	ChunkEvents    = 4
	ChunkThreadV2  = 5
	ChunkMore      = 6
	ChunkSkip      = 7 // passed over: a block torn while a snapshot copied it
	mapsHdrSizeV2  = 32
	eventsHdrFixed = 72
	moreHdrSize    = 48
	threadInfoSize = 64
	stackEntrySize = 16

	// EVENTS chunk flags.
	BlockRing    = 1 << 0
	BlockPartial = 1 << 1
	BlockCleared = 1 << 2 // the blocks just before it were dropped by a live clear
	BlockDropped = 1 << 3 // the blocks just before it could not be written: counted in its lost

	// Event types (word 0, bits 0-2).
	evExit        = 0
	evExitUnwound = 1
	evEntry       = 2
	evFunc        = 3
	evFuncNear    = 4
	evFuncAgain   = 5 // version 4: bits 3-23 delta, 24-31 the slot of its pair
	evEntryAgain  = 6 // version 4: bits 3-23 delta, 24-31 the slot of its function
	evExt         = 7

	// EXT subtypes (word 0, bits 3-7).
	extTime     = 0
	extIPHi     = 1
	extParentHi = 2
	extDepth    = 3
	extLost     = 4
	extMarker   = 5
	extStack    = 6
	// extArgs, extRetval: values.go

	deltaBits      = 29
	nearDeltaBits  = 13
	againDeltaBits = 21
)

// pairCache is a block's FUNC_AGAIN cache: all zero at the block's start; every FUNC and
// FUNC_NEAR stores its (function, parent) pair in the slot pairSlot gives.
type pairCache [256]struct{ ip, parent uint64 }

func pairSlot(ip, parent uint64) uint32 {
	return uint32(((ip ^ parent) * 0x9E3779B97F4A7C15) >> 56)
}

// entryCache is a block's ENTRY_AGAIN cache: all zero at the block's start; every ENTRY
// stores its function in the slot entrySlot gives.
type entryCache [256]uint64

func entrySlot(ip uint64) uint32 { return uint32((ip * 0x9E3779B97F4A7C15) >> 56) }

// block is one EVENTS chunk as found in the file, with the MORE chunks that continue its
// data (the payloads are read when decoded). nev counts the events of all the pieces.
type block struct {
	off, hdr, end int64
	seq           uint64
	nev           uint32
	flags         uint32
	lost          uint64
	base          uint64  // base_ts: the time (ticks) its events count from
	size          int64   // bytes of event data in all the pieces
	more          []piece // MORE chunks, in data order
}

// piece is the data of a MORE chunk: size bytes at file offset off.
type piece struct{ off, size int64 }

// threadV2 gathers what the chunks of one thread said.
type threadV2 struct {
	info     *Thread // from the last THREAD chunk, nil if none
	blocks   map[uint64]block
	blkLost  uint64
	partials int
}

// v2state collects a version-2 file's chunks before the thread streams are decoded.
type v2state struct {
	threads map[int]*threadV2
	maps    [][]Mapping // MAPS chunks in file order
}

func (s *v2state) thread(tid int) *threadV2 {
	th := s.threads[tid]
	if th == nil {
		th = &threadV2{blocks: map[uint64]block{}}
		s.threads[tid] = th
	}
	return th
}

// readEventsHeader notes an EVENTS chunk; a PARTIAL block is superseded by a later chunk
// of the same seq holding more events.
func (s *v2state) readEventsHeader(r io.ReaderAt, off, hdr, end int64) error {
	if hdr < eventsHdrFixed {
		return fmt.Errorf("events: header size %d < %d", hdr, eventsHdrFixed)
	}
	h, err := readAt(r, off, off+eventsHdrFixed)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	b := block{off: off, hdr: hdr, end: end,
		flags: le.Uint32(h[20:]), seq: le.Uint64(h[24:]), lost: le.Uint64(h[40:]), nev: le.Uint32(h[48:]),
		base: le.Uint64(h[32:])}
	depth := int64(le.Uint32(h[52:]))
	dataLen := int64(le.Uint32(h[56:]))
	tid := int(le.Uint32(h[16:]))
	if hdr != eventsHdrFixed+stackEntrySize*depth {
		return fmt.Errorf("events: thread %d block %d: header size %d does not hold %d open frames", tid, b.seq, hdr, depth)
	}
	if dataLen%4 != 0 || off+hdr+dataLen > end {
		return fmt.Errorf("events: thread %d block %d: %d bytes of events do not fit in the chunk", tid, b.seq, dataLen)
	}
	if int64(b.nev) > dataLen/4 { // an event is a word at least
		return fmt.Errorf("events: thread %d block %d: %d events claimed in %d bytes", tid, b.seq, b.nev, dataLen)
	}
	b.size = dataLen
	th := s.thread(tid)
	if old, ok := th.blocks[b.seq]; ok {
		if old.flags&BlockPartial == 0 && b.flags&BlockPartial == 0 {
			return fmt.Errorf("events: thread %d: block %d written twice", tid, b.seq)
		}
		th.partials++
		if old.nev >= b.nev {
			return nil
		}
		th.blkLost -= old.lost
	}
	th.blocks[b.seq] = b
	th.blkLost += b.lost
	return nil
}

// readMore appends a MORE chunk's data to its block. A piece that does not start where
// the block's data ends so far (its block or an earlier piece is not in the file) is
// skipped with a warning and its events counted lost: the block then ends where its data
// stops being contiguous.
func (s *v2state) readMore(r io.ReaderAt, off, hdr, end int64, warn func(string)) error {
	if hdr != moreHdrSize {
		return fmt.Errorf("more: header size %d, want %d", hdr, moreHdrSize)
	}
	h, err := readAt(r, off, off+moreHdrSize)
	if err != nil {
		return fmt.Errorf("more: %w", err)
	}
	tid := int(le.Uint32(h[16:]))
	flags := le.Uint32(h[20:])
	seq := le.Uint64(h[24:])
	dataOff := int64(le.Uint32(h[32:]))
	nev := le.Uint32(h[36:])
	dataLen := int64(le.Uint32(h[40:]))
	if dataLen%4 != 0 || dataOff%4 != 0 || off+hdr+dataLen > end {
		return fmt.Errorf("more: thread %d block %d: %d bytes of events at %d do not fit in the chunk", tid, seq, dataLen, dataOff)
	}
	if int64(nev) > dataLen/4 {
		return fmt.Errorf("more: thread %d block %d: %d events claimed in %d bytes", tid, seq, nev, dataLen)
	}
	th := s.thread(tid)
	b, ok := th.blocks[seq]
	switch {
	case !ok:
		warn(fmt.Sprintf("thread %d block %d: the continuation at offset %d has no block start in the file; skipped", tid, seq, off))
		th.blkLost += uint64(nev)
		return nil
	case b.size != dataOff:
		warn(fmt.Sprintf("thread %d block %d: the continuation at offset %d starts at byte %d of the block's data, which has %d; skipped", tid, seq, off, dataOff, b.size))
		th.blkLost += uint64(nev)
		return nil
	case dataLen == 0:
		return nil
	}
	b.more = append(b.more, piece{off: off + hdr, size: dataLen})
	b.size += dataLen
	b.nev += nev
	b.flags = b.flags&^BlockPartial | flags&BlockPartial
	th.blocks[seq] = b
	return nil
}

// maxTID is the kernel's PID_MAX_LIMIT on 64-bit systems: no thread id is larger.
const maxTID = 1 << 22

// readThreadInfo reads a THREAD chunk. One that cannot be a thread's (a tid no kernel
// gives, flags no runtime writes, counts past any run's) is left out with a warning: the
// traced program wrote over the runtime's memory (redis's crash memory test does).
func (s *v2state) readThreadInfo(r io.ReaderAt, off, end int64, warn func(string)) error {
	if end-off < threadInfoSize {
		return fmt.Errorf("thread: %d bytes, want %d", end-off, threadInfoSize)
	}
	h, err := readAt(r, off, off+threadInfoSize)
	if err != nil {
		return fmt.Errorf("thread: %w", err)
	}
	info := &Thread{
		TID:       int(le.Uint32(h[16:])),
		Flags:     le.Uint32(h[20:]),
		Lost:      le.Uint64(h[24:]),
		LostDepth: le.Uint64(h[32:]),
		Name:      string(bytes.TrimRight(h[48:64], "\x00")),
	}
	if info.TID <= 0 || info.TID > maxTID || info.Flags&^(ThreadExited|ThreadFull) != 0 ||
		info.Lost > 1<<40 || info.LostDepth > 1<<40 {
		warn(fmt.Sprintf("thread record at offset %d is corrupt (tid %d, flags %#x, %d events lost): left out", off, info.TID, info.Flags, info.Lost))
		return nil
	}
	if !utf8.ValidString(info.Name) || strings.IndexFunc(info.Name, unicode.IsControl) >= 0 {
		info.Name = printable([]byte(info.Name))
	}
	s.thread(info.TID).info = info
	return nil
}

// mergeMaps takes the union of the MAPS chunks; where entries overlap, the later chunk's
// wins (a library dlclose'd and another loaded at its address).
func mergeMaps(chunks [][]Mapping) []Mapping {
	var out []Mapping
	for _, c := range chunks {
		for _, m := range c {
			if m.Start == 0 && m.End == 0 {
				continue
			}
			kept := out[:0]
			for _, o := range out {
				if o.Start < m.End && m.Start < o.End {
					continue
				}
				kept = append(kept, o)
			}
			out = append(kept, m)
		}
	}
	return out
}

// frame is a graph frame open in a thread's stream.
type frame struct{ ip, ts uint64 }

// finish turns the chunks seen into the stream's threads: facts, loss counts and their
// blocks in seq order (decoded later, by decodeV2).
func (s *v2state) finish(st *Stream) {
	t := st.Trace
	if len(s.maps) > 0 {
		t.Maps = mergeMaps(s.maps)
	}
	tids := make([]int, 0, len(s.threads))
	for tid := range s.threads {
		tids = append(tids, tid)
	}
	sort.Ints(tids)
	for _, tid := range tids {
		ts := s.threads[tid]
		th := ts.info
		if th == nil {
			th = &Thread{TID: tid}
		}
		if ts.blkLost > th.Lost {
			th.Lost = ts.blkLost
		}
		blocks := make([]block, 0, len(ts.blocks))
		for _, b := range ts.blocks {
			blocks = append(blocks, b)
		}
		sort.Slice(blocks, func(i, j int) bool { return blocks[i].seq < blocks[j].seq })
		next := uint64(0)
		for i, b := range blocks {
			switch {
			case b.seq == next || (i == 0 && b.flags&BlockRing != 0):
				// a ring's overwritten start is not missing
			case b.flags&BlockRing != 0:
				th.OverwrittenBlocks += b.seq - next // a ring switched on live
			case b.flags&BlockCleared != 0:
				th.ClearedBlocks += b.seq - next // the user asked: not missing
			case b.flags&BlockDropped != 0:
				// a full disk or a size limit: their events are in the block's lost
				// count (and the thread's), said as lost rather than missing
			default:
				th.MissingBlocks += b.seq - next
			}
			next = b.seq + 1
		}
		if th.MissingBlocks > 0 {
			t.Header.Warnings = append(t.Header.Warnings, fmt.Sprintf("thread %d: %d event blocks missing", tid, th.MissingBlocks))
		}
		t.Threads = append(t.Threads, th)
		st.src = append(st.src, source{blocks: blocks})
	}
}

// decodeV2 passes a version-2 thread's events to emit, one block at a time.
func (s *Stream) decodeV2(th *Thread, blocks []block, emit func([]Event) error) error {
	var open []frame
	var evs []Event
	var raw []byte
	var vs *valState
	if s.Values {
		vs = &valState{add: s.vals.add}
	}
	skipping, skipped := s.From > 0, false
	var hdr []byte
	for k, b := range blocks {
		var err error
		if raw, err = s.readBlock(raw, b); err != nil {
			return fmt.Errorf("thread %d block %d (offset %d): %w", th.TID, b.seq, b.off, err)
		}
		// blocks before From, all of their events: only counted (the first block decoded
		// starts from its header's open frames, as a ring's oldest kept block does)
		skipping = skipping && k+1 < len(blocks) && s.conv(blocks[k+1].base) < s.From
		if skipping || s.Until > 0 && s.conv(b.base) > s.Until && (len(open) == 0 || s.UntilReturns && s.staysOpen(blocks, k+1, open, &hdr)) {
			lost, err := dataLost(raw[b.hdr : b.hdr+int64(le.Uint32(raw[56:]))])
			if err != nil {
				return fmt.Errorf("thread %d block %d (offset %d): %w", th.TID, b.seq, b.off, err)
			}
			th.Lost += lost
			th.N += uint64(b.nev)
			th.Skipped += uint64(b.nev)
			skipped = true
			continue
		}
		evs = evs[:0]
		if k > 0 && !skipped && b.lost > 0 {
			// events dropped between the previous block and this one: said where they
			// were, as the kernel's "[LOST n EVENTS]" (the calls around the gap are cut)
			evs = append(evs, Event{Kind: Marker, TS: s.conv(b.base), IP: s.addMarker(fmt.Sprintf("%s%d EVENTS]", LostMarkerPrefix, b.lost)), Depth: -1})
		}
		evs, open, err = decodeBlock(raw, b, th, evs, open, s.conv, s.addMarker, s.stackText, vs)
		if err != nil {
			return fmt.Errorf("thread %d block %d (offset %d): %w", th.TID, b.seq, b.off, err)
		}
		th.N += callEvents(evs)
		if skipped { // the frames open at the skip came from the header: counted already
			skipped = false
			for i := range evs {
				if evs[i].Kind == Entry && evs[i].Flags&FlagFromHeader != 0 {
					th.N--
					th.Skipped -= min(th.Skipped, 1)
				}
			}
		}
		if err := emit(evs); err != nil {
			return err
		}
	}
	return nil
}

// staysOpen says whether block k's header has the calls of open entered by Until as its
// outermost frames: none of them returns before that block, so the blocks before it hold
// only calls made after Until (passed over; the header brings back those still open).
// buf is the caller's, reused (threads are decoded concurrently).
func (s *Stream) staysOpen(blocks []block, k int, open []frame, buf *[]byte) bool {
	for len(open) > 0 && s.conv(open[len(open)-1].ts) > s.Until {
		open = open[:len(open)-1]
	}
	n := eventsHdrFixed + stackEntrySize*len(open)
	if k >= len(blocks) || blocks[k].hdr < int64(n) {
		return false
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	h := (*buf)[:n]
	if _, err := s.r.ReadAt(h, blocks[k].off); err != nil || int(le.Uint32(h[52:])) < len(open) {
		return false
	}
	for i, f := range open {
		e := h[eventsHdrFixed+stackEntrySize*i:]
		if (frame{ip: le.Uint64(e), ts: le.Uint64(e[8:])}) != f {
			return false
		}
	}
	return true
}

// dataLost sums the EXT LOST records of a block's event data, passing over the rest.
func dataLost(data []byte) (uint64, error) {
	var lost uint64
	for i, n := 0, len(data)/4; i < n; {
		w0 := le.Uint32(data[4*i:])
		switch w0 & 7 {
		case evExt:
			nw := int(w0 >> 8 & 0xff)
			if i+1+nw > n {
				return lost, fmt.Errorf("extended event %d: %d payload words past the end", w0>>3&31, nw)
			}
			if w0>>3&31 == extLost && nw >= 2 {
				lost += le.Uint64(data[4*(i+1):])
			}
			i += 1 + nw
		case evEntry, evFuncNear:
			i += 2
		case evFunc:
			i += 3
		case evExit, evExitUnwound, evFuncAgain, evEntryAgain:
			i++
		default:
			return lost, fmt.Errorf("event type %d cannot be read (written by a newer ftkit?)", w0&7)
		}
	}
	return lost, nil
}

// readBlock reads block b into raw (reused): its EVENTS chunk with the data of its MORE
// chunks appended and the header's data_len saying the whole.
func (s *Stream) readBlock(raw []byte, b block) ([]byte, error) {
	n := b.end - b.off
	if len(b.more) > 0 {
		n = b.hdr + b.size
	}
	if cap(raw) < int(n) {
		raw = make([]byte, n)
	}
	raw = raw[:n]
	first := b.end - b.off
	if len(b.more) > 0 {
		first = b.hdr + b.size
		for _, p := range b.more {
			first -= p.size
		}
	}
	if _, err := s.r.ReadAt(raw[:first], b.off); err != nil {
		return raw, err
	}
	at := first
	for _, p := range b.more {
		if _, err := s.r.ReadAt(raw[at:at+p.size], p.off); err != nil {
			return raw, fmt.Errorf("continuation at offset %d: %w", p.off, err)
		}
		at += p.size
	}
	if len(b.more) > 0 {
		le.PutUint32(raw[56:], uint32(b.size))
	}
	return raw, nil
}

// decodeBlock appends block b's events to evs. open is the thread's open frames after the
// previous block; the block's own header says which are open now: frames the stream
// left open that the header does not list ended in data that is not in the file (the
// next entry at their depth closes them, as the depth rule of the format says), and
// frames the header lists that the stream has not entered (a ring that starts in the
// middle of calls, a dropped block) are entered here with their recorded time.
func decodeBlock(raw []byte, b block, th *Thread, evs []Event, open []frame, conv func(uint64) uint64, mark func(string) uint64, stack func([]uint64) string, vs *valState) ([]Event, []frame, error) {
	if vs != nil {
		vs.next = nil // a short record and its event are never in two blocks
	}
	depth := int(le.Uint32(raw[52:]))
	dataLen := int(le.Uint32(raw[56:]))
	ipHi := uint64(le.Uint32(raw[60:])) << 32
	parentHi := uint64(le.Uint32(raw[64:])) << 32
	ts := le.Uint64(raw[32:])
	hdr := make([]frame, depth)
	for i := range hdr {
		e := raw[eventsHdrFixed+stackEntrySize*i:]
		hdr[i] = frame{ip: le.Uint64(e), ts: le.Uint64(e[8:])}
	}
	k := 0
	for k < len(open) && k < len(hdr) && open[k] == hdr[k] {
		k++
	}
	open = append(open[:k], hdr[k:]...)
	for d := k; d < len(hdr); d++ {
		evs = append(evs, Event{Kind: Entry, Flags: FlagFromHeader, TS: conv(hdr[d].ts), IP: hdr[d].ip, Depth: int32(d)})
	}
	data := raw[b.hdr : b.hdr+int64(dataLen)]
	word := func(i int) (uint32, error) {
		if 4*i+4 > len(data) {
			return 0, fmt.Errorf("event data ends inside an event (word %d of %d)", i, len(data)/4)
		}
		return le.Uint32(data[4*i:]), nil
	}
	n := uint32(0)
	var pairs pairCache
	var entries entryCache
	for i := 0; 4*i < len(data); {
		w0, _ := word(i)
		typ := w0 & 7
		if typ == evExt {
			sub, nw, arg := (w0>>3)&31, int(w0>>8&0xff), w0>>16
			if 4*(i+1+nw) > len(data) {
				return evs, open, fmt.Errorf("extended event %d: %d payload words past the end", sub, nw)
			}
			p := data[4*(i+1) : 4*(i+1+nw)]
			if vs != nil && sub != extArgsNext && sub != extRetvalNext {
				vs.next = nil // a short record belongs to the event right after it only
			}
			switch sub {
			case extTime:
				if nw >= 2 {
					ts = le.Uint64(p)
				}
			case extIPHi:
				if nw >= 1 {
					ipHi = uint64(le.Uint32(p)) << 32
				}
			case extParentHi:
				if nw >= 1 {
					parentHi = uint64(le.Uint32(p)) << 32
				}
			case extDepth:
				if int(arg) < len(open) {
					open = open[:arg]
				}
			case extLost:
				if nw >= 2 {
					th.Lost += le.Uint64(p)
				}
			case extMarker: // u64 ticks, then arg bytes of text
				if nw >= 2 {
					text := p[8:]
					text = text[:min(int(arg), len(text))]
					evs = append(evs, Event{Kind: Marker, TS: conv(le.Uint64(p)), IP: mark(string(text)), Depth: -1})
				}
			case extStack: // a trigger's stack trace: u64 ticks, arg code addresses
				if nw >= 2 && 2+2*int(arg) <= nw {
					pcs := make([]uint64, arg)
					for k := range pcs {
						pcs[k] = le.Uint64(p[8+8*k:])
					}
					evs = append(evs, Event{Kind: Marker, TS: conv(le.Uint64(p)), IP: mark(stack(pcs)), Depth: -1})
				}
			case extArgs, extRetval: // u64 ticks, then the values (values.go)
				if vs != nil && nw >= 2 {
					if ip32, v := parseValues(p[8:], int(arg&31), sub == extRetval); v != nil {
						vs.record(ip32, le.Uint64(p), v)
					}
				}
			case extArgsNext, extRetvalNext: // the values of the next event
				if vs != nil {
					vs.next = parseItems(p, int(arg&31), sub == extRetvalNext)
				}
			}
			i += 1 + nw
			continue
		}
		n++
		switch typ {
		case evExit, evExitUnwound:
			ts += uint64(w0 >> 3)
			ev := Event{Kind: Exit, TS: conv(ts)}
			if typ == evExitUnwound {
				ev.Flags = FlagUnwound
			}
			if len(open) == 0 {
				// An exit whose entry is nowhere in the file: nothing to close.
				ev.Depth = -1
				if vs != nil {
					vs.next = nil
				}
			} else {
				f := open[len(open)-1]
				evs = vs.before(evs, f.ip, ts, true, conv)
				open = open[:len(open)-1]
				ev.IP, ev.Parent, ev.Depth = f.ip, conv(f.ts), int32(len(open))
			}
			evs = append(evs, ev)
			i++
		case evEntry:
			w1, err := word(i + 1)
			if err != nil {
				return evs, open, err
			}
			ts += uint64(w0 >> 3)
			ip := ipHi | uint64(w1)
			entries[entrySlot(ip)] = ip
			evs = vs.before(evs, ip, ts, false, conv)
			evs = append(evs, Event{Kind: Entry, TS: conv(ts), IP: ip, Depth: int32(len(open))})
			open = append(open, frame{ip: ip, ts: ts})
			i += 2
		case evEntryAgain:
			ip := entries[w0>>24]
			if ip == 0 {
				return evs, open, fmt.Errorf("ENTRY_AGAIN of entry slot %d, which no entry of the block filled", w0>>24)
			}
			ts += uint64(w0 >> 3 & (1<<againDeltaBits - 1))
			evs = vs.before(evs, ip, ts, false, conv)
			evs = append(evs, Event{Kind: Entry, TS: conv(ts), IP: ip, Depth: int32(len(open))})
			open = append(open, frame{ip: ip, ts: ts})
			i++
		case evFunc:
			w2, err := word(i + 2)
			if err != nil {
				return evs, open, err
			}
			w1, _ := word(i + 1)
			ts += uint64(w0 >> 3)
			ip, parent := ipHi|uint64(w1), parentHi|uint64(w2)
			pairs[pairSlot(ip, parent)] = struct{ ip, parent uint64 }{ip, parent}
			evs = vs.before(evs, ip, ts, false, conv)
			evs = append(evs, Event{Kind: Call, TS: conv(ts), IP: ip, Parent: parent})
			i += 3
		case evFuncNear:
			w1, err := word(i + 1)
			if err != nil {
				return evs, open, err
			}
			ts += uint64(w0 >> 3 & (1<<nearDeltaBits - 1))
			ip := ipHi | uint64(w1)
			parent := ip + uint64(int64(int16(w0>>16)))
			pairs[pairSlot(ip, parent)] = struct{ ip, parent uint64 }{ip, parent}
			evs = vs.before(evs, ip, ts, false, conv)
			evs = append(evs, Event{Kind: Call, TS: conv(ts), IP: ip, Parent: parent})
			i += 2
		case evFuncAgain:
			p := pairs[w0>>24]
			if p.ip == 0 {
				return evs, open, fmt.Errorf("FUNC_AGAIN of pair slot %d, which no call of the block filled", w0>>24)
			}
			ts += uint64(w0 >> 3 & (1<<againDeltaBits - 1))
			evs = vs.before(evs, p.ip, ts, false, conv)
			evs = append(evs, Event{Kind: Call, TS: conv(ts), IP: p.ip, Parent: p.parent})
			i++
		default:
			return evs, open, fmt.Errorf("event type %d cannot be read (written by a newer ftkit?)", typ)
		}
	}
	if n != b.nev {
		return evs, open, fmt.Errorf("%d events decoded, the header says %d", n, b.nev)
	}
	return evs, open, nil
}
