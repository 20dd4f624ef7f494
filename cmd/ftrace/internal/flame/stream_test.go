package flame_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/flame"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/pprof"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// Flame graphs and profiles made from a streamed trace's call paths equal those made
// from its call trees, byte for byte, on random streams (graph, function and mixed).
func TestStreamedPathsMatchTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	var ips []uint64
	for i := 0; i < 6; i++ {
		a, _ := names.Resolve(fmt.Sprintf("f%d", i))
		ips = append(ips, a)
	}
	var mu sync.Mutex
	lookup := func(a uint64) *symbolize.Func {
		mu.Lock()
		defer mu.Unlock()
		return names.Lookup(a)
	}
	for seed := int64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tr := &tracefile.Trace{Header: tracefile.Header{Tracer: tracefile.TracerFunctionGraph, Flags: tracefile.FlagComplete, StartNS: 500}}
		for k := 0; k < 1+rng.Intn(3); k++ {
			th := tracetest.RandomThread(rng, 100+k, ips, 10+rng.Intn(2000), seed%3 == 0)
			if seed%5 == 1 { // a function trace
				kept := th.Events[:0]
				for _, ev := range th.Events {
					if ev.Kind == tracefile.Call {
						kept = append(kept, ev)
					}
				}
				th.Events = kept
			}
			tr.Threads = append(tr.Threads, th)
		}
		var buf bytes.Buffer
		if err := tracefile.Write(&buf, tr); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d.dat", seed))
		os.WriteFile(path, buf.Bytes(), 0o600)
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
