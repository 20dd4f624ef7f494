// Package report computes per-function statistics of a trace (calls, total, self,
// average, minimum and maximum time) and prints them as a table or JSON.
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Stat is one function's figures. Times are in nanoseconds. Total counts the time of
// the outermost call of a recursion once; Avg, Min and Max are per call (inclusive), over
// the calls with a duration (Avg and Min over the finished ones, if any): function-tracer calls (a trace whose tracer was switched
// live holds both kinds) count in Calls only.
type Stat struct {
	Func  *symbolize.Func `json:"-"`
	TID   int             `json:"tid,omitempty"`
	Name  string          `json:"name"`
	Mod   string          `json:"module,omitempty"`
	File  string          `json:"file,omitempty"`
	Line  int             `json:"line,omitempty"`
	Calls uint64          `json:"calls"`
	Total uint64          `json:"total_ns"`
	Self  uint64          `json:"self_ns"`
	Avg   uint64          `json:"avg_ns"`
	Min   uint64          `json:"min_ns"`
	Max   uint64          `json:"max_ns"`
	// Partial counts calls whose end was not recorded.
	Partial uint64 `json:"partial,omitempty"`
	sum     uint64
	timed   uint64 // calls with a duration
	whole   uint64 // of them, calls whose end was recorded: Min and Avg are theirs when there are any
	wsum    uint64 // their durations
}

// setAvg: over the whole calls when there are any, as Min (an unfinished call's time is a
// lower bound: a thread's sleeping loop cut at its last event counted 0 ns, and averages
// fell below their minimum).
func (s *Stat) setAvg() {
	switch {
	case s.whole > 0:
		s.Avg = s.wsum / s.whole
	case s.timed > 0:
		s.Avg = s.sum / s.timed
	}
}

// minOf is whether a call of duration d, whole or not (partial: its time is a lower
// bound, cut by the trace's end or a loss), sets the minimum of s: a partial call only
// while there is no whole one (a loss gap gave minimums of 0 ns).
func (s *Stat) minOf(d uint64, whole bool) bool {
	switch {
	case whole:
		return s.whole == 0 || d < s.Min
	case s.whole > 0:
		return false
	}
	return s.timed == 0 || d < s.Min
}

// Options select what Compute produces.
type Options struct {
	PerThread bool
	TIDs      []int // only these threads (all when empty)
	Sort      string
	Limit     int // 0: all
	// Progress is told how many events ComputeStream has read (nil: nothing).
	Progress calltree.Progress
	// Filter wraps each thread's observer (a read-time filter: the figures are those of
	// the calls it tells on); nil: none.
	Filter func(calltree.Observer) calltree.Observer
	// Args splits each function by the arguments recorded with its calls (nil: not).
	Args *calltree.ArgKeys
}

// wrap is obs through the filter, if any.
func (o Options) wrap(obs calltree.Observer) calltree.Observer {
	if o.Filter == nil {
		return obs
	}
	return o.Filter(obs)
}

// SortKeys are the accepted values of Options.Sort.
var SortKeys = []string{"total", "self", "calls", "avg", "min", "max", "name"}

// Compute returns the statistics, sorted and limited.
func Compute(f *calltree.Forest, o Options) ([]*Stat, error) {
	less, err := lessFunc(o.Sort)
	if err != nil {
		return nil, err
	}
	var aggs []*agg
	for _, t := range f.Threads {
		if !selected(t.TID, o.TIDs) {
			continue
		}
		a := newAgg(t.TID)
		t.Frames(a)
		aggs = append(aggs, a)
	}
	return finish(aggs, o, less), nil
}

// agg gathers one thread's figures.
type agg struct {
	tid   int
	stats map[*symbolize.Func]*Stat
	byID  []*Stat // by Frame.ID, when the frames are numbered
}

func newAgg(tid int) *agg { return &agg{tid: tid, stats: map[*symbolize.Func]*Stat{}} }

// stat is get with a Frame's numbering as a shortcut.
func (a *agg) stat(fn *symbolize.Func, id int) *Stat {
	if id < 0 {
		return a.get(fn)
	}
	if id < len(a.byID) && a.byID[id] != nil {
		return a.byID[id]
	}
	for len(a.byID) <= id {
		a.byID = append(a.byID, nil)
	}
	a.byID[id] = a.get(fn)
	return a.byID[id]
}

func (a *agg) get(fn *symbolize.Func) *Stat {
	s := a.stats[fn]
	if s == nil {
		s = &Stat{Func: fn, TID: a.tid, Name: fn.Name, Mod: fn.Module, File: fn.File, Line: fn.Line}
		a.stats[fn] = s
	}
	return s
}

func (a *agg) Call(c *calltree.Call, id int) { a.stat(c.Func, id).Calls++ }

func (a *agg) Close(f *calltree.Frame) {
	s := a.stat(f.Func, f.ID)
	if f.Adopt {
		s.Total = 0 // every earlier call of f.Func is inside this one now
	}
	d := f.Duration()
	if s.minOf(d, !f.Partial) {
		s.Min = d
	}
	if !f.Partial {
		s.whole++
		s.wsum += d
	}
	if d > s.Max {
		s.Max = d
	}
	s.Calls++
	s.timed++
	s.sum += d
	s.Self += f.Self()
	if f.Partial {
		s.Partial++
	}
	if f.Top {
		s.Total += d
	}
}

// merge adds b's figures to s.
func (s *Stat) merge(b *Stat) {
	if b.timed > 0 && s.minOf(b.Min, b.whole > 0) {
		s.Min = b.Min
	}
	s.whole += b.whole
	s.wsum += b.wsum
	s.Max = max(s.Max, b.Max)
	s.Calls += b.Calls
	s.timed += b.timed
	s.sum += b.sum
	s.Self += b.Self
	s.Partial += b.Partial
	s.Total += b.Total
}

// finish merges the threads' figures (unless per thread), sorts and limits them.
func finish(aggs []*agg, o Options, less func(a, b *Stat) bool) []*Stat {
	// one row per function as it is shown: functions of one name, object and source line
	// (a template's per-object copies, `[clone .isra.0]` — 26 identical rows of one
	// std::string constructor in the ninja trial) add up, as uftrace's report does
	type id struct {
		name, mod, file string
		line, tid       int
	}
	var out []*Stat
	all := map[id]*Stat{}
	for _, a := range aggs {
		for fn, s := range a.stats {
			k := id{name: fn.Name, mod: fn.Module, file: fn.File, line: fn.Line}
			if o.PerThread {
				k.tid = a.tid
			}
			m := all[k]
			if m == nil {
				m = &Stat{Func: fn, TID: k.tid, Name: fn.Name, Mod: fn.Module, File: fn.File, Line: fn.Line}
				all[k] = m
				out = append(out, m)
			}
			m.merge(s)
		}
	}
	return sortLimit(out, o, less)
}

// sortLimit sets each row's average, sorts the rows by less and keeps o.Limit of them.
func sortLimit(out []*Stat, o Options, less func(a, b *Stat) bool) []*Stat {
	for _, s := range out {
		s.setAvg()
	}
	sort.Slice(out, func(i, j int) bool {
		if less(out[i], out[j]) {
			return true
		}
		if less(out[j], out[i]) {
			return false
		}
		// equal keys (every total is 0 in a function trace): the most called first
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		if out[i].Mod != out[j].Mod {
			return out[i].Mod < out[j].Mod
		}
		if out[i].File != out[j].File { // one static name in two files: a stable order
			return out[i].File < out[j].File
		}
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].TID < out[j].TID
	})
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out
}

func selected(tid int, tids []int) bool {
	if len(tids) == 0 {
		return true
	}
	for _, t := range tids {
		if t == tid {
			return true
		}
	}
	return false
}

func lessFunc(key string) (func(a, b *Stat) bool, error) {
	desc := func(v func(*Stat) uint64) func(a, b *Stat) bool {
		return func(a, b *Stat) bool { return v(a) > v(b) }
	}
	switch key {
	case "", "total":
		return desc(func(s *Stat) uint64 { return s.Total }), nil
	case "self":
		return desc(func(s *Stat) uint64 { return s.Self }), nil
	case "calls":
		return desc(func(s *Stat) uint64 { return s.Calls }), nil
	case "avg":
		return desc(func(s *Stat) uint64 { return s.Avg }), nil
	case "min":
		return desc(func(s *Stat) uint64 { return s.Min }), nil
	case "max":
		return desc(func(s *Stat) uint64 { return s.Max }), nil
	case "name":
		return func(a, b *Stat) bool { return a.Name < b.Name }, nil
	}
	return nil, fmt.Errorf("unknown sort key %q (want one of %s)", key, strings.Join(SortKeys, ", "))
}

// JSON is the document `ftrace report --format json` prints. Besides the per-function
// rows it carries what a consumer needs to judge them: whether the file was finalised and
// the whole trace's lost-event counts (every thread, whatever --tid selects).
type JSON struct {
	Tracer string `json:"tracer"`
	PID    int    `json:"pid,omitempty"`
	// PIDs are the processes of a report of several traces (Merger), PID then 0.
	PIDs     []int `json:"pids,omitempty"`
	Complete bool  `json:"complete"`
	// Lost: events dropped because a thread's buffer was full (+ LostNoBuf: no buffer).
	Lost      uint64 `json:"lost"`
	LostNoBuf uint64 `json:"lost_nobuf"`
	// LostDepth: graph calls not recorded (depth limit, shadow stack full).
	LostDepth uint64 `json:"lost_depth"`
	// Unmatched: returns without a recorded entry; Unfinished: calls without a return.
	Unmatched  uint64  `json:"unmatched"`
	Unfinished uint64  `json:"unfinished"`
	Functions  []*Stat `json:"functions"`
}

// WriteJSON prints stats as JSON.
func WriteJSON(w io.Writer, f *calltree.Forest, stats []*Stat) error {
	if stats == nil {
		stats = []*Stat{}
	}
	doc := JSON{Tracer: f.Header.Tracer, PID: f.Header.PID, Functions: stats,
		Complete: f.Header.Flags&tracefile.FlagComplete != 0, LostNoBuf: f.Header.LostNoBuf}
	if len(f.PIDs) > 1 {
		doc.PID, doc.PIDs = 0, f.PIDs
	}
	for _, th := range f.Threads {
		doc.Lost += th.Lost
		doc.LostDepth += th.LostDepth
		doc.Unmatched += uint64(th.Unmatched)
		doc.Unfinished += uint64(th.Unclosed)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// maxMarkerRows is how many marker texts WriteMarkers lists.
const maxMarkerRows = 20

// maxPIDsShown is how many process ids the text header of a report of several traces
// lists (the last one included); the JSON document has them all.
const maxPIDsShown = 12

// WriteMarkers lists the program's markers (ftrace_trace_marker) by text, most frequent
// first: how many, the first one's time; nothing when there are none.
func WriteMarkers(w io.Writer, f *calltree.Forest) error {
	byText := map[string]*calltree.MarkerTally{}
	var all []*calltree.MarkerTally
	var n uint64
	for _, t := range f.Threads {
		for _, m := range t.Markers {
			if strings.HasPrefix(m.Text, tracefile.LostMarkerPrefix) {
				continue // the losses are counted above the table
			}
			n += m.Count
			if a := byText[m.Text]; a != nil {
				a.Count += m.Count
				a.First = min(a.First, m.First)
				continue
			}
			c := m
			byText[m.Text] = &c
			all = append(all, &c)
		}
	}
	if n == 0 {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return all[i].First < all[j].First
	})
	fmt.Fprintf(w, "\n# %d markers\n", n)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "COUNT\tFIRST (us)\t  %s\n", "MARKER")
	for i, m := range all {
		if i == maxMarkerRows {
			fmt.Fprintf(tw, "\t\t  (%d more texts)\n", len(all)-i)
			break
		}
		first := float64(0)
		if m.First > f.Start {
			first = float64(m.First-f.Start) / 1e3
		}
		fmt.Fprintf(tw, "%d\t%.3f\t  %s\n", m.Count, first, m.Text)
	}
	return tw.Flush()
}

// WriteText prints stats as an aligned table. Function traces have no times: only the
// call counts are printed.
func WriteText(w io.Writer, f *calltree.Forest, stats []*Stat, perThread bool) error {
	var lost, events uint64 = f.Header.LostNoBuf, 0
	for _, th := range f.Threads {
		lost += th.Lost
		events += th.Events
	}
	// buffered, and the columns measured first: a tabwriter keeps every row until it can
	// align them and writes each cell with a system call (report --args of 360k rows took
	// 11 s and 700 MB, a third of it in write)
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(f.PIDs) > 1 {
		// the first ones and the last: a test suite's hundreds made a line of kilobytes
		var pids []string
		for i, p := range f.PIDs {
			if len(f.PIDs) > maxPIDsShown && i == maxPIDsShown-1 {
				pids = append(pids, "…", strconv.Itoa(f.PIDs[len(f.PIDs)-1]))
				break
			}
			pids = append(pids, strconv.Itoa(p))
		}
		fmt.Fprintf(bw, "# %d processes: %s\n", len(f.PIDs), strings.Join(pids, " "))
	}
	if lost > 0 {
		// the figures below miss the calls not recorded: say so before them
		fmt.Fprintf(bw, "# %d of %d events lost (%s): calls not recorded are missing from these figures\n",
			lost, lost+events, tracefile.Pct(lost, lost+events))
	}
	timed := f.HasGraph() || f.Header.Tracer == "function_graph"
	var hdr []string
	if perThread {
		hdr = append(hdr, "TID")
	}
	hdr = append(hdr, "CALLS")
	if timed {
		hdr = append(hdr, "TOTAL", "SELF", "AVG", "MIN", "MAX")
	}
	row := make([]string, 0, len(hdr))
	cells := func(s *Stat) []string {
		row = row[:0]
		if perThread {
			row = append(row, strconv.Itoa(s.TID))
		}
		row = append(row, strconv.FormatUint(s.Calls, 10))
		if timed {
			row = append(row, Dur(s.Total), Dur(s.Self), Dur(s.Avg), Dur(s.Min), Dur(s.Max))
		}
		return row
	}
	width := make([]int, len(hdr))
	for i, h := range hdr {
		width[i] = len(h)
	}
	for _, s := range stats {
		for i, c := range cells(s) {
			width[i] = max(width[i], len(c))
		}
	}
	line := func(cells []string, name string) {
		for i, c := range cells {
			fmt.Fprintf(bw, "%*s", width[i]+2, c) // right-aligned, two spaces apart
		}
		bw.WriteString("  ")
		bw.WriteString(name)
		bw.WriteByte('\n')
	}
	line(hdr, "FUNCTION")
	shared := sharedNames(stats, func(s *Stat) (string, string) { return s.Name, s.Mod })
	for _, s := range stats {
		name := s.Name
		if shared[name] && s.Mod != "" {
			name += " (" + base(s.Mod) + ")"
		}
		if s.File != "" {
			name += fmt.Sprintf(" [%s:%d]", symbolize.ShortFile(s.File), s.Line)
		}
		if s.Partial > 0 {
			name += fmt.Sprintf(" (%d unfinished)", s.Partial)
		}
		line(cells(s), name)
	}
	return bw.Flush()
}

// sharedNames are the names that rows of more than one module carry (a static function of
// pcre2's 8-, 16- and 32-bit libraries, built from one source): those rows name their
// module too, else they read as one function's.
func sharedNames[T any](rows []T, key func(T) (name, mod string)) map[string]bool {
	first := map[string]string{}
	shared := map[string]bool{}
	for _, r := range rows {
		name, mod := key(r)
		if m, ok := first[name]; !ok {
			first[name] = mod
		} else if m != mod {
			shared[name] = true
		}
	}
	return shared
}

// Dur formats nanoseconds with a unit that keeps 3-4 significant digits.
func Dur(ns uint64) string {
	switch {
	case ns < 10_000:
		return fmt.Sprintf("%d ns", ns)
	case ns < 10_000_000:
		return fmt.Sprintf("%.3f us", float64(ns)/1e3)
	case ns < 10_000_000_000:
		return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}
