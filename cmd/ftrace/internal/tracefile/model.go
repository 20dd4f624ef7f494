// Package tracefile is the in-memory model of an ftkit trace (header, memory map,
// threads and their event streams, lost-event counts) and the reader of the trace file
// format described in docs/trace-format.md.
package tracefile

import (
	"fmt"
	"sort"
)

// Tracer names as they appear in trace headers and FTRACE_TRACER.
const (
	TracerFunction      = "function"
	TracerFunctionGraph = "function_graph"
	// TracerBoth: a trace switched live between the two (its header's bits 1|2).
	TracerBoth = "function+function_graph"
)

// Header.Reason of a trace the runtime finalised at its FTRACE_SIZE or FTRACE_DURATION.
const (
	ReasonSize     = "size limit"
	ReasonDuration = "duration limit"
)

// Kind is the kind of an event.
type Kind uint8

const (
	// Call is a function-tracer event: IP was called from Parent.
	Call Kind = iota + 1
	// Entry is a function-graph entry of IP.
	Entry
	// Exit is a function-graph return from IP.
	Exit
	// Marker is a program's message (ftrace_trace_marker) at TS: IP numbers its text
	// in the Stream that decoded it (Stream.MarkerText). Not a call: readers that count
	// events skip it.
	Marker
	// ValuesKind carries the arguments or return value recorded with the next Call, Entry
	// or Exit: IP numbers the record in the Stream (Stream.TakeValues). Only a Stream with
	// Values set decodes them; readers that count events skip them.
	ValuesKind
)

func (k Kind) String() string {
	switch k {
	case Call:
		return "call"
	case Entry:
		return "entry"
	case Exit:
		return "exit"
	case Marker:
		return "marker"
	case ValuesKind:
		return "values"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one record of a thread's stream. TS is in nanoseconds on the trace's clock
// (see Header.StartNS). IP is the address of the function's call site (its start, or
// start+4 after an endbr64). Parent is the caller's return address for Call and Entry
// events, and for Exit events the timestamp (ns) of the matching entry, 0 if unknown.
// Depth is the graph depth the runtime recorded, or -1 when unknown.
type Event struct {
	Kind   Kind
	Flags  uint16 // FlagUnwound
	Depth  int32
	TS     uint64
	IP     uint64
	Parent uint64
}

// FlagUnwound marks an Exit of a frame left without returning (longjmp, C++ exception,
// pthread_exit); its TS is when the runtime noticed. FlagFromHeader marks an Entry the
// reader made from a block header's open frames (a ring that starts in the middle of
// calls, a dropped block): a call entered where the file has no events, not an event.
const (
	FlagUnwound    = 1
	FlagFromHeader = 2
)

// Header flags (docs/trace-format.md).
const (
	FlagComplete = 1 << iota
	FlagAbnormal
	FlagSnapshot
	FlagLost
	FlagWriteError // a write of the file failed (full disk, file-size limit)
)

// Header holds the trace-wide facts.
type Header struct {
	Version    uint32
	Flags      uint32   // FlagComplete, FlagAbnormal, FlagSnapshot, FlagLost, FlagWriteError
	Signal     int      // fatal signal when FlagAbnormal
	GraphDepth int      // FTRACE_GRAPH_DEPTH at start (0: none)
	Tracer     string   // TracerFunction, TracerFunctionGraph, TracerBoth or "nop"
	PID        int      // traced process
	Command    []string // argv of the traced process, when recorded
	StartNS    uint64   // timestamp (trace clock, ns) of the start of tracing
	EndNS      uint64   // timestamp at which the trace was written
	WallStart  int64    // wall-clock time of StartNS, ns since the Unix epoch (0: unknown)
	Clock      string   // clock source, e.g. "tsc" or "clock_gettime"
	ClockHz    uint64   // ticks per second of the raw clock (informational)
	Reason     string   // why the trace was written (live, exit, signal, snapshot, finish, ...)
	// LostNoBuf counts events dropped because no buffer could be set up for their thread
	// (file full, mmap failure, after thread exit or finalisation, during fork).
	LostNoBuf uint64
	// BlockSize is the bytes of event data a block holds (version 2; 0 in version 1).
	BlockSize uint32
	// Ring is set when the trace comes from flight-recorder rings (version 2): each
	// thread's stream holds its newest events only; RingBytes is the per-thread ring size.
	Ring      bool
	RingBytes uint64
	// Warnings are problems the reader tolerated (truncated chunk, unknown chunk, ...).
	Warnings []string
}

// Mapping is one loaded ELF object. An address A inside [Start, End) corresponds to the
// virtual address A - Bias in the object's file.
type Mapping struct {
	Start, End uint64
	Bias       uint64
	Path       string
	BuildID    []byte
	Flags      uint8 // MapMain, MapVDSO, MapLate
}

// Mapping flags.
const (
	MapMain = 1 << iota
	MapVDSO
	MapLate
)

// Contains reports whether addr lies inside the mapping.
func (m *Mapping) Contains(addr uint64) bool { return addr >= m.Start && addr < m.End }

// Thread is one thread's event stream.
type Thread struct {
	TID    int
	Name   string
	Events []Event
	// Lost counts events the runtime dropped (buffer full).
	Lost uint64
	// LostDepth counts graph frames not recorded because the shadow stack was full or
	// the depth limit was reached.
	LostDepth uint64
	// Flags are the chunk's flags (ThreadExited, ThreadFull).
	Flags uint32
	// MissingBlocks counts event blocks of a version-2 stream that are not in the file
	// (dropped, or overwritten in a ring after its first block in the file).
	MissingBlocks uint64
	// OverwrittenBlocks counts blocks a flight-recorder ring overwrote after the thread's
	// first block in the file (the ring was switched on live): the gaps before ring blocks.
	OverwrittenBlocks uint64
	// ClearedBlocks counts blocks a live `clear` dropped (not lost, not missing).
	ClearedBlocks uint64
	// N counts the call events read (calls, entries and exits of Events, or of those a
	// Stream has decoded; not markers, stack traces or values).
	N uint64
	// Skipped counts those of N in the blocks a Stream passed over (From, Until):
	// counted, not decoded.
	Skipped uint64
}

// Len is the number of events recorded for the thread: those in Events, or those a
// Stream decoded.
func (t *Thread) Len() uint64 { return max(callEvents(t.Events), t.N) }

// callEvents counts the calls, entries and exits of evs.
func callEvents(evs []Event) uint64 {
	var n uint64
	for i := range evs {
		if k := evs[i].Kind; k == Call || k == Entry || k == Exit {
			n++
		}
	}
	return n
}

// Thread flags.
const (
	ThreadExited = 1 << iota
	ThreadFull
)

// Trace is a whole trace.
type Trace struct {
	Header  Header
	Maps    []Mapping
	Threads []*Thread
	// Markers are the texts of the Marker events (their IP numbers them): filled by
	// Read, given to the writers.
	Markers []string
}

// Mapping returns the mapping containing addr, or nil.
func (t *Trace) Mapping(addr uint64) *Mapping {
	for i := range t.Maps {
		if t.Maps[i].Contains(addr) {
			return &t.Maps[i]
		}
	}
	return nil
}

// Thread returns the thread with the given id, or nil.
func (t *Trace) Thread(tid int) *Thread {
	for _, th := range t.Threads {
		if th.TID == tid {
			return th
		}
	}
	return nil
}

// Counts sums events of each kind and lost events over all threads (entries made from
// block headers are no events of the file: FlagFromHeader).
func (t *Trace) Counts() (calls, entries, exits, lost, lostDepth uint64) {
	for _, th := range t.Threads {
		for i := range th.Events {
			switch th.Events[i].Kind {
			case Call:
				calls++
			case Entry:
				if th.Events[i].Flags&FlagFromHeader == 0 {
					entries++
				}
			case Exit:
				exits++
			}
		}
		lost += th.Lost
		lostDepth += th.LostDepth
	}
	return
}

// SortThreads orders threads by id (the reader does this; tests building traces by hand
// may call it).
func (t *Trace) SortThreads() {
	sort.SliceStable(t.Threads, func(i, j int) bool { return t.Threads[i].TID < t.Threads[j].TID })
}

// ThreadLoss is one thread's share of a trace's lost events.
type ThreadLoss struct {
	TID            int
	Name           string
	Lost, Recorded uint64
}

// Loss sums up what a trace lost: events dropped (per thread and without a thread),
// against those recorded.
type Loss struct {
	Lost, Recorded uint64
	// Threads that lost events, the largest fraction first.
	Threads []ThreadLoss
	// Hint says what to do about it, for messages (starts with "; " when set).
	Hint string
	// NoLossHelps: the hint is --no-loss (pointless to say to who gave it).
	NoLossHelps bool
}

// Pct formats part/whole as a percentage with one decimal, as every reader writes a lost
// fraction: never 0.0% for a loss, never 100.0% for a partial one.
func Pct(part, whole uint64) string {
	if whole == 0 {
		return "0%"
	}
	v := 100 * float64(part) / float64(whole)
	switch {
	case part > 0 && v < 0.1:
		return "<0.1%"
	case part < whole && v > 99.9:
		return ">99.9%"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// LostSummary counts a trace's lost events.
func LostSummary(t *Trace) Loss {
	l := Loss{Lost: t.Header.LostNoBuf}
	for _, th := range t.Threads {
		rec := th.Len()
		l.Recorded += rec
		l.Lost += th.Lost
		if th.Lost > 0 {
			l.Threads = append(l.Threads, ThreadLoss{TID: th.TID, Name: th.Name, Lost: th.Lost, Recorded: rec})
		}
	}
	sort.SliceStable(l.Threads, func(i, j int) bool {
		a, b := l.Threads[i], l.Threads[j]
		return a.Lost*(b.Lost+b.Recorded) > b.Lost*(a.Lost+a.Recorded)
	})
	switch {
	case l.Lost == 0:
	case l.Lost == t.Header.LostNoBuf:
		// made where a thread had no buffer: at its very end, after the runtime's
		// own thread-exit step, or during a fork; --no-loss keeps none of those
		l.Hint = "; they were made where their thread had no buffer (at its end, or inside fork): --no-loss cannot help"
	case t.Header.Flags&FlagWriteError != 0:
		l.Hint = "; the trace file could not be written in full (a full disk or a file-size limit: --no-loss cannot help)"
	case t.Header.Version >= Version2 && !t.Header.Ring:
		l.Hint, l.NoLossHelps = "; record with --no-loss to keep every event", true
	case t.Header.Version < Version2:
		l.Hint = "; the per-thread buffer (FTRACE_BUFFER_KB) filled up"
	}
	return l
}
