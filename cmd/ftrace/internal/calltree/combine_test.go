package calltree

import (
	"fmt"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

func TestCombine(t *testing.T) {
	f := func(pid int, tracer string, complete bool, lost uint64) *Forest {
		h := tracefile.Header{PID: pid, Tracer: tracer, LostNoBuf: lost}
		if complete {
			h.Flags = tracefile.FlagComplete
		}
		return &Forest{Header: h, Threads: []*Thread{{TID: pid}}}
	}
	c := Combine([]*Forest{f(1, "function_graph", true, 2), f(2, "function_graph", false, 3), f(1, "function", true, 0)})
	if c.Header.Flags&tracefile.FlagComplete != 0 || c.Header.LostNoBuf != 5 || c.Header.Tracer != "mixed" ||
		len(c.Threads) != 3 || fmt.Sprint(c.PIDs) != "[1 2]" {
		t.Errorf("combined: flags %#x, lost %d, tracer %q, %d threads, pids %v", c.Header.Flags, c.Header.LostNoBuf,
			c.Header.Tracer, len(c.Threads), c.PIDs)
	}
	if one := f(7, "function", true, 0); Combine([]*Forest{one}) != one {
		t.Error("one forest is not itself")
	}
}

// Markers of several traces count from the run's start: each trace's own start on its
// clock, placed by its wall-clock start (report printed the first trace clock's raw time,
// the machine's uptime, for a run of two processes).
func TestCombineMarkers(t *testing.T) {
	f := func(pid int, start uint64, wall int64, first ...uint64) *Forest {
		th := &Thread{TID: pid}
		for i, ts := range first {
			th.Markers = append(th.Markers, MarkerTally{Text: fmt.Sprint("m", i), Count: 1, First: ts})
		}
		return &Forest{Header: tracefile.Header{PID: pid, WallStart: wall}, Threads: []*Thread{th}, Start: start}
	}
	var cb Combiner
	for _, fr := range []*Forest{
		f(1, 52_720_000_000_000, 1_000_000_000_000, 52_720_000_100_000), // 100 µs in
		f(2, 9_000_000, 1_000_000_050_000, 9_020_000, 9_000_000),        // started 50 µs after 1
		f(3, 5_000, 0, 6_000),                         // no wall clock: from the earliest
		f(4, 70_000_000, 999_999_990_000, 70_000_000), // the earliest, 10 µs before 1
	} {
		cb.Add(fr)
	}
	cb.Forest()
	c := cb.Forest() // placed once
	var got []uint64
	for _, th := range c.Threads {
		for _, m := range th.Markers {
			got = append(got, m.First)
		}
	}
	if want := "[110000 80000 60000 1000 0]"; fmt.Sprint(got) != want || c.Start != 0 {
		t.Errorf("markers at %v (start %d), want %s and 0", got, c.Start, want)
	}
}

// Two traces' paths name main and f by their own *Func; once unified, one pointer each
// (and a static f of another file stays apart).
func TestUnify(t *testing.T) {
	fn := func(name, file string) *symbolize.Func {
		return &symbolize.Func{Name: name, Module: "/bin/p", File: file}
	}
	paths := func(main, f, caller *symbolize.Func) ThreadPaths {
		p := &Paths{}
		p.Root.Children = []*PathNode{{Func: main, Children: []*PathNode{{Func: f}}}}
		p.Pairs = []*CallPair{{Func: f, Caller: caller, Count: 1}}
		return ThreadPaths{Paths: p}
	}
	m1, f1 := fn("main", "p.c"), fn("f", "p.c")
	m2, f2, g2 := fn("main", "p.c"), fn("f", "p.c"), fn("f", "q.c")
	ps := []ThreadPaths{paths(m1, f1, m1), paths(m2, f2, m2), paths(m2, g2, nil)}
	var u Unifier // the first trace, then the others
	u.Unify(ps[:1])
	u.Unify(ps[1:])
	for i, tp := range ps[:2] {
		n := tp.Root.Children[0]
		if n.Func != m1 || n.Children[0].Func != f1 || tp.Pairs[0].Func != f1 || tp.Pairs[0].Caller != m1 {
			t.Errorf("trace %d: not unified", i)
		}
	}
	if g := ps[2].Root.Children[0].Children[0].Func; g != g2 || ps[2].Pairs[0].Caller != nil {
		t.Errorf("the static f of q.c was taken for p.c's")
	}
}

// Combine is the forest of fs as a reader of several traces makes it (Combiner).
func Combine(fs []*Forest) *Forest {
	var c Combiner
	for _, f := range fs {
		c.Add(f)
	}
	return c.Forest()
}

// ArgKeys splits a function by at most MaxArgKeys distinct argument values; the calls
// past them are one function, OtherArgs, and another function gets its own allowance.
func TestArgKeysBounded(t *testing.T) {
	f, g := &symbolize.Func{Name: "f"}, &symbolize.Func{Name: "g"}
	val := func(x uint64) *tracefile.Values { return &tracefile.Values{Items: []tracefile.Value{{Word: x}}} }
	k := &ArgKeys{Name: func(fn *symbolize.Func, v *tracefile.Values) string {
		return fmt.Sprintf("%s(p=%#x)", fn.Name, v.Items[0].Word)
	}}
	seen := map[*symbolize.Func]bool{}
	for i := 0; i < MaxArgKeys+500; i++ {
		seen[k.funcOf(f, val(uint64(i)))] = true
	}
	if len(seen) != MaxArgKeys+1 {
		t.Errorf("%d functions for f, want %d and the rest together", len(seen), MaxArgKeys+1)
	}
	other := k.funcOf(f, val(1<<30))
	if other.Name != "f"+OtherArgs || other.Raw != "f" || !seen[other] {
		t.Errorf("past the limit: %q (raw %q)", other.Name, other.Raw)
	}
	if again := k.funcOf(f, val(7)); again.Name != "f(p=0x7)" {
		t.Errorf("a value split before the limit became %q", again.Name)
	}
	if gf := k.funcOf(g, val(1<<30)); gf.Name != "g(p=0x40000000)" {
		t.Errorf("g: %q", gf.Name)
	}
}
