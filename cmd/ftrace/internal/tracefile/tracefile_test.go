package tracefile

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() *Trace {
	return &Trace{
		Header: Header{Version: 1, Tracer: TracerFunctionGraph, PID: 4242, Flags: FlagComplete | FlagLost,
			Command: []string{"./prog", "a b", "c"}, StartNS: 1_000_000, EndNS: 2_000_000, Clock: "clock_gettime",
			Reason: "exit", GraphDepth: 7, LostNoBuf: 9, WallStart: 1_700_000_000_000_000_000},
		Maps: []Mapping{
			{Start: 0x555555554000, End: 0x555555559000, Bias: 0x555555554000, Path: "/tmp/prog", BuildID: []byte{1, 2, 3, 4, 5}, Flags: MapMain},
			{Start: 0x7fff0000, End: 0x7fff2000, Bias: 0x7fff0000, Path: "linux-vdso.so.1", Flags: MapVDSO},
		},
		Threads: []*Thread{
			{TID: 4242, Name: "prog", Lost: 3, LostDepth: 1, Events: []Event{
				{Kind: Entry, TS: 1_000_100, IP: 0x555555555004, Parent: 0x7f00, Depth: 0},
				{Kind: Entry, TS: 1_000_200, IP: 0x555555555104, Parent: 0x555555555010, Depth: 1},
				{Kind: Exit, TS: 1_000_300, IP: 0x555555555104, Depth: 1, Flags: FlagUnwound},
				{Kind: Exit, TS: 1_000_400, IP: 0x555555555004, Depth: 0},
			}},
			{TID: 4243, Name: "a-very-long-name", Flags: ThreadExited, Events: []Event{
				{Kind: Entry, TS: 1_000_150, IP: 0x555555555204, Parent: 0x7f10},
			}},
		},
	}
}

func encode(t *testing.T, tr *Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	want := sample()
	data := encode(t, want)
	got, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Fields the format does not carry or that the reader derives.
	want.Threads[1].Name = want.Threads[1].Name[:16]
	want.Header.Reason = "exit"
	// Exits carry their entry's time.
	want.Threads[0].Events[2].Parent = 1_000_200
	want.Threads[0].Events[3].Parent = 1_000_100
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("header:\n got %+v\nwant %+v", got.Header, want.Header)
	}
	if !reflect.DeepEqual(got.Maps, want.Maps) {
		t.Errorf("maps:\n got %+v\nwant %+v", got.Maps, want.Maps)
	}
	if len(got.Threads) != len(want.Threads) {
		t.Fatalf("%d threads, want %d", len(got.Threads), len(want.Threads))
	}
	for i := range want.Threads {
		if !reflect.DeepEqual(got.Threads[i], want.Threads[i]) {
			t.Errorf("thread %d:\n got %+v\nwant %+v", i, got.Threads[i], want.Threads[i])
		}
	}
	calls, entries, exits, lost, lostDepth := got.Counts()
	if calls != 0 || entries != 3 || exits != 2 || lost != 3 || lostDepth != 1 {
		t.Errorf("counts = %d %d %d %d %d", calls, entries, exits, lost, lostDepth)
	}
}

// TestTSCConversion checks the tick → ns conversion on a hand-made TSC header.
func TestTSCConversion(t *testing.T) {
	tr := &Trace{Header: Header{Tracer: TracerFunction, Flags: FlagComplete},
		Threads: []*Thread{{TID: 1, Events: []Event{{Kind: Call, TS: 0, IP: 1}}}}}
	data := encode(t, tr)
	le.PutUint32(data[28:], ClockTSC)
	le.PutUint64(data[32:], math.Float64bits(0.5)) // 2 GHz
	le.PutUint64(data[40:], 10_000)                // ref ticks
	le.PutUint64(data[48:], 7_000_000)             // ref mono ns
	le.PutUint64(data[56:], 1_000_007_000_000)     // ref real ns
	le.PutUint64(data[64:], 12_000)                // start ticks
	// The one record's ts: 30000 ticks.
	rec := len(data) - RecordSize
	le.PutUint64(data[rec:], 30_000)
	got, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Clock != "tsc" || got.Header.StartNS != 7_001_000 {
		t.Errorf("clock %q start %d, want tsc 7001000", got.Header.Clock, got.Header.StartNS)
	}
	if ts := got.Threads[0].Events[0].TS; ts != 7_010_000 {
		t.Errorf("event ts = %d, want 7010000", ts)
	}
	if got.Header.WallStart != 1_000_000_000_000+7_001_000 {
		t.Errorf("wall start = %d", got.Header.WallStart)
	}
}

func TestLastMapsChunkWins(t *testing.T) {
	a, b := sample(), sample()
	b.Maps = b.Maps[:1]
	b.Maps[0].Path = "/second"
	da, db := encode(t, a), encode(t, b)
	// header + a's chunks + b's MAPS chunk (the first chunk after b's CMDLINE).
	off := HeaderSize
	cmdSize := int(le.Uint64(db[off+8:]))
	mapsSize := int(le.Uint64(db[off+cmdSize+8:]))
	data := append(append([]byte(nil), da...), db[off+cmdSize:off+cmdSize+mapsSize]...)
	got, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Maps) != 1 || got.Maps[0].Path != "/second" {
		t.Errorf("maps = %+v, want the last chunk's", got.Maps)
	}
}

// A live (not finalised) file: chunks reserve more room than they use and may end with
// zeros; readers accept it.
func TestLiveFile(t *testing.T) {
	tr := sample()
	tr.Header.Flags = 0
	data := encode(t, tr)
	// Grow the last thread chunk by 4 records of reserved room and add a zero chunk header.
	last := len(data)
	off := HeaderSize
	for off < last {
		size := int(le.Uint64(data[off+8:]))
		if off+size == last {
			le.PutUint64(data[off+8:], uint64(size+4*RecordSize))
		}
		off += size
	}
	data = append(data, make([]byte, 4*RecordSize+ChunkHdrSize+100)...)
	got, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Reason != "live (not finalised)" || len(got.Threads) != 2 || len(got.Threads[1].Events) != 1 {
		t.Errorf("got reason %q, %d threads", got.Header.Reason, len(got.Threads))
	}
}

func TestBadInput(t *testing.T) {
	good := encode(t, sample())
	firstChunk := HeaderSize
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		want   string
	}{
		{"short", func(b []byte) []byte { return b[:100] }, "a truncated ftkit trace: 100 bytes, shorter than its 256-byte header"},
		{"short, no magic", func(b []byte) []byte { return append([]byte("x"), b[1:100]...) }, "not an ftkit trace: 100 bytes, shorter than the 256-byte header"},
		{"magic", func(b []byte) []byte { copy(b, "NOTTRACE"); return b }, "not an ftkit trace"},
		{"version", func(b []byte) []byte { le.PutUint32(b[8:], 9); return b }, "version 9 not supported"},
		{"header size", func(b []byte) []byte { le.PutUint32(b[12:], 1<<30); return b }, "bad header_size"},
		{"clock", func(b []byte) []byte { le.PutUint32(b[28:], 9); return b }, "unknown clock 9"},
		{"ns_per_tick", func(b []byte) []byte { le.PutUint64(b[32:], math.Float64bits(math.NaN())); return b }, "bad ns_per_tick"},
		{"record size", func(b []byte) []byte { le.PutUint32(b[88:], 24); return b }, "record_size 24"},
		{"chunk size", func(b []byte) []byte { le.PutUint64(b[firstChunk+8:], 12); return b }, "bad size 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.mutate(append([]byte(nil), good...))
			_, err := Read(bytes.NewReader(data), int64(len(data)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A finalised trace cut short (or whose chunk claims more than the file holds) reads up
// to the chunk that does not fit, with a warning saying so.
func TestTruncatedWarns(t *testing.T) {
	good := encode(t, sample())
	for name, data := range map[string][]byte{
		"truncated":      good[:len(good)-8],
		"chunk past end": func() []byte { b := append([]byte(nil), good...); le.PutUint64(b[HeaderSize+8:], 1<<40); return b }(),
	} {
		tr, err := Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w := strings.Join(tr.Header.Warnings, "\n"); !strings.Contains(w, "trace truncated: the chunk at offset") {
			t.Errorf("%s: warnings %q", name, w)
		}
	}
}

func TestUnknownRecordSkipped(t *testing.T) {
	data := encode(t, sample())
	le.PutUint16(data[len(data)-4:], 9) // the last record: thread 4243's only event
	tr, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Threads[1].Events); n != 0 || len(tr.Header.Warnings) != 1 || !strings.Contains(tr.Header.Warnings[0], "unknown type 9 skipped") {
		t.Errorf("%d events, warnings %q", n, tr.Header.Warnings)
	}
}

func TestOpenNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.dat")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("error %v does not name the file", err)
	}
}

func FuzzTraceRead(f *testing.F) {
	var b bytes.Buffer
	if err := Write(&b, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	// version 2 seeds: small blocks, a ring, partial blocks
	rng := rand.New(rand.NewSource(4))
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Maps: sample().Maps, Threads: []*Thread{{TID: 3, Events: randomStream(rng, 60)}}}
	for _, o := range []WriteOptions{{BlockEvents: 16}, {BlockEvents: 8, DropFirst: 2}, {BlockEvents: 20, Partial: true}, {BlockEvents: 20, More: true}} {
		b.Reset()
		if err := WriteV2(&b, tr, o); err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte(nil), b.Bytes()...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), int64(len(data)))
		if err == nil {
			tr.Counts()
		}
	})
}

// ReadReason reads the header only and says what the stream's header says.
func TestReadReason(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	if err := Write(&b, sample()); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	path := filepath.Join(dir, "t.dat")
	for _, c := range []struct {
		reason uint32
		want   string
	}{{1, "exit"}, {6, ReasonSize}, {7, ReasonDuration}, {9, "reason(9)"}} {
		binary.LittleEndian.PutUint32(data[84:], c.reason)
		os.WriteFile(path, data, 0o644)
		got, err := ReadReason(path)
		st, err2 := OpenStream(path)
		if err != nil || err2 != nil || got != c.want || st.Trace.Header.Reason != got {
			t.Errorf("reason %d: ReadReason %q %v, want %q (stream: %v)", c.reason, got, err, c.want, err2)
		}
		if st != nil {
			st.Close()
		}
	}
	os.WriteFile(path, []byte(strings.Repeat("not a trace ", 30)), 0o644)
	if _, err := ReadReason(path); err == nil || !strings.Contains(err.Error(), "not an ftkit trace") {
		t.Errorf("a text file: %v", err)
	}
}
