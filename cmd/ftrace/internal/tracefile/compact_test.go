package tracefile

import (
	"bytes"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// expectV2 is what a version-2 reader gives back for events written by WriteV2: entries
// carry no return address, exits name their function and entry time, depths are the nesting.
func expectV2(evs []Event) []Event {
	var out []Event
	var open []Event
	for _, ev := range evs {
		switch ev.Kind {
		case Entry:
			if ev.Depth >= 0 && int(ev.Depth) < len(open) {
				open = open[:ev.Depth]
			}
			ev.Parent, ev.Depth = 0, int32(len(open))
			open = append(open, ev)
		case Exit:
			f := open[len(open)-1]
			open = open[:len(open)-1]
			ev.IP, ev.Parent, ev.Depth = f.IP, f.TS, int32(len(open))
		case Call:
			ev.Depth = 0
		}
		out = append(out, ev)
	}
	return out
}

func encodeV2(t testing.TB, tr *Trace, o WriteOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteV2(&b, tr, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readBytes(t testing.TB, data []byte) *Trace {
	t.Helper()
	tr, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// randomStream makes a properly nested stream mixing graph and function-tracer events,
// with addresses on both sides of 4 GiB boundaries, callers near and far, and time gaps
// that need TIME events.
func randomStream(rng *rand.Rand, n int) []Event {
	bases := []uint64{0x555555554000, 0x7f1234560000, 0x7f12ffff0000, 0x400000}
	var evs []Event
	var open []uint64
	ts := uint64(1_000_000)
	for len(evs) < n {
		switch {
		case rng.Intn(40) == 0:
			ts += uint64(rng.Int63n(1 << 33)) // a long pause
		case rng.Intn(200) == 0 && ts > 10:
			ts -= uint64(rng.Intn(10)) // a clock that stepped back
		default:
			ts += uint64(rng.Intn(300))
		}
		ip := bases[rng.Intn(len(bases))] + uint64(rng.Intn(1<<20))
		switch r := rng.Intn(10); {
		case r < 4 && len(open) < 60:
			evs = append(evs, Event{Kind: Entry, TS: ts, IP: ip, Depth: -1})
			open = append(open, ip)
		case r < 8 && len(open) > 0:
			ev := Event{Kind: Exit, TS: ts}
			if rng.Intn(20) == 0 {
				ev.Flags = FlagUnwound
			}
			evs = append(evs, ev)
			open = open[:len(open)-1]
		default:
			parent := ip + uint64(rng.Intn(200))
			if rng.Intn(3) == 0 {
				parent = bases[rng.Intn(len(bases))] + uint64(rng.Intn(1<<20))
			}
			evs = append(evs, Event{Kind: Call, TS: ts, IP: ip, Parent: parent})
		}
	}
	return evs
}

func TestRoundTripV2(t *testing.T) {
	want := sample()
	want.Header.Version = Version2
	data := encodeV2(t, want, WriteOptions{})
	got := readBytes(t, data)
	want.Header.Reason = "exit"
	want.Header.BlockSize = 65536
	want.Threads[1].Name = want.Threads[1].Name[:16]
	for _, th := range want.Threads {
		th.Events = expectV2(th.Events)
	}
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("header:\n got %+v\nwant %+v", got.Header, want.Header)
	}
	if !reflect.DeepEqual(got.Maps, want.Maps) {
		t.Errorf("maps:\n got %+v\nwant %+v", got.Maps, want.Maps)
	}
	if !reflect.DeepEqual(got.Threads, want.Threads) {
		for i := range got.Threads {
			t.Errorf("thread %d:\n got %+v\nwant %+v", i, got.Threads[i], want.Threads[i])
		}
	}
}

// repeatPairs gives most function-tracer calls of evs the function and parent of one of
// the last calls, and most entries the function of one of the last entries (as loops
// do), so that FUNC_AGAIN and ENTRY_AGAIN have pairs to find.
func repeatPairs(rng *rand.Rand, evs []Event) []Event {
	out := append([]Event(nil), evs...)
	var seen, entered []Event
	for i, ev := range out {
		if ev.Kind == Entry {
			if len(entered) > 0 && rng.Intn(4) != 0 {
				out[i].IP = entered[len(entered)-1-rng.Intn(min(len(entered), 300))].IP
			}
			entered = append(entered, out[i])
			continue
		}
		if ev.Kind != Call {
			continue
		}
		if len(seen) > 0 && rng.Intn(4) != 0 {
			p := seen[len(seen)-1-rng.Intn(min(len(seen), 400))]
			out[i].IP, out[i].Parent = p.IP, p.Parent
		}
		seen = append(seen, out[i])
	}
	return out
}

func TestV2Blocks(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	evs := repeatPairs(rng, randomStream(rng, 20000))
	for _, o := range []WriteOptions{{BlockEvents: 1}, {BlockEvents: 7}, {BlockEvents: 1000}, {BlockEvents: 333, Partial: true},
		{BlockEvents: 333, More: true}, {BlockEvents: 4, More: true}, {BlockEvents: 100, DropFirst: 2, More: true},
		{BlockEvents: 1, Again: true}, {BlockEvents: 1000, Again: true}, {BlockEvents: 333, Partial: true, Again: true},
		{BlockEvents: 5, More: true, Again: true}, {BlockEvents: 100, DropFirst: 2, More: true, Again: true}} {
		tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
			Threads: []*Thread{{TID: 7, Name: "t", Events: evs}, {TID: 9, Events: evs[:5000]}}}
		got := readBytes(t, encodeV2(t, tr, o))
		if len(got.Threads) != 2 {
			t.Fatalf("%+v: %d threads", o, len(got.Threads))
		}
		for i, n := range []int{len(evs), 5000} {
			want := expectV2(evs[:n])
			if o.DropFirst > 0 {
				break // TestV2Ring checks what a ring keeps
			}
			if g := got.Threads[i].Events; !reflect.DeepEqual(g, want) {
				for k := range want {
					if k >= len(g) || g[k] != want[k] {
						t.Fatalf("%+v: thread %d event %d:\n got %+v\nwant %+v", o, i, k, g[min(k, len(g)-1)], want[k])
					}
				}
				t.Fatalf("%+v: thread %d: %d events, want %d", o, i, len(g), len(want))
			}
		}
	}
}

// TestV2Ring: a ring that lost its first blocks still gives every frame that was open
// when the kept data starts, with its recorded entry, so exits close the right calls.
// FUNC_AGAIN and ENTRY_AGAIN (version 4): a call whose pair the block's cache holds is one
// word, and so is an entry of a function it holds; a function trace that repeats its
// calls, as programs do, is about half the size, a graph trace two thirds.
func TestV4FuncAgain(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var evs []Event
	for _, ev := range repeatPairs(rng, randomStream(rng, 30000)) {
		if ev.Kind == Call {
			evs = append(evs, ev)
		}
	}
	tr := &Trace{Header: Header{Tracer: TracerFunction, Flags: FlagComplete}, Threads: []*Thread{{TID: 3, Events: evs}}}
	plain, again := encodeV2(t, tr, WriteOptions{More: true}), encodeV2(t, tr, WriteOptions{More: true, Again: true})
	if got := readBytes(t, again); !reflect.DeepEqual(got.Threads[0].Events, expectV2(evs)) {
		t.Fatalf("the FUNC_AGAIN encoding reads back otherwise")
	}
	if len(again) > len(plain)*7/10 {
		t.Errorf("%d bytes with FUNC_AGAIN, %d without: want well under", len(again), len(plain))
	}
	if v := le.Uint32(again[8:]); v != Version4 {
		t.Errorf("version %d, want %d", v, Version4)
	}
	// and ENTRY_AGAIN: a graph trace whose entries repeat their functions
	var graph []Event
	for _, ev := range repeatPairs(rng, randomStream(rng, 30000)) {
		if ev.Kind != Call {
			graph = append(graph, ev)
		}
	}
	tr = &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}, Threads: []*Thread{{TID: 3, Events: graph}}}
	plain, again = encodeV2(t, tr, WriteOptions{}), encodeV2(t, tr, WriteOptions{Again: true})
	if got := readBytes(t, again); !reflect.DeepEqual(got.Threads[0].Events, expectV2(graph)) {
		t.Fatalf("the ENTRY_AGAIN encoding reads back otherwise")
	}
	if len(again) > len(plain)*85/100 {
		t.Errorf("graph: %d bytes with ENTRY_AGAIN, %d without: want well under", len(again), len(plain))
	}
}

func TestV2Ring(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	evs := randomStream(rng, 5000)
	const per, drop = 100, 7
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete, Ring: true, RingBytes: 1 << 20},
		Threads: []*Thread{{TID: 1, Events: evs}}}
	got := readBytes(t, encodeV2(t, tr, WriteOptions{BlockEvents: per, DropFirst: drop}))
	full := expectV2(evs)
	var open []Event
	for _, ev := range full[:per*drop] {
		switch ev.Kind {
		case Entry:
			ev.Flags |= FlagFromHeader // made from the first kept block's header
			open = append(open[:ev.Depth], ev)
		case Exit:
			open = open[:ev.Depth]
		}
	}
	want := append(open, full[per*drop:]...)
	if g := got.Threads[0].Events; !reflect.DeepEqual(g, want) {
		t.Fatalf("ring: %d events, want %d; first got %+v want %+v", len(g), len(want), g[:3], want[:3])
	}
	if !got.Header.Ring || got.Threads[0].MissingBlocks != 0 {
		t.Errorf("ring header %v, missing %d (a ring's overwritten start is not missing)", got.Header.Ring, got.Threads[0].MissingBlocks)
	}
	// counted as the file's events are (ftrace record's summary adds up block headers):
	// the entries made from the header are none of them
	calls, entries, exits, _, _ := got.Counts()
	if n := calls + entries + exits; n != uint64(len(want)-len(open)) {
		t.Errorf("counts %d, want %d (%d entries from the header)", n, len(want)-len(open), len(open))
	}
}

// Blocks a ring overwrote after it was switched on live are counted as overwritten, not
// missing (a trial saw "449 event blocks missing" after `live ring 8M`, `ring off`);
// the same gap before blocks that are not ring blocks is missing.
func TestV2RingSwitchedOn(t *testing.T) {
	evs := randomStream(rand.New(rand.NewSource(4)), 3000)
	for _, c := range []struct {
		ring                 bool
		overwritten, missing uint64
	}{{true, 5, 0}, {false, 0, 5}} {
		tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
			Threads: []*Thread{{TID: 1, Events: evs}}}
		o := WriteOptions{BlockEvents: 100, RingFrom: 10, RingDrop: 5}
		raw := encodeV2(t, tr, o)
		if !c.ring { // the same blocks gone, without the RING flag after them
			raw = dropBlocks(encodeV2(t, tr, WriteOptions{BlockEvents: 100}), 10, 15)
		}
		got := readBytes(t, raw)
		th := got.Threads[0]
		if th.OverwrittenBlocks != c.overwritten || th.MissingBlocks != c.missing {
			t.Errorf("ring %v: %d overwritten, %d missing; want %d, %d", c.ring, th.OverwrittenBlocks, th.MissingBlocks, c.overwritten, c.missing)
		}
		warned := strings.Contains(strings.Join(got.Header.Warnings, "\n"), "blocks missing")
		if warned != (c.missing > 0) {
			t.Errorf("ring %v: warnings %q", c.ring, got.Header.Warnings)
		}
	}
}

// Blocks a live `clear` dropped leave a gap before a block flagged CLEARED: not missing,
// not warned about (the leveldb trial's readers warned "4 event blocks missing" after a
// clear), and counted apart. Blocks the writer could not write (a full disk, a size
// limit) leave a gap before a block flagged DROPPED whose lost count holds their events:
// lost, not missing (a trace under ulimit -f warned "29 event blocks missing").
func TestV2ClearedBlocks(t *testing.T) {
	evs := randomStream(rand.New(rand.NewSource(5)), 3000)
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Threads: []*Thread{{TID: 1, Events: evs}}}
	full := encodeV2(t, tr, WriteOptions{BlockEvents: 100})
	for _, c := range []struct {
		flag             uint32
		cleared, missing uint64
		lost             uint64
	}{
		{BlockCleared, 5, 0, 0},
		{BlockDropped, 0, 0, 500},
		{0, 0, 5, 0},
	} {
		// as the runtime writes it: blocks 10-14 not in the file, block 15 flagged (and
		// with a drop, its lost count holding theirs)
		raw := append([]byte(nil), full[:HeaderSize]...)
		for off, n := int64(HeaderSize), 0; off < int64(len(full)); {
			size := int64(le.Uint64(full[off+8:]))
			ch := append([]byte(nil), full[off:off+size]...)
			if le.Uint32(ch) == ChunkEvents {
				if n == 15 {
					le.PutUint32(ch[20:], le.Uint32(ch[20:])|c.flag)
					le.PutUint64(ch[40:], le.Uint64(ch[40:])+c.lost)
				}
				n++
				if n > 10 && n <= 15 {
					ch = nil
				}
			}
			raw = append(raw, ch...)
			off += size
		}
		if c.flag == BlockDropped { // as the writer of test traces makes it too
			if o := readBytes(t, encodeV2(t, tr, WriteOptions{BlockEvents: 100, DropFrom: 10, Drop: 5})); o.Threads[0].Lost != c.lost ||
				o.Threads[0].MissingBlocks != 0 {
				t.Errorf("WriteOptions.Drop: %d lost, %d missing", o.Threads[0].Lost, o.Threads[0].MissingBlocks)
			}
		}
		got := readBytes(t, raw)
		th := got.Threads[0]
		if th.ClearedBlocks != c.cleared || th.MissingBlocks != c.missing || th.Lost != c.lost {
			t.Errorf("flag %#x: %d cleared, %d missing, %d lost; want %d, %d, %d", c.flag,
				th.ClearedBlocks, th.MissingBlocks, th.Lost, c.cleared, c.missing, c.lost)
		}
		if warned := len(got.Header.Warnings) > 0; warned != (c.missing > 0) {
			t.Errorf("flag %#x: warnings %q", c.flag, got.Header.Warnings)
		}
	}
}

// dropBlocks turns the event blocks from..to-1 into chunks of an unknown type (skipped).
func dropBlocks(data []byte, from, to int) []byte {
	for off, n := int64(HeaderSize), 0; off < int64(len(data)); {
		typ, size := le.Uint32(data[off:]), int64(le.Uint64(data[off+8:]))
		if typ == ChunkEvents {
			if n >= from && n < to {
				le.PutUint32(data[off:], 99)
			}
			n++
		}
		off += size
	}
	return data
}

func TestV2MissingBlockAndLost(t *testing.T) {
	evs := expectV2(randomStream(rand.New(rand.NewSource(3)), 400))
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Threads: []*Thread{{TID: 1, Events: evs}}}
	data := encodeV2(t, tr, WriteOptions{BlockEvents: 100})
	// Turn block 2 into a chunk of an unknown type: it is skipped, and block 3 starts
	// from its own header.
	off, n := int64(HeaderSize), 0
	for {
		typ, size := le.Uint32(data[off:]), int64(le.Uint64(data[off+8:]))
		if typ == ChunkEvents {
			if n == 2 {
				le.PutUint32(data[off:], 99)
				le.PutUint64(data[off+40:], 55) // and its lost count goes with it
			}
			if n == 3 {
				le.PutUint64(data[off+40:], 12)
			}
			n++
		}
		off += size
		if typ == ChunkThreadV2 {
			break
		}
	}
	got := readBytes(t, data)
	th := got.Threads[0]
	if th.MissingBlocks != 1 || th.Lost != 12 {
		t.Errorf("missing %d lost %d, want 1 and 12", th.MissingBlocks, th.Lost)
	}
	if !strings.Contains(strings.Join(got.Header.Warnings, "\n"), "1 event blocks missing") {
		t.Errorf("warnings %q", got.Header.Warnings)
	}
	// The events after the gap are block 3's, exactly.
	tail := th.Events[len(th.Events)-100:]
	if !reflect.DeepEqual(tail, evs[300:]) {
		t.Errorf("events after the gap differ")
	}
}

func TestV2BadInput(t *testing.T) {
	tr := &Trace{Header: Header{Tracer: TracerFunction, Flags: FlagComplete},
		Threads: []*Thread{{TID: 1, Events: []Event{{Kind: Call, TS: 5, IP: 0x1000, Parent: 0x1010}}}}}
	base := encodeV2(t, tr, WriteOptions{})
	// find the first event word: first EVENTS chunk, after its 72-byte header
	off := int64(HeaderSize)
	for le.Uint32(base[off:]) != ChunkEvents {
		off += int64(le.Uint64(base[off+8:]))
	}
	ev := off + eventsHdrFixed
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"entry of an empty pair slot", func(b []byte) { le.PutUint32(b[ev:], evEntryAgain|9<<24) }, "ENTRY_AGAIN of entry slot 9, which no entry of the block filled"},
		{"empty pair slot", func(b []byte) { le.PutUint32(b[ev:], evFuncAgain|7<<24) }, "FUNC_AGAIN of pair slot 7, which no call of the block filled"},
		{"version 5", func(b []byte) { le.PutUint32(b[8:], 5) }, "version 5 not supported"},
		{"a program", func(b []byte) { copy(b, "\x7fELF\x02\x01\x01\x00") }, "not an ftkit trace but an ELF file: `ftrace record -- PROG`"},
		{"record size", func(b []byte) { le.PutUint32(b[88:], 32) }, "record_size 32 in a version 2 trace"},
		{"event count", func(b []byte) { le.PutUint32(b[off+48:], 2) }, "1 events decoded, the header says 2"},
		{"depth", func(b []byte) { le.PutUint32(b[off+52:], 3) }, "does not hold 3 open frames"},
		{"data length", func(b []byte) { le.PutUint32(b[off+56:], 4000) }, "do not fit in the chunk"},
	} {
		b := append([]byte(nil), base...)
		c.edit(b)
		_, err := Read(bytes.NewReader(b), int64(len(b)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestV3More: a block's data in an EVENTS chunk and MORE chunks reads as the whole block;
// a continuation that does not follow on (its start or an earlier piece is not in the
// file) is skipped with a warning and the block ends where its data stops, rather than
// being misread.
func TestV3More(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	evs := randomStream(rng, 3000)
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Threads: []*Thread{{TID: 4, Events: evs}}}
	base := encodeV2(t, tr, WriteOptions{BlockEvents: 300, More: true})
	if v := le.Uint32(base[8:]); v != Version3 {
		t.Fatalf("version %d, want %d", v, Version3)
	}
	var mores []int64 // offsets of the MORE chunks
	var events int64
	for off := int64(HeaderSize); off+ChunkHdrSize <= int64(len(base)); off += int64(le.Uint64(base[off+8:])) {
		switch le.Uint32(base[off:]) {
		case ChunkMore:
			mores = append(mores, off)
		case ChunkEvents:
			events++
		}
	}
	if len(mores) != 2*int(events) {
		t.Fatalf("%d MORE chunks for %d blocks, want 2 each", len(mores), events)
	}
	got := readBytes(t, base)
	if want := expectV2(evs); !reflect.DeepEqual(got.Threads[0].Events, want) {
		t.Fatalf("%d events read, want %d (or they differ)", len(got.Threads[0].Events), len(want))
	}
	if len(got.Header.Warnings) != 0 {
		t.Errorf("warnings %q", got.Header.Warnings)
	}
	for _, c := range []struct {
		name string
		edit func(b []byte)
		warn string
	}{
		// the first block's first continuation says it starts 4 bytes later
		{"gap", func(b []byte) { le.PutUint32(b[mores[0]+32:], le.Uint32(b[mores[0]+32:])+4) }, "block 0: the continuation at offset"},
		// it names a block of another thread
		{"no block", func(b []byte) { le.PutUint32(b[mores[0]+16:], 99) }, "thread 99 block 0: the continuation at offset"},
	} {
		b := append([]byte(nil), base...)
		c.edit(b)
		got, err := Read(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if w := strings.Join(got.Header.Warnings, "\n"); !strings.Contains(w, c.warn) {
			t.Errorf("%s: warnings %q, want %q", c.name, w, c.warn)
		}
		// block 0 now ends after its first third (both of its continuations skipped);
		// the blocks after it are whole
		n := len(expectV2(evs)) - len(got.Threads[0].Events)
		if n != 300-100 {
			t.Errorf("%s: %d events fewer, want %d", c.name, n, 200)
		}
		lost := uint64(0) // on the thread the continuation names
		for _, th := range got.Threads {
			lost += th.Lost
		}
		if lost != uint64(n) {
			t.Errorf("%s: %d events counted lost, want %d", c.name, lost, n)
		}
	}
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want string
	}{
		{"header size", func(b []byte) { le.PutUint32(b[mores[0]+4:], 40) }, "more: header size 40"},
		{"data length", func(b []byte) { le.PutUint32(b[mores[0]+40:], 1<<20) }, "do not fit in the chunk"},
		{"event count", func(b []byte) { le.PutUint32(b[mores[0]+36:], 1<<20) }, "events claimed in"},
	} {
		b := append([]byte(nil), base...)
		c.edit(b)
		if _, err := Read(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Markers (EXT MARKER: their own time, their text) come back where they were among the
// events, in every block layout, and are not counted as events.
func TestV2Markers(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	evs := randomStream(rng, 3000)
	var with []Event
	texts := []string{"", "a", "four", "fives", strings.Repeat("long ", 100)}
	for i, ev := range evs {
		if i%97 == 0 {
			with = append(with, Event{Kind: Marker, TS: ev.TS, IP: uint64(i % len(texts)), Depth: -1})
		}
		with = append(with, ev)
	}
	for _, o := range []WriteOptions{{BlockEvents: 50}, {BlockEvents: 700, More: true}, {BlockEvents: 1}} {
		tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}, Markers: texts,
			Threads: []*Thread{{TID: 3, Events: with}}}
		got := readBytes(t, encodeV2(t, tr, o))
		want := expectV2(evs)
		var plain []Event
		k := 0
		for _, ev := range got.Threads[0].Events {
			if ev.Kind != Marker {
				plain = append(plain, ev)
				continue
			}
			for with[k].Kind != Marker {
				k++
			}
			if w := texts[with[k].IP]; got.Markers[ev.IP] != w || ev.TS != with[k].TS {
				t.Fatalf("%+v: marker %d: %q at %d, want %q at %d", o, k, got.Markers[ev.IP], ev.TS, w, with[k].TS)
			}
			k++
		}
		if !reflect.DeepEqual(plain, want) {
			t.Fatalf("%+v: the events around the markers differ", o)
		}
		if n := len(got.Markers); n != (len(evs)+96)/97 {
			t.Errorf("%+v: %d markers, want %d", o, n, (len(evs)+96)/97)
		}
	}
}

func TestV2MapsUnion(t *testing.T) {
	a := Mapping{Start: 0x1000, End: 0x2000, Path: "/a"}
	b := Mapping{Start: 0x3000, End: 0x4000, Path: "/b"}
	c := Mapping{Start: 0x3800, End: 0x5000, Path: "/c"} // loaded where b was
	got := mergeMaps([][]Mapping{{a, b}, {c}, {{}, a}})
	want := []Mapping{c, a} // the last chunk to list an object places it
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

// TestV2Size: the compact events stay small (the goal is ≤ 8 bytes per event).
func TestV2Size(t *testing.T) {
	var evs []Event
	ts := uint64(1000)
	for i := 0; i < 10000; i++ {
		ts += 40
		evs = append(evs, Event{Kind: Entry, TS: ts, IP: 0x555555555040, Depth: -1})
		ts += 40
		evs = append(evs, Event{Kind: Exit, TS: ts})
	}
	for _, c := range []struct {
		evs  []Event
		most float64
	}{{evs, 6.1}, {[]Event{}, 0}} {
		if len(c.evs) == 0 {
			for i := 0; i < 20000; i++ {
				c.evs = append(c.evs, Event{Kind: Call, TS: uint64(1000 + 30*i), IP: 0x555555555040, Parent: 0x555555555080})
			}
			c.most = 8.1
		}
		plain := encodeV2(t, &Trace{Header: Header{Flags: FlagComplete}}, WriteOptions{})
		full := encodeV2(t, &Trace{Header: Header{Flags: FlagComplete}, Threads: []*Thread{{TID: 1, Events: c.evs}}}, WriteOptions{})
		if per := float64(len(full)-len(plain)) / float64(len(c.evs)); per > c.most {
			t.Errorf("%v events: %.2f bytes per event, want ≤ %.1f", c.evs[0].Kind, per, c.most)
		}
	}
}

// A THREAD chunk the traced program wrote over (redis's crash memory test scribbles every
// anonymous mapping, the runtime's too) is left out with a warning, not shown as a thread
// with billions of lost events; a name of control bytes is shown escaped.
func TestV2CorruptThreadRecord(t *testing.T) {
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Threads: []*Thread{{TID: 7, Name: "main", Events: randomStream(rand.New(rand.NewSource(9)), 50)},
			{TID: 8, Name: "bio\x01\x9b", Events: randomStream(rand.New(rand.NewSource(10)), 50)}}}
	data := encodeV2(t, tr, WriteOptions{})
	for off := int64(HeaderSize); off < int64(len(data)); {
		typ, size := le.Uint32(data[off:]), int64(le.Uint64(data[off+8:]))
		if typ == ChunkThreadV2 && le.Uint32(data[off+16:]) == 7 {
			le.PutUint32(data[off+16:], 2995384782) // tid
			le.PutUint64(data[off+24:], 12396244158418911658)
		}
		off += size
	}
	got := readBytes(t, data)
	var ws []string
	for _, w := range got.Header.Warnings {
		if strings.Contains(w, "is corrupt (tid 2995384782") {
			ws = append(ws, w)
		}
	}
	if len(ws) != 1 {
		t.Errorf("warnings %q", got.Header.Warnings)
	}
	for _, th := range got.Threads {
		if th.TID != 7 && th.TID != 8 || th.Lost != 0 {
			t.Errorf("thread %d: %d lost", th.TID, th.Lost)
		}
		if th.TID == 8 && th.Name != "bio.." {
			t.Errorf("thread 8 named %q, want bio..", th.Name)
		}
	}
}
