package tracefile

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// A Stream gives each thread the events Read gives, in batches; decoding a thread again
// gives the same events and counts (losses are not counted twice); Counts agrees.
func TestStreamMatchesRead(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}}
	for k := 0; k < 3; k++ {
		tr.Threads = append(tr.Threads, &Thread{TID: 300 - k, Lost: uint64(k), Events: expectV2(randomStream(rng, 5000+k*777))})
	}
	files := map[string][]byte{
		"v2":      encodeV2(t, tr, WriteOptions{BlockEvents: 333}),
		"v2ring":  encodeV2(t, tr, WriteOptions{BlockEvents: 200, DropFirst: 3, Partial: true}),
		"v1":      encode(t, tr),
		"v3more":  encodeV2(t, tr, WriteOptions{BlockEvents: 250, More: true}),
		"v2small": encodeV2(t, tr, WriteOptions{BlockEvents: 1}),
	}
	for name, data := range files {
		path := filepath.Join(dir, name+".dat")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		whole := readBytes(t, data)
		st, err := OpenStream(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, th := range st.Trace.Threads {
			if th.TID != whole.Threads[i].TID {
				t.Fatalf("%s: thread %d is %d, Read has %d", name, i, th.TID, whole.Threads[i].TID)
			}
			for pass := 0; pass < 2; pass++ {
				var got []Event
				batches := 0
				if err := st.Events(i, func(b []Event) error {
					got = append(got, b...)
					batches++
					return nil
				}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				w := whole.Threads[i]
				if !reflect.DeepEqual(got, w.Events) && !(len(got) == 0 && len(w.Events) == 0) {
					t.Fatalf("%s thread %d pass %d: %d events, Read has %d (or they differ)", name, th.TID, pass, len(got), len(w.Events))
				}
				if th.N != callEvents(w.Events) || th.Lost != w.Lost || th.Len() != w.Len() {
					t.Errorf("%s thread %d pass %d: N %d lost %d, Read: %d events lost %d", name, th.TID, pass, th.N, th.Lost, len(w.Events), w.Lost)
				}
				if name == "v2small" && batches < len(w.Events)/2 {
					t.Errorf("%s: %d batches for %d events: not streamed", name, batches, len(w.Events))
				}
			}
		}
		c1, e1, x1, l1, d1, err := st.Counts()
		if err != nil {
			t.Fatal(err)
		}
		c2, e2, x2, l2, d2 := whole.Counts()
		if [5]uint64{c1, e1, x1, l1, d1} != [5]uint64{c2, e2, x2, l2, d2} {
			t.Errorf("%s: Counts %v, Read's %v", name, [5]uint64{c1, e1, x1, l1, d1}, [5]uint64{c2, e2, x2, l2, d2})
		}
		st.Close()
	}
}

// A thread's event count is of its calls, entries and exits: its markers are not events
// (ftrace info printed 2 more in a thread's row than in the header's count).
func TestThreadLenCallEvents(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	evs := expectV2(randomStream(rng, 2000))
	var with []Event
	for i, ev := range evs {
		with = append(with, ev)
		if i%300 == 0 {
			with = append(with, Event{Kind: Marker, TS: ev.TS, IP: uint64(len(with) % 2), Depth: -1})
		}
	}
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}, Markers: []string{"a", "b"},
		Threads: []*Thread{{TID: 9, Events: with}}}
	path := filepath.Join(t.TempDir(), "m.dat")
	if err := os.WriteFile(path, encodeV2(t, tr, WriteOptions{BlockEvents: 100}), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	calls, entries, exits, _, _, err := st.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Trace.Threads[0].Len(); n != calls+entries+exits || n != uint64(len(evs)) {
		t.Errorf("thread's count %d; the trace's %d; events without the markers %d", n, calls+entries+exits, len(evs))
	}
}

// Only regular files are opened (a FIFO would block the reader).
func TestStreamRegularOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	f, _ := os.OpenFile(p, os.O_RDWR, 0) // so that opening it to read does not block
	defer f.Close()
	if _, err := OpenStream(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("OpenStream of a FIFO: %v", err)
	}
}

// Stream.From: the blocks that end before it are not decoded; every event after it is
// the same as when the whole thread is decoded (nesting and entry times included), and
// the thread's event and loss counts are the same.
func TestStreamFrom(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(11))
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}}
	for k := 0; k < 2; k++ {
		tr.Threads = append(tr.Threads, &Thread{TID: 40 + k, Lost: uint64(3 + k), Events: expectV2(repeatPairs(rng, randomStream(rng, 20000)))})
	}
	for _, o := range []WriteOptions{{BlockEvents: 250, More: true, Again: true}, {BlockEvents: 97}} {
		st := openEncoded(t, filepath.Join(dir, "f.dat"), tr, o)
		for i, th := range st.Trace.Threads {
			all := tr.Threads[i].Events
			from := all[len(all)*6/10].TS
			after := func(evs []Event) []Event {
				var out []Event
				for _, ev := range evs {
					if ev.TS > from+1000 { // the stream's clock steps back by 10 at most
						out = append(out, ev)
					}
				}
				return out
			}
			whole, part := decodeBoth(t, st, i, &st.From, from)
			if len(part) >= len(whole)*6/10 {
				t.Errorf("%+v thread %d: %d events decoded from %d, %d without: nothing skipped", o, th.TID, len(part), from, len(whole))
			}
			if w, p := after(whole), after(part); len(w) == 0 || !reflect.DeepEqual(w, p) {
				t.Errorf("%+v thread %d: after %d: %d events, %d decoding all (or they differ)", o, th.TID, from, len(p), len(w))
			}
		}
		st.Close()
	}
}

// openEncoded writes tr to path as version 2 with o and opens it as a stream.
func openEncoded(t *testing.T, path string, tr *Trace, o WriteOptions) *Stream {
	t.Helper()
	if err := os.WriteFile(path, encodeV2(t, tr, o), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// decodeBoth decodes thread i of st whole, then with *bound (st.From or st.Until) set to
// v, and checks that both counted the same events and losses.
func decodeBoth(t *testing.T, st *Stream, i int, bound *uint64, v uint64) (whole, part []Event) {
	t.Helper()
	th := st.Trace.Threads[i]
	var n, lost [2]uint64
	for pass, b := range []uint64{0, v} {
		*bound = b
		var got []Event
		if err := st.Events(i, func(evs []Event) error { got = append(got, evs...); return nil }); err != nil {
			t.Fatal(err)
		}
		n[pass], lost[pass] = th.N, th.Lost
		if pass == 0 {
			whole = got
		} else {
			part = got
		}
	}
	*bound = 0
	if n[0] != n[1] || lost[0] != lost[1] {
		t.Errorf("thread %d: N %d lost %d with a bound of %d, N %d lost %d decoding all", th.TID, n[1], lost[1], v, n[0], lost[0])
	}
	return whole, part
}

// Stream.Until: a thread's blocks that start after it are counted, not decoded, while no
// call is open (or, with UntilReturns, while the next block's header shows the calls
// entered by Until still open). The events decoded are the whole decoding's first ones up
// to Until, then (all of them without UntilReturns) a part of the rest that holds the
// returns of the calls entered by Until; the counts are the same.
func TestStreamUntil(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(12))
	var calls, graph, inMain []Event
	for _, ev := range repeatPairs(rng, randomStream(rng, 60000)) {
		if ev.Kind == Call && len(calls) < 20000 {
			calls = append(calls, ev)
		}
	}
	graph = randomStream(rng, 20000)
	// a main open from start to end around short calls, as most programs are
	ts := uint64(1_000_000)
	inMain = append(inMain, Event{Kind: Entry, TS: ts, IP: 0x401000, Depth: -1})
	for len(inMain) < 20000 {
		ip := 0x402000 + uint64(rng.Intn(1<<12))
		inMain = append(inMain, Event{Kind: Entry, TS: ts + 10, IP: ip, Depth: -1}, Event{Kind: Exit, TS: ts + 20 + uint64(rng.Intn(50))})
		ts += 100
	}
	inMain = append(inMain, Event{Kind: Exit, TS: ts})
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete}}
	for k, evs := range [][]Event{calls, graph, inMain} {
		tr.Threads = append(tr.Threads, &Thread{TID: 50 + k, Lost: uint64(2 + k), Events: expectV2(evs)})
	}
	// returned: each return of a call entered by until (an Exit's Parent is its entry's time)
	returned := func(evs []Event, until uint64) []Event {
		var out []Event
		for _, ev := range evs {
			if ev.Kind == Exit && ev.Parent <= until {
				out = append(out, ev)
			}
		}
		return out
	}
	for _, c := range []struct {
		o       WriteOptions
		returns bool
	}{{WriteOptions{BlockEvents: 250, More: true, Again: true}, true}, {WriteOptions{BlockEvents: 97}, true}, {WriteOptions{BlockEvents: 97}, false}} {
		o := c.o
		st := openEncoded(t, filepath.Join(dir, "u.dat"), tr, o)
		st.UntilReturns = c.returns
		for i, th := range st.Trace.Threads {
			all := tr.Threads[i].Events
			until := all[len(all)*4/10].TS
			whole, part := decodeBoth(t, st, i, &st.Until, until)
			if !c.returns {
				// the first events, and for the thread inside main all of them
				if len(part) > len(whole) || !reflect.DeepEqual(part, whole[:len(part)]) || (i == 2 && len(part) != len(whole)) {
					t.Fatalf("%+v thread %d: until %d: %d events, not the first of the %d decoding all", o, th.TID, until, len(part), len(whole))
				}
			}
			j := 0
			for j < len(whole) && whole[j].TS <= until {
				j++
			}
			if len(part) < j || !reflect.DeepEqual(part[:j], whole[:j]) {
				t.Fatalf("%+v thread %d: until %d: the first %d events differ from decoding all", o, th.TID, until, j)
			}
			if w, p := returned(whole, until), returned(part, until); !reflect.DeepEqual(w, p) {
				t.Errorf("%+v thread %d: until %d: %d returns of the calls entered by then, %d decoding all", o, th.TID, until, len(p), len(w))
			}
			// the rest is the whole's events in order, but for entries rebuilt from headers
			rest := whole[j:]
			for _, ev := range part[j:] {
				if ev.Kind == Entry && ev.Flags&FlagFromHeader != 0 {
					continue
				}
				for len(rest) > 0 && !reflect.DeepEqual(rest[0], ev) {
					rest = rest[1:]
				}
				if len(rest) == 0 {
					t.Fatalf("%+v thread %d: until %d: event %+v is not in the whole decoding, or out of order", o, th.TID, until, ev)
				}
				rest = rest[1:]
			}
			if (i == 0 || i == 2 && c.returns) && len(part) >= len(whole)*6/10 {
				t.Errorf("%+v thread %d: %d events decoded until %d, %d without: nothing skipped", o, th.TID, len(part), until, len(whole))
			}
		}
		st.Close()
	}
}

// A STACK record's text: return addresses named by their call, a traced function's site
// (StackEntry) named only where the return address before it does not name it.
func TestStackText(t *testing.T) {
	funcs := []struct {
		lo, hi uint64
		name   string
	}{{0x1000, 0x1100, "probe"}, {0x1100, 0x1200, "cmp"}, {0x1200, 0x1300, "sorter"}, {0x1300, 0x1400, "main"}, {0x1400, 0x1500, "fib"}}
	s := &Stream{Name: func(addr uint64, ret bool) string {
		if ret {
			addr--
		}
		for _, f := range funcs {
			if addr >= f.lo && addr < f.hi {
				return f.name
			}
		}
		return fmt.Sprintf("libc+%#x", addr)
	}}
	for _, c := range []struct {
		pcs  []uint64
		want string
	}{
		// cmp called through qsort: sorter is named by its site
		{[]uint64{0x1004, 0x1110, 0x1104 | StackEntry, 0x9000, 0x1204 | StackEntry, 0x1320, 0x1304 | StackEntry, 0x7000},
			"stacktrace: probe <- cmp <- libc+0x8fff <- sorter <- main <- libc+0x6fff"},
		// recursion: each frame once, by its return address
		{[]uint64{0x1404, 0x1420, 0x1404 | StackEntry, 0x1420, 0x1404 | StackEntry, 0x1330},
			"stacktrace: fib <- fib <- fib <- main"},
		// a tail call: the frame that jumped has no return of its own (the next one's)
		{[]uint64{0x1004, 0x1104 | StackEntry, 0x1330}, "stacktrace: probe <- cmp <- main"},
		// the function tracer: no sites
		{[]uint64{0x1004, 0x1110, 0x1330}, "stacktrace: probe <- cmp <- main"},
	} {
		if got := s.stackText(c.pcs); got != c.want {
			t.Errorf("%#x:\n got %q\nwant %q", c.pcs, got, c.want)
		}
	}
}

// Events dropped between two blocks of a thread are said where they were: a Marker
// "[LOST n EVENTS]" at the later block's start, before its events; none for the losses
// before the first block, nor after a block passed over for From.
func TestStreamLostMarker(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	evs := expectV2(randomStream(rng, 1000))
	tr := &Trace{Header: Header{Tracer: TracerFunctionGraph, Flags: FlagComplete},
		Threads: []*Thread{{TID: 60, Lost: 2, Events: evs}}}
	st := openEncoded(t, filepath.Join(t.TempDir(), "l.dat"), tr, WriteOptions{BlockEvents: 300, BlockLost: 7})
	defer st.Close()
	var got []Event
	if err := st.Events(0, func(b []Event) error { got = append(got, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	var at []int // where each marker is among the other events
	n := 0
	for _, ev := range got {
		if ev.Kind == Marker {
			if text := st.MarkerText(ev.IP); text != "[LOST 7 EVENTS]" {
				t.Errorf("marker %q", text)
			}
			at = append(at, n)
			continue
		}
		if ev.Flags&FlagFromHeader == 0 {
			n++
		}
	}
	if fmt.Sprint(at) != "[300 600 900]" {
		t.Errorf("lost markers before events %v, want [300 600 900]", at)
	}
	if th := st.Trace.Threads[0]; th.Lost != 2+3*7 {
		t.Errorf("lost %d, want %d", th.Lost, 2+3*7)
	}
}
