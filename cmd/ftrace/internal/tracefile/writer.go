package tracefile

import (
	"bytes"
	"fmt"
	"io"
	"math"
)

// Write encodes t in format version 1 with the CLOCK_MONOTONIC clock (one tick = 1 ns,
// so event timestamps are written as they are). The runtime is the real producer; this
// encoder exists for tests and tools that build traces.
func Write(w io.Writer, t *Trace) error {
	return write(w, t, Version1, writeThreadsV1)
}

// write encodes the header, the command line and the memory map of t, then lets
// threads add the thread chunks of the given format version.
func write(w io.Writer, t *Trace, version uint32, threads func(t *Trace, chunk chunkFunc) error) error {
	var buf bytes.Buffer
	h := make([]byte, HeaderSize)
	copy(h, Magic)
	le.PutUint32(h[8:], version)
	le.PutUint32(h[12:], HeaderSize)
	le.PutUint32(h[16:], t.Header.Flags)
	le.PutUint32(h[20:], uint32(t.Header.PID))
	le.PutUint32(h[24:], uint32(t.Header.Signal))
	le.PutUint32(h[28:], ClockMonotonic)
	le.PutUint64(h[32:], math.Float64bits(1))
	// ref_ticks = ref_mono = 0: ticks are monotonic ns.
	if t.Header.WallStart != 0 {
		le.PutUint64(h[56:], uint64(t.Header.WallStart)-t.Header.StartNS)
	}
	le.PutUint64(h[64:], t.Header.StartNS)
	le.PutUint64(h[72:], t.Header.EndNS)
	switch t.Header.Tracer {
	case TracerFunction:
		le.PutUint32(h[80:], 1)
	case TracerFunctionGraph:
		le.PutUint32(h[80:], 2)
	case TracerBoth:
		le.PutUint32(h[80:], 3)
	}
	reason := uint32(1)
	if t.Header.Flags&FlagComplete == 0 {
		reason = 0
	}
	le.PutUint32(h[84:], reason)
	if version == Version1 {
		le.PutUint32(h[88:], RecordSize)
	} else {
		le.PutUint32(h[112:], t.Header.BlockSize)
		if t.Header.Ring {
			le.PutUint32(h[116:], 1)
			le.PutUint64(h[120:], t.Header.RingBytes)
		}
	}
	le.PutUint32(h[92:], uint32(t.Header.GraphDepth))
	le.PutUint64(h[104:], t.Header.LostNoBuf)
	buf.Write(h)

	chunk := func(typ uint32, hdr []byte, payload []byte) {
		size := uint64(ChunkHdrSize + len(hdr) + len(payload))
		pad := (8 - size%8) % 8
		var c [ChunkHdrSize]byte
		le.PutUint32(c[0:], typ)
		le.PutUint32(c[4:], uint32(ChunkHdrSize+len(hdr)))
		le.PutUint64(c[8:], size+pad)
		buf.Write(c[:])
		buf.Write(hdr)
		buf.Write(payload)
		buf.Write(make([]byte, pad))
	}
	if len(t.Header.Command) > 0 {
		var p bytes.Buffer
		for _, a := range t.Header.Command {
			p.WriteString(a)
			p.WriteByte(0)
		}
		chunk(ChunkCmdline, nil, p.Bytes())
	}
	if len(t.Maps) > 0 {
		hsize := mapsHdrSize
		if version >= Version2 {
			hsize = mapsHdrSizeV2
		}
		hdr := make([]byte, hsize-ChunkHdrSize)
		le.PutUint32(hdr, uint32(len(t.Maps)))
		var p bytes.Buffer
		for _, m := range t.Maps {
			if len(m.Path) > math.MaxUint16 || len(m.BuildID) > math.MaxUint8 {
				return fmt.Errorf("mapping %s: path or build-id too long", m.Path)
			}
			n := mapEntryFixed + len(m.BuildID) + len(m.Path)
			n = (n + 7) &^ 7
			e := make([]byte, n)
			le.PutUint32(e, uint32(n))
			le.PutUint16(e[4:], uint16(len(m.Path)))
			e[6] = byte(len(m.BuildID))
			e[7] = m.Flags
			le.PutUint64(e[8:], m.Start)
			le.PutUint64(e[16:], m.End)
			le.PutUint64(e[24:], m.Bias)
			copy(e[mapEntryFixed:], m.BuildID)
			copy(e[mapEntryFixed+len(m.BuildID):], m.Path)
			p.Write(e)
		}
		chunk(ChunkMaps, hdr, p.Bytes())
	}
	if err := threads(t, chunk); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// chunkFunc appends a chunk: its type, the rest of its fixed header, its payload.
type chunkFunc func(typ uint32, hdr []byte, payload []byte)

func writeThreadsV1(t *Trace, chunk chunkFunc) error {
	for _, th := range t.Threads {
		hdr := make([]byte, threadHdrSize-ChunkHdrSize)
		le.PutUint32(hdr[0:], uint32(th.TID))
		le.PutUint32(hdr[4:], th.Flags)
		le.PutUint64(hdr[8:], uint64(len(th.Events)))
		le.PutUint64(hdr[16:], th.Lost)
		le.PutUint64(hdr[24:], th.LostDepth)
		copy(hdr[32:48], th.Name)
		p := make([]byte, len(th.Events)*RecordSize)
		entries := []uint64{}
		for i, ev := range th.Events {
			r := p[i*RecordSize:]
			le.PutUint64(r, ev.TS)
			le.PutUint64(r[8:], ev.IP)
			aux := ev.Parent
			var typ uint16
			// an unknown depth is written as the runtime would: the frames open below
			nest := int32(len(entries))
			switch ev.Kind {
			case Call:
				typ = recFunc
			case Entry:
				typ = recEntry
				entries = append(entries, ev.TS)
			case Exit:
				typ = recExit
				if n := len(entries); n > 0 {
					if aux == 0 {
						aux = entries[n-1]
					}
					entries = entries[:n-1]
					nest--
				}
			default:
				return fmt.Errorf("thread %d: event %d: bad kind %v", th.TID, i, ev.Kind)
			}
			le.PutUint64(r[16:], aux)
			d := ev.Depth
			if d < 0 && ev.Kind != Call {
				d = nest
			} else if d < 0 {
				d = 0
			}
			le.PutUint32(r[24:], uint32(d))
			le.PutUint16(r[28:], typ)
			le.PutUint16(r[30:], ev.Flags)
		}
		chunk(ChunkThread, hdr, p)
	}
	return nil
}
