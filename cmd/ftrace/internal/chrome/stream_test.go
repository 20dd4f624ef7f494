package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// perThread splits a document's events by thread: the begin/end sequence in file order,
// and the instant events sorted (a stream interleaves them with the calls in time order,
// the trees give them first).
func perThread(t *testing.T, data []byte) (map[int][]Event, map[int][]string) {
	t.Helper()
	var doc File
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	be, inst := map[int][]Event{}, map[int][]string{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "B", "E", "M":
			be[e.TID] = append(be[e.TID], e)
		case "i":
			inst[e.TID] = append(inst[e.TID], fmt.Sprintf("%v %s %v", e.TS, e.Name, e.Args))
		default:
			t.Fatalf("phase %q", e.Ph)
		}
	}
	for _, v := range inst {
		sort.Strings(v)
	}
	return be, inst
}

// The streamed JSON holds the events the call trees give, each thread's begins and ends
// in the same order, on random streams of every format (version 1 with exits whose
// entries are missing, rings that start inside calls, blocks continued by MORE chunks).
func TestWriteStreamMatchesTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("g", 5)
	lookup := names.Locked()
	n := 0
	for seed := int64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		for _, format := range []string{"v1", "v2", "v2ring", "v3more"} {
			tr := tracetest.RandomTrace(rng, ips, 3, 5, 600, format != "v1")
			path := filepath.Join(dir, fmt.Sprintf("t%d%s.dat", seed, format))
			if err := tracetest.WriteFile(path, tr, format, 40); err != nil {
				t.Fatal(err)
			}
			whole, err := tracefile.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var want, got bytes.Buffer
			if err := Write(&want, calltree.Build(whole, lookup, nil)); err != nil {
				t.Fatal(err)
			}
			st, err := tracefile.OpenStream(path)
			if err != nil {
				t.Fatal(err)
			}
			err = WriteStream(&got, st, lookup, nil, nil, nil, nil)
			st.Close()
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, format, err)
			}
			if _, err := Validate(got.Bytes()); err != nil {
				t.Fatalf("seed %d %s: streamed JSON: %v", seed, format, err)
			}
			if _, err := Validate(want.Bytes()); err != nil {
				t.Fatalf("seed %d %s: JSON of the trees: %v", seed, format, err)
			}
			gb, gi := perThread(t, got.Bytes())
			wb, wi := perThread(t, want.Bytes())
			if !reflect.DeepEqual(gb, wb) || !reflect.DeepEqual(gi, wi) {
				t.Fatalf("seed %d %s:\nstream:\n%s\ntrees:\n%s", seed, format, got.String(), want.String())
			}
			n++
		}
	}
	t.Logf("%d documents compared", n)
}
