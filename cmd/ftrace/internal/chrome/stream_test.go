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
			if e.Cat == "marker" {
				continue // the stream's (a lost block's "[LOST n EVENTS]"): trees only tally them
			}
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
// entries are missing, rings that start inside calls, blocks continued by MORE chunks,
// blocks dropped: version 2 is written in one pass, its headers give the calls open where
// its events resume).
func TestWriteStreamMatchesTrees(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	ips := names.Funcs("g", 5)
	lookup := names.Locked()
	n := 0
	for seed := int64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		for _, format := range []string{"v1", "v2", "v2ring", "v3more", "v2dropped"} {
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

// Several traces in one document: each process under its own pid with its name, placed
// in time by the wall-clock time its trace started (the second began 5 µs after the
// first: its events are 5 µs later than its own times say), every event of each there.
func TestWriteStreams(t *testing.T) {
	dir := t.TempDir()
	names := tracetest.NewNames()
	lookup := names.Locked()
	var ins []Input
	for i, src := range []string{
		"tracer function_graph\npid 10\ncmd /bin/first\nstart 1000\nthread 10 a\n> 1000 main\n> 1100 f\n< 1200 f\n< 2000 main\n",
		"tracer function\npid 20\ncmd /bin/second\nstart 500\nthread 21 b\nc 500 g\nc 700 g\n",
	} {
		tr, err := tracetest.Parse(src, names.Resolve)
		if err != nil {
			t.Fatal(err)
		}
		tr.Header.Flags |= tracefile.FlagComplete
		tr.Header.WallStart = int64(1e15 + 5000*i) // the second 5 µs after the first
		path := filepath.Join(dir, fmt.Sprintf("t%d.dat", i))
		if err := tracetest.WriteFile(path, tr, "v1", 0); err != nil {
			t.Fatal(err)
		}
		st, err := tracefile.OpenStream(path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ins = append(ins, Input{St: st, Lookup: lookup})
	}
	var out bytes.Buffer
	if err := WriteStreams(&out, ins, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(out.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var doc File
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range nameEnds(doc.TraceEvents) {
		name := e.Name
		if e.Ph == "M" {
			name += "=" + e.Args["name"]
		}
		got = append(got, fmt.Sprintf("%d/%d %s %s %v", e.PID, e.TID, e.Ph, name, e.TS))
	}
	want := []string{
		"10/0 M process_name=first 0", "10/10 M thread_name=a 0",
		"10/10 B main 0", "10/10 B f 0.1", "10/10 E f 0.2", "10/10 E main 1",
		"20/0 M process_name=second 0", "20/21 M thread_name=b 0",
		"20/21 i g 5", "20/21 i g 5.2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	if doc.OtherData["traces"] != "2" || doc.OtherData["command"] != "" {
		t.Errorf("otherData %v", doc.OtherData)
	}
}
