// Package pprof converts a trace into a pprof profile (github.com/google/pprof/profile)
// that `go tool pprof` reads. Function-graph traces give two sample values per distinct
// call stack: the number of calls of the stack's leaf and its self time in nanoseconds.
// Function traces give call counts, with a two-frame stack (function, caller).
package pprof

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/google/pprof/profile"
)

// Build returns the profile of the forest.
func Build(f *calltree.Forest) *profile.Profile {
	return BuildPaths(f, calltree.PathsOf(f))
}

// BuildPaths returns the profile of the threads' call paths (of forest f, whose trees
// may not have been built).
func BuildPaths(f *calltree.Forest, paths []calltree.ThreadPaths) *profile.Profile {
	c := NewCollector()
	c.Add(f, paths)
	return c.Profile(f)
}

// WritePaths writes the profile BuildPaths makes, gzip-compressed (Collector.Write).
func WritePaths(w io.Writer, f *calltree.Forest, paths []calltree.ThreadPaths) error {
	c := NewCollector()
	c.Add(f, paths)
	return c.Write(w, f)
}

// A Collector makes one profile of the call paths of one trace's threads or of several
// traces' (the processes of one run), given a trace at a time: what it keeps is the trie
// of distinct stacks, not each thread's paths until the last trace is read (a test
// suite's thousands of traces). The traces' functions must be one *symbolize.Func each
// over them (calltree.Unifier).
type Collector struct {
	b           *builder
	roots       stackNode
	first, last uint64
	started     bool
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{b: &builder{
		p:     &profile.Profile{},
		funcs: map[*symbolize.Func]*profile.Function{},
		locs:  map[*symbolize.Func]*profile.Location{},
		maps:  map[string]*profile.Mapping{},
		samp:  map[string]*profile.Sample{},
	}}
}

// Add adds the call paths of the threads of one trace, whose forest is f.
func (col *Collector) Add(f *calltree.Forest, paths []calltree.ThreadPaths) {
	b := col.b
	if !col.started {
		col.started = true
		if f.Main != "" {
			b.mapping(f.Main) // the first mapping is the one pprof calls the program
		}
	}
	for _, tp := range paths {
		t := tp.T
		if col.first == 0 || (t.First != 0 && t.First < col.first) {
			col.first = t.First
		}
		if t.Last > col.last {
			col.last = t.Last
		}
		for _, c := range tp.Pairs {
			stack := []*symbolize.Func{c.Func}
			if c.Caller != nil {
				stack = append(stack, c.Caller)
			}
			b.add(stack, int64(c.Count))
		}
		// Samples per distinct stack, in the order a walk of the call trees meets
		// them: the thread's paths merged into a trie of all threads' stacks.
		type visit struct {
			p  *calltree.PathNode
			at *stackNode
		}
		var order []visit
		var walk func(ps []*calltree.PathNode, at *stackNode)
		walk = func(ps []*calltree.PathNode, at *stackNode) {
			for _, p := range ps {
				c := at.child(p.Func)
				order = append(order, visit{p, c})
				walk(p.Children, c)
			}
		}
		walk(tp.Root.Children, &col.roots)
		sort.SliceStable(order, func(i, j int) bool { return order[i].p.Seq < order[j].p.Seq })
		for _, v := range order {
			c := v.at
			if !c.sampled {
				c.sampled = true
				c.loc = b.location(c.fn)
				b.order = append(b.order, c)
			}
			c.calls += int64(v.p.Calls)
			c.self += int64(v.p.Self)
		}
	}
}

// finish completes the profile but for the samples of the trie's stacks, left in b.order;
// f is the forest of all the traces added (calltree.Combiner's).
func (col *Collector) finish(f *calltree.Forest) *builder {
	b := col.b
	b.timed = f.HasGraph() || f.Header.Tracer == "function_graph"
	b.p.SampleType = []*profile.ValueType{{Type: "calls", Unit: "count"}}
	if b.timed {
		b.p.SampleType = append(b.p.SampleType, &profile.ValueType{Type: "time", Unit: "nanoseconds"})
		b.p.DefaultSampleType = "time"
	} else {
		for _, s := range b.p.Sample {
			s.Value = s.Value[:1]
		}
	}
	b.p.PeriodType = &profile.ValueType{Type: "calls", Unit: "count"}
	b.p.Period = 1
	if len(f.Header.Command) > 0 {
		b.p.Comments = append(b.p.Comments, "command: "+strings.Join(f.Header.Command, " "))
	}
	if f.Header.WallStart != 0 {
		b.p.TimeNanos = f.Header.WallStart
	}
	if col.last > col.first {
		b.p.DurationNanos = int64(col.last - col.first)
	}
	return b
}

// Profile returns the profile of what was added; f is the forest of all the traces added.
func (col *Collector) Profile(f *calltree.Forest) *profile.Profile {
	b := col.finish(f)
	for _, c := range b.order {
		locs := make([]*profile.Location, 0, c.depth)
		for n := c; n.parent != nil; n = n.parent { // pprof wants the leaf first
			locs = append(locs, n.loc)
		}
		s := &profile.Sample{Location: locs, Value: []int64{c.calls}}
		if b.timed {
			s.Value = append(s.Value, c.self)
		}
		b.p.Sample = append(b.p.Sample, s)
	}
	return b.p
}

// Write writes the profile of what was added, gzip-compressed, without holding its
// samples: each distinct stack's locations are written from the trie of stacks as they
// are met (a trace of deep, varied recursion has a million stacks hundreds of frames
// deep: 2.3 GB as profile.Sample values, the yaml-cpp trial). f is the forest of all the
// traces added.
func (col *Collector) Write(w io.Writer, f *calltree.Forest) error {
	b := col.finish(f)
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriterSize(zw, 1<<16)
	// the profile without the trie's samples, then those: a protobuf message's fields
	// may come in any order, and repeated ones add up
	if err := b.p.WriteUncompressed(bw); err != nil {
		return err
	}
	var msg, ids, vals []byte
	for _, c := range b.order {
		ids, vals = ids[:0], vals[:0]
		for n := c; n.parent != nil; n = n.parent {
			ids = binary.AppendUvarint(ids, n.loc.ID)
		}
		vals = binary.AppendUvarint(vals, uint64(c.calls))
		if b.timed {
			vals = binary.AppendUvarint(vals, uint64(c.self))
		}
		msg = appendField(msg[:0], 1, ids)                            // Sample.location_id, packed
		msg = appendField(msg, 2, vals)                               // Sample.value, packed
		if _, err := bw.Write(appendField(nil, 2, msg)); err != nil { // Profile.sample
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// appendField appends a length-delimited protobuf field.
func appendField(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// Write writes the profile of the forest gzip-compressed (WritePaths).
func Write(w io.Writer, f *calltree.Forest) error {
	return WritePaths(w, f, calltree.PathsOf(f))
}

// stackNode is a call stack in a trie of stacks (its leaf fn below parent's stack, depth
// frames in all), with its sample's values once it is one.
type stackNode struct {
	fn          *symbolize.Func
	loc         *profile.Location // fn's
	parent      *stackNode
	depth       int
	sampled     bool
	calls, self int64
	kids        []*stackNode
	children    map[*symbolize.Func]*stackNode // calltree.IndexChildren
}

func stackFunc(s *stackNode) *symbolize.Func { return s.fn }

func (s *stackNode) child(fn *symbolize.Func) *stackNode {
	if c, ok := calltree.FindChild(s.kids, s.children, fn, stackFunc); ok {
		return c
	}
	c := &stackNode{fn: fn, parent: s, depth: s.depth + 1}
	s.kids = append(s.kids, c)
	s.children = calltree.IndexChildren(s.kids, s.children, stackFunc)
	return c
}

type builder struct {
	p     *profile.Profile
	timed bool         // two values a sample: calls and self time
	order []*stackNode // the stacks with a sample, as met
	funcs map[*symbolize.Func]*profile.Function
	locs  map[*symbolize.Func]*profile.Location
	maps  map[string]*profile.Mapping
	samp  map[string]*profile.Sample
	key   strings.Builder
}

// add counts calls of a function-tracer stack (a function and its caller). Each sample
// has room for the time too, cut off at finish when the profile has no times.
func (b *builder) add(stack []*symbolize.Func, calls int64) {
	b.key.Reset()
	locs := make([]*profile.Location, len(stack))
	for i, fn := range stack {
		l := b.location(fn)
		locs[i] = l
		b.key.WriteString(itoa(l.ID))
		b.key.WriteByte(',')
	}
	k := b.key.String()
	s := b.samp[k]
	if s == nil {
		s = &profile.Sample{Location: locs, Value: make([]int64, 2)}
		b.samp[k] = s
		b.p.Sample = append(b.p.Sample, s)
	}
	s.Value[0] += calls
}

func itoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}

func (b *builder) location(fn *symbolize.Func) *profile.Location {
	if l := b.locs[fn]; l != nil {
		return l
	}
	pf := &profile.Function{
		ID:         uint64(len(b.p.Function) + 1),
		Name:       fn.Name,
		SystemName: fn.Raw,
		Filename:   fn.File,
		StartLine:  int64(fn.Line),
	}
	if pf.SystemName == "" {
		pf.SystemName = fn.Name
	}
	b.p.Function = append(b.p.Function, pf)
	l := &profile.Location{
		ID:      uint64(len(b.p.Location) + 1),
		Mapping: b.mapping(fn.Module),
		Address: fn.Addr,
		Line:    []profile.Line{{Function: pf, Line: int64(fn.Line)}},
	}
	b.p.Location = append(b.p.Location, l)
	b.locs[fn] = l
	return l
}

func (b *builder) mapping(module string) *profile.Mapping {
	if m := b.maps[module]; m != nil {
		return m
	}
	name := module
	if name == "" {
		name = "[unknown]"
	}
	m := &profile.Mapping{
		ID:           uint64(len(b.p.Mapping) + 1),
		File:         filepath.Clean(name),
		HasFunctions: true,
	}
	b.p.Mapping = append(b.p.Mapping, m)
	b.maps[module] = m
	return m
}
