package flame_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/flame"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/pprof"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
	"github.com/google/pprof/profile"
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
			callsOnly(tr)
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
		sf, paths := readPaths(t, path, lookup)
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

// Several traces given to a Folder and a Collector one at a time (the processes of one
// run, each let go once read) make what their separate graphs and profiles add up to:
// each stack's value the sum of its values in each; with any graph data, the function
// traces' calls do not count (times and counts do not add up).
func TestTracesOneAtATime(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("f", 5)
	lookup := names.Locked()
	for seed := int64(0); seed < 12; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var files []string
		graphs := 0
		for i := 0; i < 2+rng.Intn(4); i++ {
			tr := tracetest.RandomTrace(rng, ips, 2, 10, 300, true)
			tr.Header.PID = 1000 + i
			if seed%3 == 0 || (seed%3 == 1 && i%2 == 1) { // function traces: all, some
				tr.Header.Tracer = tracefile.TracerFunction
				callsOnly(tr)
			} else {
				graphs++
			}
			path := filepath.Join(dir, fmt.Sprintf("s%d.%d.dat", seed, i))
			if err := tracetest.WriteFile(path, tr, "v1", 0); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
		var cb calltree.Combiner
		var funcs calltree.Unifier
		fo := flame.NewFolder(flame.Options{})
		col := pprof.NewCollector()
		wantFolded := map[string]uint64{}
		wantSamples := map[string][2]int64{}
		for _, path := range files {
			f, paths := readPaths(t, path, lookup)
			if f.HasGraph() || graphs == 0 {
				var b bytes.Buffer
				flame.WriteFolded(&b, flame.FoldPaths(f, paths, flame.Options{}))
				addFolded(t, wantFolded, b.String())
			}
			// a function trace's calls count in the profile whatever the others hold
			addSamples(wantSamples, pprof.BuildPaths(f, paths), graphs > 0)
			cb.Add(f)
			funcs.Unify(paths)
			fo.Add(paths)
			col.Add(f, paths)
		}
		all := cb.Forest()
		var b bytes.Buffer
		flame.WriteFolded(&b, fo.Stacks(all))
		gotFolded := map[string]uint64{}
		addFolded(t, gotFolded, b.String())
		if fmt.Sprint(gotFolded) != fmt.Sprint(wantFolded) {
			t.Errorf("seed %d (%d graph traces of %d): folded stacks\n got %v\nwant %v", seed, graphs, len(files), gotFolded, wantFolded)
		}
		gotSamples := map[string][2]int64{}
		addSamples(gotSamples, col.Profile(all), graphs > 0)
		if fmt.Sprint(gotSamples) != fmt.Sprint(wantSamples) {
			t.Errorf("seed %d: profile samples\n got %v\nwant %v", seed, gotSamples, wantSamples)
		}
	}
}

// addFolded adds the values of folded stacks text to m.
func addFolded(t *testing.T, m map[string]uint64, folded string) {
	for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q", line)
		}
		m[line[:i]] += v
	}
}

// addSamples adds the values of p's samples to m, by their stacks' function names.
func addSamples(m map[string][2]int64, p *profile.Profile, timed bool) {
	for _, s := range p.Sample {
		var names []string
		for _, l := range s.Location {
			names = append(names, l.Line[0].Function.Name)
		}
		k := strings.Join(names, ";")
		v := m[k]
		v[0] += s.Value[0]
		if timed && len(s.Value) > 1 {
			v[1] += s.Value[1]
		}
		m[k] = v
	}
}

// callsOnly keeps tr's calls alone (a function tracer's events).
func callsOnly(tr *tracefile.Trace) {
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

// readPaths reads the trace at path as a stream into its threads' call paths.
func readPaths(t *testing.T, path string, lookup func(uint64) *symbolize.Func) (*calltree.Forest, []calltree.ThreadPaths) {
	st, err := tracefile.OpenStream(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	obs, threads, err := calltree.WalkStream(st, lookup, nil, func(*tracefile.Thread) calltree.Observer { return &calltree.Paths{} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]calltree.ThreadPaths, len(obs))
	for k := range obs {
		paths[k] = calltree.ThreadPaths{Paths: obs[k].(*calltree.Paths), T: threads[k]}
	}
	return calltree.ForestOf(st.Trace, threads), paths
}
