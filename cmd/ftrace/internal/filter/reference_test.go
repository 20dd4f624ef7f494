package filter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/chrome"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/flame"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/graph"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/pprof"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// ref is a plain reading of docs/ftrace-cli.md's Filters on a whole call tree, written
// apart from the streaming filter: each call is kept, hidden (its callees take its place)
// or removed with its subtree. The test's names have no '/', so path.Match is fnmatch.
type ref struct {
	o      filter.Options
	origin uint64
}

func (r ref) any(globs []string, fn *symbolize.Func) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, fn.Name); ok {
			return true
		}
	}
	return false
}

func (r ref) inRange(ts uint64) bool {
	rel := int64(ts) - int64(r.origin)
	if r.o.Since > 0 && rel < int64(r.o.Since) {
		return false
	}
	return r.o.Until == 0 || rel < int64(r.o.Until)
}

func (r ref) forest(f *calltree.Forest) *calltree.Forest {
	out := *f
	out.Threads = nil
	for _, t := range f.Threads {
		if len(r.o.TIDs) > 0 && !containsInt(r.o.TIDs, t.TID) {
			continue
		}
		nt := *t
		nt.Roots, nt.Calls = nil, nil
		for _, c := range t.Calls {
			fn := r.any(r.o.Filter, c.Func) || c.Caller != nil && r.any(r.o.Filter, c.Caller)
			fx := r.any(r.o.Notrace, c.Func) || c.Caller != nil && r.any(r.o.Notrace, c.Caller)
			fx = fx || r.any(r.o.Hide, c.Func) || len(r.o.Callers) > 0 && !r.any(r.o.Callers, c.Func)
			if r.inRange(c.TS) && !fx && (len(r.o.Filter) == 0 || fn) {
				nt.Calls = append(nt.Calls, c)
			}
		}
		for _, n := range t.Roots {
			nt.Roots = append(nt.Roots, r.place(n, nil, len(r.o.Filter) == 0, 0)...)
		}
		out.Threads = append(out.Threads, &nt)
	}
	return &out
}

// place returns what stands for n in the filtered tree below parent (nil: outermost):
// n's copy, the calls its callees become, or nothing.
func (r ref) place(n, parent *calltree.Node, inside bool, level int) []*calltree.Node {
	inside = inside || r.any(r.o.Filter, n.Func)
	rel := int64(n.Start) - int64(r.origin)
	if r.any(r.o.Notrace, n.Func) || r.o.Until > 0 && rel >= int64(r.o.Until) {
		return nil
	}
	if !inside || r.o.Since > 0 && rel < int64(r.o.Since) || r.any(r.o.Hide, n.Func) {
		var out []*calltree.Node
		for _, c := range n.Children {
			out = append(out, r.place(c, parent, inside, level)...)
		}
		return out
	}
	if r.o.Depth > 0 && level >= r.o.Depth {
		return nil
	}
	m := &calltree.Node{Func: n.Func, IP: n.IP, Start: n.Start, End: n.End, Depth: level, Parent: parent,
		Partial: n.Partial, Unwound: n.Unwound}
	// -C: a call of a -C function is a leaf, kept when it lasts -t; another call is kept
	// when a call kept inside leads to one
	leaf := len(r.o.Callers) > 0 && r.any(r.o.Callers, n.Func)
	if !leaf {
		for _, c := range n.Children {
			m.Children = append(m.Children, r.place(c, m, true, level+1)...)
		}
	}
	if len(m.Children) == 0 && (r.o.MinDur > 0 && n.Duration() < uint64(r.o.MinDur) || len(r.o.Callers) > 0 && !leaf) {
		return nil
	}
	return []*calltree.Node{m}
}

func containsInt(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// Every filter, alone and together, streamed through graph, report, flame and pprof,
// gives what those print for the reference's filtered trees, on random traces (clean
// ones stream; the others hold exits that adopt earlier calls, which makes the walker
// fall back to trees).
func TestStreamedFiltersMatchReference(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("f", 6)
	lookup := names.Locked()
	kept := map[string]int{} // per filter: seeds where something, not all, was kept
	for seed := int64(0); seed < 24; seed++ {
		rng := rand.New(rand.NewSource(seed))
		clean := seed%3 != 0
		format := "v1" // version 2 holds clean streams only
		if clean && seed%2 == 0 {
			format = "v2"
		}
		tr := tracetest.RandomTrace(rng, ips, 3, 20, 1500, clean)
		p := filepath.Join(dir, fmt.Sprintf("t%d.dat", seed))
		if err := tracetest.WriteFile(p, tr, format, 64+rng.Intn(300)); err != nil {
			t.Fatal(err)
		}
		whole, err := tracefile.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		forest := calltree.Build(whole, lookup, nil)
		var last uint64
		for _, th := range forest.Threads {
			last = max(last, th.Last)
		}
		span := time.Duration(last - forest.Start)
		cases := []struct {
			name string
			o    filter.Options
		}{
			{"F", filter.Options{Filter: []string{"f1"}}},
			{"F-class", filter.Options{Filter: []string{"f[23]", "f5"}}},
			{"N", filter.Options{Notrace: []string{"f2"}}},
			{"D", filter.Options{Depth: 2}},
			{"F-D", filter.Options{Filter: []string{"f1"}, Depth: 2}},
			{"t", filter.Options{MinDur: 150}},
			{"since", filter.Options{Since: span / 3}},
			{"until", filter.Options{Until: span / 2}},
			{"range", filter.Options{Since: span / 4, Until: span * 3 / 4}},
			{"tid-N", filter.Options{TIDs: []int{101}, Notrace: []string{"f0", "0x*"}}},
			{"H", filter.Options{Hide: []string{"f1", "f4"}}},
			{"H-D", filter.Options{Hide: []string{"f2"}, Depth: 2}},
			{"C", filter.Options{Callers: []string{"f3"}}},
			{"C-t", filter.Options{Callers: []string{"f2", "f5"}, MinDur: 100}},
			{"C-F-H", filter.Options{Callers: []string{"f4"}, Filter: []string{"f1"}, Hide: []string{"f0"}}},
			{"H-t-range", filter.Options{Hide: []string{"f1"}, MinDur: 60, Since: span / 5}},
			{"all", filter.Options{Filter: []string{"f[0-3]"}, Notrace: []string{"f3"}, Depth: 3, MinDur: 40, Since: span / 5, Until: span * 4 / 5}},
		}
		for _, tc := range cases {
			flt, err := filter.New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			st, err := tracefile.OpenStream(p)
			if err != nil {
				t.Fatal(err)
			}
			origin, err := st.Origin()
			if err != nil {
				t.Fatal(err)
			}
			if origin != forest.Start {
				t.Fatalf("seed %d: origin %d, the forest starts at %d", seed, origin, forest.Start)
			}
			flt = flt.At(origin)
			want := ref{o: tc.o, origin: forest.Start}.forest(forest)
			what := fmt.Sprintf("seed %d %s %s", seed, format, tc.name)
			n, all := 0, 0
			for k, th := range want.Threads {
				th.Walk(func(*calltree.Node) bool { n++; return true })
				all += forest.Threads[k].Nodes
			}
			if n > 0 && n < all {
				kept[tc.name]++
			}
			// the blocks outside the range passed over, as the commands have them
			checkPaths(t, what, st, lookup, flt, want, tc.o.TIDs)
			// (not before checkPaths: the profile's duration counts from the first
			// event decoded)
			st.From, st.Until = flt.Before(), flt.After()
			checkReport(t, what, st, lookup, flt, want, tc.o.TIDs)
			checkCallers(t, what, st, lookup, flt, want, tc.o.TIDs)
			st.UntilReturns = true // graph and dump: only the returns of calls open at until
			checkGraph(t, what, st, lookup, flt, want, tc.o.TIDs)
			checkChrome(t, what, st, lookup, flt, want, tc.o.TIDs)
			st.Close()
		}
	}
	// the filters did select: an equality of empty (or unfiltered) outputs proves little
	for name, n := range kept {
		if n < 6 {
			t.Errorf("filter %s kept some but not all calls in only %d traces", name, n)
		}
	}
	if len(kept) != 17 {
		t.Errorf("only %d of the 17 filters ever selected", len(kept))
	}
}

func statsJSON(t *testing.T, s []*report.Stat) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkReport(t *testing.T, what string, st *tracefile.Stream, lookup calltree.Lookup, flt *filter.Filter, want *calltree.Forest, tids []int) {
	t.Helper()
	o := report.Options{PerThread: true, Sort: "name", TIDs: tids}
	exp, err := report.Compute(want, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Filter = flt.Wrap
	got, _, err := report.ComputeStream(st, lookup, o)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if a, b := statsJSON(t, got), statsJSON(t, exp); a != b {
		t.Fatalf("%s: report differs:\nstream    %s\nreference %s", what, a, b)
	}
	rows, _, err := report.ThreadsStream(st, lookup, tids, flt.Wrap)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	expRows := report.Threads(want, tids)
	a, _ := json.Marshal(rows)
	b, _ := json.Marshal(expRows)
	if string(a) != string(b) {
		t.Fatalf("%s: report --threads differs:\nstream    %s\nreference %s", what, a, b)
	}
}

func checkGraph(t *testing.T, what string, st *tracefile.Stream, lookup calltree.Lookup, flt *filter.Filter, want *calltree.Forest, tids []int) {
	t.Helper()
	o := graph.Options{TIDs: tids, Time: true}
	var exp bytes.Buffer
	if err := graph.Write(&exp, want, o); err != nil {
		t.Fatal(err)
	}
	o.Filter = flt.Wrap
	var got bytes.Buffer
	if err := graph.WriteStream(&got, st, lookup, o, nil); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	// the reference's trees do not know they were filtered
	g := strings.ReplaceAll(got.String(), "# no calls match the filters", "# no calls recorded")
	if g != exp.String() {
		t.Fatalf("%s: graph differs:\nstream:\n%s\nreference:\n%s", what, g, exp.String())
	}
}

func checkPaths(t *testing.T, what string, st *tracefile.Stream, lookup calltree.Lookup, flt *filter.Filter, want *calltree.Forest, tids []int) {
	t.Helper()
	obs, threads, err := calltree.WalkStream(st, lookup, tids, func(*tracefile.Thread) calltree.Observer { return flt.Wrap(&calltree.Paths{}) }, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	paths := make([]calltree.ThreadPaths, len(obs))
	for k := range obs {
		paths[k] = calltree.ThreadPaths{Paths: calltree.Unwrap(obs[k]).(*calltree.Paths), T: threads[k]}
	}
	sf := calltree.ForestOf(st.Trace, threads)
	var a, b bytes.Buffer
	flame.WriteFolded(&a, flame.FoldPaths(sf, paths, flame.Options{ByThread: true}))
	flame.WriteFolded(&b, flame.Fold(want, flame.Options{ByThread: true}))
	if a.String() != b.String() {
		t.Fatalf("%s: folded stacks differ:\nstream    %s\nreference %s", what, a.String(), b.String())
	}
	a.Reset()
	b.Reset()
	if err := pprof.BuildPaths(sf, paths).WriteUncompressed(&a); err != nil {
		t.Fatal(err)
	}
	if err := pprof.Build(want).WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("%s: profiles differ", what)
	}
}

// checkChrome: the streamed JSON through the filter holds, thread by thread, the begins
// and ends the reference's trees give (their instant events in any order).
func checkChrome(t *testing.T, what string, st *tracefile.Stream, lookup calltree.Lookup, flt *filter.Filter, want *calltree.Forest, tids []int) {
	t.Helper()
	var got, exp bytes.Buffer
	if err := chrome.WriteStream(&got, st, lookup, tids, flt.Wrap, nil, nil); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := chrome.Write(&exp, want); err != nil {
		t.Fatal(err)
	}
	events := func(data []byte) string {
		var doc chrome.File
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var seq, inst []string
		for _, e := range doc.TraceEvents {
			line := fmt.Sprintf("%d %s %s %v %v", e.TID, e.Ph, e.Name, e.TS, e.Args)
			if e.Ph == "i" {
				inst = append(inst, line)
			} else if e.Ph != "M" {
				seq = append(seq, line)
			}
		}
		sort.Strings(inst)
		return strings.Join(append(seq, inst...), "\n")
	}
	if _, err := chrome.Validate(got.Bytes()); err != nil {
		t.Fatalf("%s: streamed JSON: %v", what, err)
	}
	if a, b := events(got.Bytes()), events(exp.Bytes()); a != b {
		t.Fatalf("%s: chrome events differ:\nstream:\n%s\nreference:\n%s", what, a, b)
	}
}

// checkCallers: report --callers through the filter equals it on the reference's trees.
func checkCallers(t *testing.T, what string, st *tracefile.Stream, lookup calltree.Lookup, flt *filter.Filter, want *calltree.Forest, tids []int) {
	t.Helper()
	for _, fn := range []string{"f1", "f2"} {
		a, aerr := report.CallersStream(st, lookup, fn, nil, tids, flt.Wrap)
		b, berr := report.Callers(want, fn, nil, tids)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if fmt.Sprint(aerr) != fmt.Sprint(berr) || string(ja) != string(jb) {
			t.Fatalf("%s: callers of %s differ:\nstream    %s %v\nreference %s %v", what, fn, ja, aerr, jb, berr)
		}
	}
}
