package tracefile

import (
	"fmt"
	"io"
)

// WriteOptions shape a version-2 encoding (for tests of the reader's block handling).
type WriteOptions struct {
	// BlockEvents is the most events one block holds (default 8192).
	BlockEvents int
	// DropFirst leaves out each thread's first DropFirst blocks, as a flight-recorder
	// ring that wrapped does (blocks are marked RING when it is set).
	DropFirst int
	// RingFrom, RingDrop: from block RingFrom on the blocks are marked RING and the first
	// RingDrop of them left out, as a ring switched on live mid-trace leaves them.
	RingFrom, RingDrop int
	// Partial writes each block twice: first a PARTIAL prefix of half its events.
	Partial bool
	// More writes each block in three pieces, as the runtime's writer does with a block
	// it flushes while it is being filled: an EVENTS chunk with the first third of its
	// events, then MORE chunks with the rest (format version 3).
	More bool
	// Again writes a call whose (function, parent) pair is in the block's cache as one
	// FUNC_AGAIN word, an entry of a function in it as one ENTRY_AGAIN word, as the
	// runtime does (format version 4).
	Again bool
	// BlockLost is the count of events dropped before each block but the first (its
	// header's lost), as a thread whose buffer was full between them has.
	BlockLost uint64
	// DropFrom, Drop: blocks DropFrom..DropFrom+Drop-1 are left out, as the runtime's
	// writer leaves blocks it could not write (a full disk), and the next block is
	// flagged DROPPED with their events added to its lost count.
	DropFrom, Drop int
}

// WriteV2 encodes t in format version 2 (3 with More) with the CLOCK_MONOTONIC clock (one tick = 1 ns),
// as the runtime writes it: each thread's events in self-contained blocks.
func WriteV2(w io.Writer, t *Trace, o WriteOptions) error {
	if o.BlockEvents <= 0 {
		o.BlockEvents = 8192
	}
	if t.Header.BlockSize == 0 {
		hd := t.Header
		hd.BlockSize = 65536
		tt := *t
		tt.Header = hd
		t = &tt
	}
	version := uint32(Version2)
	if o.More {
		version = Version3
	}
	if o.Again {
		version = Version4
	}
	return write(w, t, version, func(t *Trace, chunk chunkFunc) error {
		for _, th := range t.Threads {
			if err := writeThreadV2(th, o, t.Markers, chunk); err != nil {
				return fmt.Errorf("thread %d: %w", th.TID, err)
			}
		}
		return nil
	})
}

// encoder is one thread's v2 event encoder.
type encoder struct {
	data     []uint32
	nev      uint32
	ts       uint64 // time of the previous event
	ipHi     uint32
	parentHi uint32
	open     []frame
	markers  []string // Marker events' texts
	again    bool
	pairs    pairCache  // FUNC_AGAIN's, reset at each block
	entries  entryCache // ENTRY_AGAIN's, the same
}

func (e *encoder) ext(sub uint32, arg uint32, payload ...uint32) {
	e.data = append(e.data, evExt|sub<<3|uint32(len(payload))<<8|arg<<16)
	e.data = append(e.data, payload...)
}

// delta returns the time field for an event at ts, emitting a TIME event first when it
// does not fit in bits (or time went backwards).
func (e *encoder) delta(ts uint64, bits uint) uint32 {
	if ts < e.ts || ts-e.ts >= 1<<bits {
		e.ext(extTime, 0, uint32(ts), uint32(ts>>32))
		e.ts = ts
		return 0
	}
	d := uint32(ts - e.ts)
	e.ts = ts
	return d
}

func (e *encoder) hi(ip uint64) uint32 {
	if h := uint32(ip >> 32); h != e.ipHi {
		e.ext(extIPHi, 0, h)
		e.ipHi = h
	}
	return uint32(ip)
}

func (e *encoder) event(ev *Event) error {
	switch ev.Kind {
	case Marker: // EXT MARKER: u64 ticks, the text (not an event of the count)
		if ev.IP >= uint64(len(e.markers)) {
			return fmt.Errorf("marker %d of %d", ev.IP, len(e.markers))
		}
		text := []byte(e.markers[ev.IP])
		text = text[:min(len(text), 1000)]
		payload := []uint32{uint32(ev.TS), uint32(ev.TS >> 32)}
		for i := 0; i < len(text); i += 4 {
			var w [4]byte
			copy(w[:], text[i:])
			payload = append(payload, le.Uint32(w[:]))
		}
		e.ext(extMarker, uint32(len(text)), payload...)
		return nil
	case Exit:
		if len(e.open) == 0 {
			return fmt.Errorf("exit at %d without an open entry", ev.TS)
		}
		e.open = e.open[:len(e.open)-1]
		typ := uint32(evExit)
		if ev.Flags&FlagUnwound != 0 {
			typ = evExitUnwound
		}
		e.data = append(e.data, typ|e.delta(ev.TS, deltaBits)<<3)
	case Entry:
		if ev.Depth >= 0 && int(ev.Depth) < len(e.open) {
			// frames above this depth lost their exits
			e.ext(extDepth, uint32(ev.Depth))
			e.open = e.open[:ev.Depth]
		}
		e.open = append(e.open, frame{ip: ev.IP, ts: ev.TS})
		slot := entrySlot(ev.IP)
		if e.again && e.entries[slot] == ev.IP && ev.TS >= e.ts && ev.TS-e.ts < 1<<againDeltaBits {
			e.data = append(e.data, evEntryAgain|e.delta(ev.TS, againDeltaBits)<<3|slot<<24)
			break
		}
		if e.again {
			e.entries[slot] = ev.IP
		}
		lo := e.hi(ev.IP)
		e.data = append(e.data, evEntry|e.delta(ev.TS, deltaBits)<<3, lo)
	case Call:
		slot := pairSlot(ev.IP, ev.Parent)
		if p := e.pairs[slot]; e.again && p.ip == ev.IP && p.parent == ev.Parent && ev.TS >= e.ts && ev.TS-e.ts < 1<<againDeltaBits {
			e.data = append(e.data, evFuncAgain|e.delta(ev.TS, againDeltaBits)<<3|slot<<24)
			break
		}
		if e.again {
			e.pairs[slot] = struct{ ip, parent uint64 }{ev.IP, ev.Parent}
		}
		lo := e.hi(ev.IP)
		off := int64(ev.Parent - ev.IP)
		if off >= -1<<15 && off < 1<<15 && ev.TS >= e.ts && ev.TS-e.ts < 1<<nearDeltaBits {
			e.data = append(e.data, evFuncNear|e.delta(ev.TS, nearDeltaBits)<<3|uint32(uint16(off))<<16, lo)
			break
		}
		if h := uint32(ev.Parent >> 32); h != e.parentHi {
			e.ext(extParentHi, 0, h)
			e.parentHi = h
		}
		e.data = append(e.data, evFunc|e.delta(ev.TS, deltaBits)<<3, lo, uint32(ev.Parent))
	default:
		return fmt.Errorf("bad kind %v", ev.Kind)
	}
	e.nev++
	return nil
}

func writeThreadV2(th *Thread, o WriteOptions, markers []string, chunk chunkFunc) error {
	e := &encoder{markers: markers, again: o.Again}
	seq := uint64(0)
	emit := func(hdr []byte, data []uint32, nev uint32, flags uint32) {
		h := append([]byte(nil), hdr...)
		le.PutUint32(h[4:], flags)
		le.PutUint32(h[32:], nev)
		le.PutUint32(h[40:], uint32(4*len(data)))
		p := make([]byte, 4*len(data))
		for i, w := range data {
			le.PutUint32(p[4*i:], w)
		}
		chunk(ChunkEvents, h, p)
	}
	evs := th.Events
	var dropped uint64 // events of the blocks Drop left out, not yet in a block's lost
	for len(evs) > 0 || seq == 0 {
		n := min(o.BlockEvents, len(evs))
		// the block header: tid, flags, seq, base_ts, lost, nev, depth, data_len,
		// ip_hi, parent_hi, reserved, then the open frames (offsets from byte 16)
		hdr := make([]byte, eventsHdrFixed-ChunkHdrSize+stackEntrySize*len(e.open))
		le.PutUint32(hdr[0:], uint32(th.TID))
		le.PutUint64(hdr[8:], seq)
		le.PutUint64(hdr[16:], e.ts)
		if seq == 0 {
			le.PutUint64(hdr[24:], th.Lost)
		} else {
			le.PutUint64(hdr[24:], o.BlockLost)
		}
		le.PutUint32(hdr[36:], uint32(len(e.open)))
		le.PutUint32(hdr[44:], e.ipHi)
		le.PutUint32(hdr[48:], e.parentHi)
		for i, f := range e.open {
			le.PutUint64(hdr[56+stackEntrySize*i:], f.ip)
			le.PutUint64(hdr[64+stackEntrySize*i:], f.ts)
		}
		e.data, e.nev = e.data[:0], 0
		e.pairs, e.entries = pairCache{}, entryCache{}
		var half []uint32
		var halfN uint32
		var cut [2]struct{ words, nev int } // ends of the first two thirds
		for i := range evs[:n] {
			if err := e.event(&evs[i]); err != nil {
				return err
			}
			if i+1 == n/2 {
				half, halfN = append([]uint32(nil), e.data...), e.nev
			}
			for k := range cut {
				if i+1 == (k+1)*n/3 {
					cut[k].words, cut[k].nev = len(e.data), int(e.nev)
				}
			}
		}
		var flags uint32
		if o.DropFirst > 0 || (o.RingDrop > 0 && seq >= uint64(o.RingFrom)) {
			flags |= BlockRing
		}
		if o.Drop > 0 && seq >= uint64(o.DropFrom) && seq < uint64(o.DropFrom+o.Drop) {
			dropped += uint64(e.nev)
			evs = evs[n:]
			seq++
			continue
		}
		if dropped > 0 {
			flags |= BlockDropped
			le.PutUint64(hdr[24:], le.Uint64(hdr[24:])+dropped)
			dropped = 0
		}
		switch {
		case seq < uint64(o.DropFirst):
		case o.RingDrop > 0 && seq >= uint64(o.RingFrom) && seq < uint64(o.RingFrom+o.RingDrop):
		case o.More && cut[0].nev > 0:
			emit(hdr, e.data[:cut[0].words], uint32(cut[0].nev), flags|BlockPartial)
			more := func(from, to, nev int, flags uint32) {
				h := make([]byte, moreHdrSize-ChunkHdrSize)
				le.PutUint32(h[0:], uint32(th.TID))
				le.PutUint32(h[4:], flags)
				le.PutUint64(h[8:], seq)
				le.PutUint32(h[16:], uint32(4*from))
				le.PutUint32(h[20:], uint32(nev))
				le.PutUint32(h[24:], uint32(4*(to-from)))
				p := make([]byte, 4*(to-from))
				for i, w := range e.data[from:to] {
					le.PutUint32(p[4*i:], w)
				}
				chunk(ChunkMore, h, p)
			}
			more(cut[0].words, cut[1].words, cut[1].nev-cut[0].nev, BlockPartial)
			more(cut[1].words, len(e.data), int(e.nev)-cut[1].nev, 0)
		default:
			if o.Partial && halfN > 0 {
				emit(hdr, half, halfN, flags|BlockPartial)
			}
			emit(hdr, e.data, e.nev, flags)
		}
		evs = evs[n:]
		seq++
	}
	info := make([]byte, threadInfoSize-ChunkHdrSize)
	le.PutUint32(info[0:], uint32(th.TID))
	le.PutUint32(info[4:], th.Flags)
	le.PutUint64(info[8:], th.Lost)
	le.PutUint64(info[16:], th.LostDepth)
	le.PutUint64(info[24:], seq)
	copy(info[32:48], th.Name)
	chunk(ChunkThreadV2, info, nil)
	return nil
}
