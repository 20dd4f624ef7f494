package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// statsText is what the report shows of stats, every field.
func statsText(t *testing.T, stats []*Stat) string {
	b, err := json.Marshal(stats)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func threadCounts(f *calltree.Forest) string {
	var b bytes.Buffer
	for _, t := range f.Threads {
		fmt.Fprintf(&b, "%d: events %d nodes %d unmatched %d unclosed %d lost %d/%d\n",
			t.TID, t.Events, t.Nodes, t.Unmatched, t.Unclosed, t.Lost, t.LostDepth)
	}
	return b.String()
}

// The streaming report equals the report of the call trees, on random streams written
// in both formats, with every option.
func TestComputeStreamMatchesTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("f", 6)
	lookup := names.Locked()
	fallbacks, adopted := 0, 0
	for seed := int64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewSource(seed))
		for _, format := range []string{"v1", "v2", "v2ring"} {
			tr := tracetest.RandomTrace(rng, ips, 4, 20, 3000, format != "v1")
			path := filepath.Join(dir, fmt.Sprintf("t%d-%s.dat", seed, format))
			if err := tracetest.WriteFile(path, tr, format, 64+rng.Intn(500)); err != nil {
				t.Fatalf("seed %d %s: %v", seed, format, err)
			}
			whole, err := tracefile.Open(path)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, format, err)
			}
			forest := calltree.Build(whole, lookup, nil)
			for _, o := range []Options{{}, {PerThread: true, Sort: "self"}, {TIDs: []int{101}, Sort: "calls", Limit: 3}} {
				want, err := Compute(forest, o)
				if err != nil {
					t.Fatal(err)
				}
				st, err := tracefile.OpenStream(path)
				if err != nil {
					t.Fatal(err)
				}
				got, sf, err := ComputeStream(st, lookup, o)
				st.Close()
				if err != nil {
					t.Fatalf("seed %d %s: %v", seed, format, err)
				}
				if g, w := statsText(t, got), statsText(t, want); g != w {
					t.Fatalf("seed %d %s %+v:\nstream %s\ntrees  %s", seed, format, o, g, w)
				}
				if len(o.TIDs) == 0 {
					if g, w := threadCounts(sf), threadCounts(forest); g != w {
						t.Fatalf("seed %d %s: thread counts\nstream %s\ntrees  %s", seed, format, g, w)
					}
				}
			}
			// report --threads
			st, err := tracefile.OpenStream(path)
			if err != nil {
				t.Fatal(err)
			}
			rows, _, err := ThreadsStream(st, lookup, nil, nil)
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := threadRows(rows), threadRows(Threads(forest, nil)); g != w {
				t.Fatalf("seed %d %s: threads\nstream %s\ntrees  %s", seed, format, g, w)
			}
			// report --callers, against the recursive walk of the trees it replaced
			for _, fn := range []string{"f0", "f3", "nosuch"} {
				for _, tids := range [][]int{nil, {101}} {
					want, werr := callersRef(forest, fn, tids)
					tree, terr := Callers(forest, fn, nil, tids)
					st, err := tracefile.OpenStream(path)
					if err != nil {
						t.Fatal(err)
					}
					got, gerr := CallersStream(st, lookup, fn, nil, tids, nil)
					st.Close()
					w, tr, g := callersText(t, want, werr), callersText(t, tree, terr), callersText(t, got, gerr)
					if tr != w || g != w {
						t.Fatalf("seed %d %s: callers of %s %v:\nstream %s\ntrees  %s\nwant   %s", seed, format, fn, tids, g, tr, w)
					}
				}
			}
			for _, th := range whole.Threads {
				w := calltree.NewWalker(th, lookup, newAgg(th.TID))
				switch err := w.Events(th.Events); err {
				case nil:
					if w.T.Unmatched > 0 {
						adopted++
					}
				case calltree.ErrNeedTree:
					fallbacks++
				default:
					t.Fatal(err)
				}
			}
		}
	}
	// both paths taken: streams followed with exits without entries, and fallbacks
	if fallbacks == 0 || adopted == 0 {
		t.Fatalf("%d streams followed with exits without entries, %d fell back: the test lost its point", adopted, fallbacks)
	}
	t.Logf("%d streams followed with exits without entries, %d fell back", adopted, fallbacks)
}

// An exit without entry that adopts some of the earlier calls makes the walker give up
// on the thread; the report builds that thread's tree and still agrees.
func TestComputeStreamFallback(t *testing.T) {
	src := `tracer function_graph
thread 7
> 100 a
< 110 a
> 120 b
> 125 a
< 128 a
< 130 b
< 140 c 115
> 150 a
< 160 a
`
	names := tracetest.NewNames()
	tr, err := tracetest.Parse(src, names.Resolve)
	if err != nil {
		t.Fatal(err)
	}
	lookup := names.Locked()
	w := calltree.NewWalker(tr.Threads[0], lookup, newAgg(7))
	if err := w.Events(tr.Threads[0].Events); err != calltree.ErrNeedTree {
		t.Fatalf("walker: %v, want ErrNeedTree", err)
	}
	var buf bytes.Buffer
	if err := tracefile.Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.dat")
	os.WriteFile(path, buf.Bytes(), 0o600)
	whole, _ := tracefile.Open(path)
	want, _ := Compute(calltree.Build(whole, lookup, nil), Options{})
	st, err := tracefile.OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, _, err := ComputeStream(st, lookup, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := statsText(t, got), statsText(t, want); g != w {
		t.Fatalf("stream %s\ntrees  %s", g, w)
	}
	// c adopted b (and its a): its self time is 140-115-(130-120) = 15
	for _, s := range got {
		if s.Name == "c" && (s.Self != 15 || s.Total != 25) {
			t.Errorf("c: self %d total %d, want 15 and 25", s.Self, s.Total)
		}
	}
}

func threadRows(rows []*ThreadStat) string {
	var b bytes.Buffer
	for _, r := range rows {
		fmt.Fprintf(&b, "%+v\n", *r)
	}
	return b.String()
}

func callersText(t *testing.T, r *CallersReport, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, jerr := json.Marshal(r)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return string(b)
}

// callersRef is report --callers as a recursive walk of the call trees.
func callersRef(f *calltree.Forest, name string, tids []int) (*CallersReport, error) {
	r := &CallersReport{Func: name, Timed: f.HasGraph() || f.Header.Tracer == "function_graph"}
	callers, callees := map[string]*Edge{}, map[string]*Edge{}
	for _, t := range f.Threads {
		if !selected(t.TID, tids) {
			continue
		}
		for _, c := range t.Calls {
			switch {
			case c.Func.Name == name:
				r.Matched = true
				r.Calls++
				cn := RootCaller
				if c.Caller != nil {
					cn = c.Caller.Name
				}
				edgeOf(callers, cn).Calls++
			case c.Caller != nil && c.Caller.Name == name:
				edgeOf(callees, c.Func.Name).Calls++
			}
		}
		active := 0
		activeCallee := map[string]int{}
		var walk func(ns []*calltree.Node, parent *calltree.Node)
		walk = func(ns []*calltree.Node, parent *calltree.Node) {
			for _, n := range ns {
				fn := n.Func.Name
				if fn == name {
					r.Matched = true
					r.Calls++
					r.Self += n.Self()
					cn := RootCaller
					if parent != nil {
						cn = parent.Func.Name
					}
					e := edgeOf(callers, cn)
					e.Calls++
					if active == 0 {
						r.Total += n.Duration()
						e.Total += n.Duration()
					}
				}
				isCallee := parent != nil && parent.Func.Name == name
				if isCallee {
					e := edgeOf(callees, fn)
					e.Calls++
					if activeCallee[fn] == 0 {
						e.Total += n.Duration()
					}
					activeCallee[fn]++
				}
				if fn == name {
					active++
				}
				walk(n.Children, n)
				if fn == name {
					active--
				}
				if isCallee {
					activeCallee[fn]--
				}
			}
		}
		walk(t.Roots, nil)
	}
	if r.Matched {
		r.Names = []string{name}
	}
	return r.finish(callers, callees)
}
