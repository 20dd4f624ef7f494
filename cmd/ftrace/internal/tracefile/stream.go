package tracefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
)

// Stream is a trace opened for reading its events without holding them: the header,
// memory map and threads' facts are read at open, each thread's events are decoded on
// demand, a block or batch at a time. Thread.Events stays nil; Thread.N counts the
// events decoded so far, and Thread.Lost grows by what the decoded blocks report.
// Different threads may be decoded at the same time.
type Stream struct {
	Trace *Trace
	r     io.ReaderAt
	f     *os.File
	conv  func(uint64) uint64
	src   []source // parallel to Trace.Threads
	mu    sync.Mutex
	seen  map[string]bool
	// the texts of the markers decoded so far (Marker events number them)
	markers []string
	// decoded: each thread's calls, entries and exits of the file, and rebuilt: its
	// entries rebuilt from block headers (calls already open where a ring's oldest block
	// begins), as Counts found them
	decoded, rebuilt []uint64
	// Name, if set, names a code address in a trigger's stack trace (ret: it is a
	// return address, its call is the byte before); else addresses are shown in hex.
	Name func(addr uint64, ret bool) string
	// Values: decode argument and return-value records into ValuesKind events (set
	// before reading; off, they are skipped).
	Values bool
	// From, when not 0, is a time (as Event.TS) before which nothing needs decoding: a
	// thread's blocks that end before it (the next block starts before it) are passed
	// over, their events and losses only counted.
	From uint64
	// Until, when not 0, is a time (as Event.TS) after which nothing needs decoding but
	// what ends the calls open then: a thread's blocks that start after it while none of
	// its calls is open (a function trace, or all its calls returned) are passed over,
	// their events and losses only counted.
	Until uint64
	// UntilReturns: the calls open at Until need only their returns, not what they call
	// after it (a reader that shows no self time): blocks are also passed over while
	// the next block's header shows those calls still open. The events decoded after
	// Until are then a part of the thread's: the returns of the calls entered by Until
	// and the calls around them; calls entered later may come without their entry (from
	// the next header, FlagFromHeader) or their return (the reader ends them).
	UntilReturns bool
	lastTS       uint64 // the latest event time Counts met
	vals         valueTable
}

// source says where one thread's events are.
type source struct {
	lost   uint64 // the thread's loss count before its blocks are decoded
	v1     v1records
	blocks []block // version 2, in seq order
}

// v1records is a version-1 THREAD chunk's record array.
type v1records struct {
	off int64
	n   uint64
}

// count is the number of events the thread's chunks announce (a size hint).
func (s source) count() uint64 {
	if s.blocks == nil {
		return s.v1.n
	}
	var n uint64
	for _, b := range s.blocks {
		n += uint64(b.nev)
	}
	return n
}

// OpenStream opens the trace at path for streaming. Errors name the file. Close it.
func OpenStream(path string) (*Stream, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	s, err := index(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.f = f
	return s, nil
}

// Close closes the file.
func (s *Stream) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Events passes thread i's events (an index into Trace.Threads) to emit, in order, in
// batches that are reused after emit returns. An error from emit stops the decoding and
// is returned.
func (s *Stream) Events(i int, emit func([]Event) error) error {
	th := s.Trace.Threads[i]
	th.N, th.Skipped, th.Lost = 0, 0, s.src[i].lost // decoding counts them (again)
	if src := s.src[i]; src.blocks != nil {
		return s.decodeV2(th, src.blocks, emit)
	}
	return s.decodeV1(th, s.src[i].v1, emit)
}

// addMarker keeps a marker's text and returns its number (threads may be decoded
// concurrently).
func (s *Stream) addMarker(text string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markers = append(s.markers, text)
	return uint64(len(s.markers) - 1)
}

// stackText is a trigger's stack trace as a marker's text: the function hit first, then
// its callers.
func (s *Stream) stackText(pcs []uint64) string {
	var b strings.Builder
	b.WriteString("stacktrace:")
	prev := "" // the name of the return address before, if it was one
	for i, pc := range pcs {
		entry := pc&StackEntry != 0 // a traced function's site: shown unless prev names it
		pc &^= StackEntry
		var name string
		if s.Name != nil {
			name = s.Name(pc, i > 0 && !entry)
		} else {
			name = fmt.Sprintf("%#x", pc)
		}
		if entry && name == prev {
			continue
		}
		if i > 0 {
			b.WriteString(" <-")
		}
		b.WriteString(" " + name)
		prev = ""
		if i > 0 && !entry && s.Name != nil {
			prev = name
		}
	}
	return b.String()
}

// LostMarkerPrefix begins the text of the Marker a stream puts where a thread's events
// were dropped (buffer full) between two of its blocks: "[LOST 123 EVENTS]".
const LostMarkerPrefix = "[LOST "

// StackEntry marks an address of a STACK record that is the site of a traced function
// whose graph frame was open (not a return address): the function is named where no
// return address into it is in the chain (a tail call, or a call through untraced code).
const StackEntry = 1 << 63

// MarkerText is the text of a Marker event this stream decoded (ev.IP numbers it).
func (s *Stream) MarkerText(i uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < uint64(len(s.markers)) {
		return s.markers[i]
	}
	return ""
}

// Hint is the number of events thread i's chunks announce.
func (s *Stream) Hint(i int) uint64 { return s.src[i].count() }

// warnOnce adds a warning met while decoding (threads may be decoded concurrently).
func (s *Stream) warnOnce(w string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[w] {
		s.seen[w] = true
		s.Trace.Header.Warnings = append(s.Trace.Header.Warnings, w)
	}
}

// sortThreads orders the threads by id, keeping each one's source with it.
func (s *Stream) sortThreads() {
	idx := make([]int, len(s.Trace.Threads))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.Trace.Threads[idx[a]].TID < s.Trace.Threads[idx[b]].TID })
	ths := make([]*Thread, len(idx))
	src := make([]source, len(idx))
	for k, i := range idx {
		ths[k], src[k] = s.Trace.Threads[i], s.src[i]
	}
	s.Trace.Threads, s.src = ths, src
	for i, th := range ths {
		s.src[i].lost = th.Lost
	}
}

// Decoded is thread i's events of the file (calls, entries, exits) and its entries rebuilt
// from block headers, as Counts found them; ok false before Counts ran.
func (s *Stream) Decoded(i int) (events, rebuilt uint64, ok bool) {
	if i >= len(s.decoded) {
		return 0, 0, false
	}
	return s.decoded[i], s.rebuilt[i], true
}

var errFirstBatch = errors.New("tracefile: first batch read")

// Origin is the trace's start as a reader of every event finds it (calltree.ForestOf):
// the header's start, or the earliest call event when earlier. It decodes only the
// first block of each thread (events come in time order) and leaves the threads' counts
// as they were: what `graph --time`, `dump` and the time filters count from.
func (s *Stream) Origin() (uint64, error) {
	o := s.Trace.Header.StartNS
	for i, th := range s.Trace.Threads {
		n, skipped, lost := th.N, th.Skipped, th.Lost
		err := s.Events(i, func(evs []Event) error {
			for k := range evs {
				if kind := evs[k].Kind; kind != Call && kind != Entry && kind != Exit {
					continue
				}
				if o == 0 || evs[k].TS < o {
					o = evs[k].TS
				}
			}
			return errFirstBatch
		})
		th.N, th.Skipped, th.Lost = n, skipped, lost
		if err != nil && !errors.Is(err, errFirstBatch) {
			return 0, err
		}
	}
	return o, nil
}

// LastTS is the time of the latest event Counts decoded (0 before it ran).
func (s *Stream) LastTS() uint64 { return s.lastTS }

// Counts decodes every thread (two at a time) and returns what Trace.Counts returns for
// a trace read whole; each thread's N and Lost are then final.
func (s *Stream) Counts() (calls, entries, exits, lost, lostDepth uint64, err error) {
	type kinds struct{ calls, entries, exits, rebuilt, last uint64 }
	per := make([]kinds, len(s.Trace.Threads))
	errs := make([]error, len(s.Trace.Threads))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range s.Trace.Threads {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = s.Events(i, func(evs []Event) error {
				k := &per[i]
				for j := range evs {
					k.last = max(k.last, evs[j].TS)
					switch evs[j].Kind {
					case Call:
						k.calls++
					case Entry:
						if evs[j].Flags&FlagFromHeader == 0 { // not an event of the file
							k.entries++
						} else {
							k.rebuilt++
						}
					case Exit:
						k.exits++
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	s.decoded = make([]uint64, len(s.Trace.Threads))
	s.rebuilt = make([]uint64, len(s.Trace.Threads))
	for i, th := range s.Trace.Threads {
		if errs[i] != nil {
			return 0, 0, 0, 0, 0, errs[i]
		}
		s.decoded[i] = per[i].calls + per[i].entries + per[i].exits
		s.rebuilt[i] = per[i].rebuilt
		calls += per[i].calls
		entries += per[i].entries
		exits += per[i].exits
		lost += th.Lost
		lostDepth += th.LostDepth
		s.lastTS = max(s.lastTS, per[i].last)
	}
	return calls, entries, exits, lost, lostDepth, nil
}
