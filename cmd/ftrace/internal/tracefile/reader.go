package tracefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Layout constants of format version 1 (docs/trace-format.md); versions 2 and 3 are in compact.go.
const (
	Magic          = "FTKITTRC"
	Version1       = 1
	HeaderSize     = 256
	ChunkHdrSize   = 16
	RecordSize     = 32
	ChunkMaps      = 1
	ChunkThread    = 2
	ChunkCmdline   = 3
	mapsHdrSize    = 24
	threadHdrSize  = 64
	mapEntryFixed  = 32
	ClockTSC       = 1
	ClockMonotonic = 2
	recFunc        = 1
	recEntry       = 2
	recExit        = 3
)

var le = binary.LittleEndian

// Open reads the trace file at path. Errors name the file.
func Open(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := Read(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Read decodes a trace of the given size from r, every event into memory.
func Read(r io.ReaderAt, size int64) (*Trace, error) {
	s, err := index(r, size)
	if err != nil {
		return nil, err
	}
	for i, th := range s.Trace.Threads {
		var evs []Event
		if n := min(s.src[i].count(), uint64(size)/4); n > 0 { // a hint: never more than the file holds
			evs = make([]Event, 0, n)
		}
		err := s.Events(i, func(b []Event) error {
			evs = append(evs, b...)
			return nil
		})
		if err != nil {
			return nil, err
		}
		th.Events, th.N = evs, 0
	}
	s.Trace.Markers = s.markers
	return s.Trace, nil
}

// reasonName is the header's reason field as Header.Reason says it.
func reasonName(reason uint32) string {
	reasons := []string{"live (not finalised)", "exit", "fatal signal", "snapshot", "finish (ftrace live finish, ftrace_trace_finish)", "exec",
		ReasonSize, ReasonDuration}
	if int(reason) < len(reasons) {
		return reasons[reason]
	}
	return fmt.Sprintf("reason(%d)", reason)
}

// Ident says which process and moment a trace file is of, and why it was finalised, from
// its header alone: what a caller needs without the stream's index of the whole file.
type Ident struct {
	PID        int
	Start, End uint64 // the header's start and end ticks (End 0: not finalised)
	Snapshot   bool   // FlagSnapshot: a copy of the process's trace so far
	Reason     string // as Header.Reason
}

// ReadIdent reads only the header of the trace at path.
func ReadIdent(path string) (Ident, error) {
	f, err := os.Open(path)
	if err != nil {
		return Ident{}, err
	}
	defer f.Close()
	h := make([]byte, 88)
	if _, err := f.ReadAt(h, 0); err != nil {
		return Ident{}, fmt.Errorf("%s: reading header: %w", path, err)
	}
	if string(h[:8]) != Magic {
		return Ident{}, fmt.Errorf("%s: not an ftkit trace", path)
	}
	return Ident{PID: int(le.Uint32(h[20:])), Start: le.Uint64(h[64:]), End: le.Uint64(h[72:]),
		Snapshot: le.Uint32(h[16:])&FlagSnapshot != 0, Reason: reasonName(le.Uint32(h[84:]))}, nil
}

// ReadReason is ReadIdent's Reason: why the trace at path was finalised.
func ReadReason(path string) (string, error) {
	id, err := ReadIdent(path)
	return id.Reason, err
}

// index reads everything but the events: header, command line, memory maps, the
// threads' facts and where their events are.
func index(r io.ReaderAt, size int64) (*Stream, error) {
	if size < HeaderSize {
		m := make([]byte, len(Magic))
		if n, _ := r.ReadAt(m, 0); n == len(Magic) && string(m) == Magic {
			return nil, fmt.Errorf("a truncated ftkit trace: %d bytes, shorter than its %d-byte header", size, HeaderSize)
		}
		return nil, fmt.Errorf("not an ftkit trace: %d bytes, shorter than the %d-byte header", size, HeaderSize)
	}
	h := make([]byte, HeaderSize)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, fmt.Errorf("reading header: %w", err)
	}
	if string(h[:4]) == "\x7fELF" {
		// `ftrace info PROG` is what a new user tries first
		return nil, errors.New("not an ftkit trace but an ELF file: `ftrace record -- PROG` traces a program, " +
			"`ftrace args PROG` lists its functions, `ftlink --check PROG` its call sites")
	}
	if string(h[:8]) != Magic {
		return nil, fmt.Errorf("not an ftkit trace (magic %q, want %q)", printable(h[:8]), Magic)
	}
	t := &Trace{}
	st := &Stream{Trace: t, r: r}
	hd := &t.Header
	hd.Version = le.Uint32(h[8:])
	if hd.Version < Version1 || hd.Version > Version4 {
		return nil, fmt.Errorf("trace format version %d not supported (this ftrace reads versions %d to %d; written by a newer ftkit?)", hd.Version, Version1, Version4)
	}
	hdrSize := int64(le.Uint32(h[12:]))
	if hdrSize < HeaderSize || hdrSize > size {
		return nil, fmt.Errorf("bad header_size %d (file is %d bytes)", hdrSize, size)
	}
	hd.Flags = le.Uint32(h[16:])
	hd.PID = int(le.Uint32(h[20:]))
	hd.Signal = int(le.Uint32(h[24:]))
	clock := le.Uint32(h[28:])
	nsPerTick := math.Float64frombits(le.Uint64(h[32:]))
	refTicks := le.Uint64(h[40:])
	refMono := le.Uint64(h[48:])
	refReal := le.Uint64(h[56:])
	startTicks := le.Uint64(h[64:])
	endTicks := le.Uint64(h[72:])
	tracer := le.Uint32(h[80:])
	reason := le.Uint32(h[84:])
	recSize := le.Uint32(h[88:])
	hd.GraphDepth = int(le.Uint32(h[92:]))
	hd.ClockHz = le.Uint64(h[96:])
	hd.LostNoBuf = le.Uint64(h[104:])
	switch clock {
	case ClockTSC:
		hd.Clock = "tsc"
	case ClockMonotonic:
		hd.Clock = "clock_gettime"
	default:
		return nil, fmt.Errorf("unknown clock %d in header", clock)
	}
	if math.IsNaN(nsPerTick) || math.IsInf(nsPerTick, 0) || nsPerTick <= 0 || nsPerTick > 1e6 {
		return nil, fmt.Errorf("bad ns_per_tick %v in header", nsPerTick)
	}
	var v2 *v2state
	if hd.Version >= Version2 {
		if recSize != 0 {
			return nil, fmt.Errorf("record_size %d in a version %d trace (want 0: variable)", recSize, hd.Version)
		}
		hd.BlockSize = le.Uint32(h[112:])
		hd.Ring = le.Uint32(h[116:]) == 1
		hd.RingBytes = le.Uint64(h[120:])
		v2 = &v2state{threads: map[int]*threadV2{}}
	} else if recSize != RecordSize {
		return nil, fmt.Errorf("record_size %d not supported (want %d)", recSize, RecordSize)
	}
	switch tracer {
	case 0:
		hd.Tracer = "nop"
	case 1:
		hd.Tracer = TracerFunction
	case 2:
		hd.Tracer = TracerFunctionGraph
	case 3: // switched live between the two
		hd.Tracer = TracerBoth
	default:
		hd.Tracer = fmt.Sprintf("tracer(%d)", tracer)
	}
	hd.Reason = reasonName(reason)
	switch {
	case hd.Flags&FlagComplete != 0:
	case hd.Ring:
		// the rings are written only at exit, a fatal signal, a snapshot or a dump
		hd.Warnings = append(hd.Warnings, "not finalised (the process was killed, or still runs): "+
			"a flight recorder keeps its events in the process's memory until it writes them, "+
			"so a killed process's events are lost (the snapshots and dumps it wrote have theirs)")
	default:
		// a killed process's .part, or one still running: said by every reader
		hd.Warnings = append(hd.Warnings, "not finalised (the process was killed, or still runs): "+
			"each thread's last events, up to about 100 ms, may be missing and are not counted as lost")
	}
	conv := func(ticks uint64) uint64 {
		if nsPerTick == 1 { // clock_gettime: ticks are ns already
			if v := int64(refMono) + int64(ticks-refTicks); v > 0 {
				return uint64(v)
			}
			return 0
		}
		d := float64(int64(ticks-refTicks)) * nsPerTick
		v := float64(refMono) + d
		if v < 0 {
			return 0
		}
		return uint64(math.Round(v))
	}
	hd.StartNS = conv(startTicks)
	if endTicks != 0 {
		hd.EndNS = conv(endTicks)
	}
	if refReal != 0 {
		hd.WallStart = int64(hd.StartNS + (refReal - refMono))
	}

	off := hdrSize
	var ch [threadHdrSize]byte
	for off+ChunkHdrSize <= size {
		if _, err := r.ReadAt(ch[:ChunkHdrSize], off); err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		typ := le.Uint32(ch[0:])
		chHdr := int64(le.Uint32(ch[4:]))
		csize := le.Uint64(ch[8:])
		if typ == 0 && csize == 0 {
			break
		}
		sane := csize%8 == 0 && csize >= ChunkHdrSize && chHdr >= ChunkHdrSize && uint64(chHdr) <= csize
		if !sane || csize > uint64(size-off) {
			switch {
			case hd.Flags&FlagComplete == 0:
				// A live file's last chunk may not be complete yet: keep what was read.
				hd.Warnings = append(hd.Warnings, fmt.Sprintf("chunk at offset %d: bad size %d (header %d); trace not finalised, ignoring the rest", off, csize, chHdr))
			case sane:
				// a finalised trace cut short (a copy of part of it): what precedes reads
				hd.Warnings = append(hd.Warnings, fmt.Sprintf("trace truncated: the chunk at offset %d claims %d bytes, %d are left; ignoring the rest", off, csize, size-off))
			default:
				return nil, fmt.Errorf("chunk at offset %d: bad size %d (header size %d, %d bytes left)", off, csize, chHdr, size-off)
			}
			break
		}
		end := off + int64(csize)
		var err error
		switch {
		case typ == ChunkCmdline:
			err = readCmdline(r, t, off+chHdr, end)
		case typ == ChunkMaps && v2 == nil:
			err = readMaps(r, t, off, chHdr, mapsHdrSize, end)
		case typ == ChunkMaps:
			if err = readMaps(r, t, off, chHdr, mapsHdrSizeV2, end); err == nil {
				v2.maps = append(v2.maps, t.Maps)
			}
		case typ == ChunkThread && v2 == nil:
			err = st.readThread(off, chHdr, end)
		case typ == ChunkEvents && v2 != nil:
			err = v2.readEventsHeader(r, off, chHdr, end)
		case typ == ChunkMore && v2 != nil && hd.Version >= Version3:
			err = v2.readMore(r, off, chHdr, end, func(w string) { hd.Warnings = append(hd.Warnings, w) })
		case typ == ChunkSkip:
			// a block its ring reused while it was copied: missing, as one overwritten
		case typ == ChunkThreadV2 && v2 != nil:
			err = v2.readThreadInfo(r, off, end, func(w string) { hd.Warnings = append(hd.Warnings, w) })
		default:
			hd.Warnings = append(hd.Warnings, fmt.Sprintf("chunk at offset %d: unknown type %d skipped", off, typ))
		}
		if err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		off = end
	}
	st.conv = conv
	if v2 != nil {
		v2.finish(st)
	}
	st.sortThreads()
	return st, nil
}

func printable(b []byte) string {
	return string(bytes.Map(func(r rune) rune {
		if r < 32 || r > 126 {
			return '.'
		}
		return r
	}, b))
}

func readAt(r io.ReaderAt, from, to int64) ([]byte, error) {
	b := make([]byte, to-from)
	if _, err := r.ReadAt(b, from); err != nil {
		return nil, err
	}
	return b, nil
}

func readCmdline(r io.ReaderAt, t *Trace, from, to int64) error {
	b, err := readAt(r, from, to)
	if err != nil {
		return fmt.Errorf("cmdline: %w", err)
	}
	b = bytes.TrimRight(b, "\x00")
	t.Header.Command = nil
	if len(b) == 0 {
		return nil
	}
	for _, a := range bytes.Split(b, []byte{0}) {
		t.Header.Command = append(t.Header.Command, string(a))
	}
	return nil
}

func readMaps(r io.ReaderAt, t *Trace, off, hdr, minHdr, end int64) error {
	if hdr < minHdr {
		return fmt.Errorf("maps: header size %d < %d", hdr, minHdr)
	}
	b, err := readAt(r, off, end)
	if err != nil {
		return fmt.Errorf("maps: %w", err)
	}
	count := le.Uint32(b[16:])
	var maps []Mapping
	p := b[hdr:]
	for i := uint32(0); i < count; i++ {
		if len(p) < mapEntryFixed {
			return fmt.Errorf("maps: entry %d of %d: truncated", i, count)
		}
		esize := le.Uint32(p)
		plen := int(le.Uint16(p[4:]))
		blen := int(p[6])
		if esize%8 != 0 || uint64(esize) > uint64(len(p)) || mapEntryFixed+plen+blen > int(esize) {
			return fmt.Errorf("maps: entry %d of %d: bad size %d (path %d, build-id %d bytes, %d left)", i, count, esize, plen, blen, len(p))
		}
		m := Mapping{
			Flags: p[7],
			Start: le.Uint64(p[8:]),
			End:   le.Uint64(p[16:]),
			Bias:  le.Uint64(p[24:]),
		}
		if blen > 0 {
			m.BuildID = append([]byte(nil), p[mapEntryFixed:mapEntryFixed+blen]...)
		}
		m.Path = string(p[mapEntryFixed+blen : mapEntryFixed+blen+plen])
		if m.End < m.Start {
			return fmt.Errorf("maps: entry %d (%s): end 0x%x before start 0x%x", i, m.Path, m.End, m.Start)
		}
		maps = append(maps, m)
		p = p[esize:]
	}
	// The last MAPS chunk is the most complete.
	t.Maps = maps
	return nil
}

// readThread notes a version-1 THREAD chunk: the thread's facts and where its records are.
func (s *Stream) readThread(off, hdr, end int64) error {
	t := s.Trace
	if hdr < threadHdrSize {
		return fmt.Errorf("thread: header size %d < %d", hdr, threadHdrSize)
	}
	h, err := readAt(s.r, off, off+threadHdrSize)
	if err != nil {
		return fmt.Errorf("thread: %w", err)
	}
	th := &Thread{
		TID:       int(le.Uint32(h[16:])),
		Flags:     le.Uint32(h[20:]),
		Lost:      le.Uint64(h[32:]),
		LostDepth: le.Uint64(h[40:]),
		Name:      string(bytes.TrimRight(h[48:64], "\x00")),
	}
	nrec := le.Uint64(h[24:])
	room := uint64(end-off-hdr) / RecordSize
	if nrec > room {
		if t.Header.Flags&FlagComplete != 0 {
			return fmt.Errorf("thread %d: %d records do not fit in the chunk (room for %d)", th.TID, nrec, room)
		}
		t.Header.Warnings = append(t.Header.Warnings, fmt.Sprintf("thread %d: %d records claimed, room for %d (trace not finalised)", th.TID, nrec, room))
		nrec = room
	}
	t.Threads = append(t.Threads, th)
	s.src = append(s.src, source{v1: v1records{off: off + hdr, n: nrec}})
	return nil
}

// decodeV1 passes a version-1 thread's records to emit in batches.
func (s *Stream) decodeV1(th *Thread, v v1records, emit func([]Event) error) error {
	const batch = 4096
	buf := make([]byte, batch*RecordSize)
	evs := make([]Event, 0, batch)
	pos := v.off
	unknown := 0
	for left := v.n; left > 0; {
		n := min(left, batch)
		b := buf[:n*RecordSize]
		if _, err := s.r.ReadAt(b, pos); err != nil {
			return fmt.Errorf("thread %d: reading records: %w", th.TID, err)
		}
		evs = evs[:0]
		for i := uint64(0); i < n; i++ {
			rec := b[i*RecordSize:]
			ev := Event{
				TS:    s.conv(le.Uint64(rec)),
				IP:    le.Uint64(rec[8:]),
				Depth: int32(le.Uint32(rec[24:])),
				Flags: le.Uint16(rec[30:]),
			}
			aux := le.Uint64(rec[16:])
			switch typ := le.Uint16(rec[28:]); typ {
			case recFunc:
				ev.Kind, ev.Parent = Call, aux
			case recEntry:
				ev.Kind, ev.Parent = Entry, aux
			case recExit:
				ev.Kind = Exit
				if aux != 0 {
					ev.Parent = s.conv(aux)
				}
			default:
				// Newer writers may add record types: skip them, say so once.
				if unknown == 0 {
					s.warnOnce(fmt.Sprintf("thread %d: record %d: unknown type %d skipped", th.TID, v.n-left+i, typ))
				}
				unknown++
				continue
			}
			evs = append(evs, ev)
		}
		th.N += callEvents(evs)
		if err := emit(evs); err != nil {
			return err
		}
		left -= n
		pos += int64(n * RecordSize)
	}
	return nil
}
