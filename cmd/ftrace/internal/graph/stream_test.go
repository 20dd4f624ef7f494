package graph_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/graph"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// The streamed graph prints what the call trees print, line for line, with every
// option, on random streams in both formats (version 1 with exits whose entries are
// missing, version 2 as rings that start inside calls).
func TestWriteStreamMatchesTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("g", 5)
	lookup := names.Locked()
	streamed := 0
	for seed := int64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		for _, format := range []string{"v1", "v2", "v2ring"} {
			tr := tracetest.RandomTrace(rng, ips, 3, 5, 600, format != "v1")
			path := filepath.Join(dir, fmt.Sprintf("t%d%s.dat", seed, format))
			if err := tracetest.WriteFile(path, tr, format, 40); err != nil {
				t.Fatal(err)
			}
			whole, err := tracefile.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			forest := calltree.Build(whole, lookup, nil)
			for _, o := range []graph.Options{{}, {Depth: 2}, {Limit: 7}, {Time: true, Limit: 60, Depth: 4}, {TIDs: []int{101}, Limit: 1}} {
				var want, got bytes.Buffer
				if err := graph.Write(&want, forest, o); err != nil {
					t.Fatal(err)
				}
				st, err := tracefile.OpenStream(path)
				if err != nil {
					t.Fatal(err)
				}
				err = graph.WriteStream(&got, st, lookup, o, nil)
				st.Close()
				if err != nil {
					t.Fatalf("seed %d %s: %v", seed, format, err)
				}
				if got.String() != want.String() {
					t.Fatalf("seed %d %s %+v:\nstream:\n%s\ntrees:\n%s", seed, format, o, got.String(), want.String())
				}
				streamed++
			}
		}
	}
	t.Logf("%d outputs compared", streamed)
}
