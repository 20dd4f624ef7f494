package flame_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/flame"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/pprof"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// Flame graphs and profiles made from a streamed trace's call paths equal those made
// from its call trees, byte for byte, on random streams (graph, function and mixed).
func TestStreamedPathsMatchTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("f", 6)
	lookup := names.Locked()
	for seed := int64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tr := tracetest.RandomTrace(rng, ips, 3, 10, 2000, seed%3 == 0)
		if seed%5 == 1 { // a function trace
			for _, th := range tr.Threads {
				kept := th.Events[:0]
				for _, ev := range th.Events {
					if ev.Kind == tracefile.Call {
						kept = append(kept, ev)
					}
				}
				th.Events = kept
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d.dat", seed))
		if err := tracetest.WriteFile(path, tr, "v1", 0); err != nil {
			t.Fatal(err)
		}
		whole, err := tracefile.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		forest := calltree.Build(whole, lookup, nil)
		st, err := tracefile.OpenStream(path)
		if err != nil {
			t.Fatal(err)
		}
		obs, threads, err := calltree.WalkStream(st, lookup, nil, func(*tracefile.Thread) calltree.Observer { return &calltree.Paths{} }, nil)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		paths := make([]calltree.ThreadPaths, len(obs))
		for k := range obs {
			paths[k] = calltree.ThreadPaths{Paths: obs[k].(*calltree.Paths), T: threads[k]}
		}
		sf := calltree.ForestOf(st.Trace, threads)
		for _, o := range []flame.Options{{}, {ByThread: true}, {TIDs: []int{101}}} {
			var a, b bytes.Buffer
			flame.WriteFolded(&a, flame.FoldPaths(sf, paths, o))
			flame.WriteFolded(&b, flame.Fold(forest, o))
			if a.String() != b.String() {
				t.Fatalf("seed %d %+v: folded stacks differ:\nstream %s\ntrees  %s", seed, o, a.String(), b.String())
			}
		}
		var a, b bytes.Buffer
		if err := pprof.BuildPaths(sf, paths).WriteUncompressed(&a); err != nil {
			t.Fatal(err)
		}
		if err := pprof.Build(forest).WriteUncompressed(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("seed %d: profiles differ", seed)
		}
	}
}
