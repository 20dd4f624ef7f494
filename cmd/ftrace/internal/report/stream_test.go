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
