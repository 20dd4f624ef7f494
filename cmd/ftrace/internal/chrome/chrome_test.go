package chrome

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// Validate checks a trace-event JSON document: the object form with a traceEvents array;
// every event has name, ph, pid, tid and (except metadata) a ts; "X" events have a
// non-negative dur and, per thread, nest properly (each lies inside the enclosing open
// one, as the viewer requires); every thread with events has a thread_name.
func Validate(t *testing.T, data []byte) map[string]int {
	t.Helper()
	var doc struct {
		TraceEvents     []map[string]any `json:"traceEvents"`
		DisplayTimeUnit string           `json:"displayTimeUnit"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.TraceEvents == nil {
		t.Fatal("no traceEvents array")
	}
	if doc.DisplayTimeUnit != "ns" && doc.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q", doc.DisplayTimeUnit)
	}
	num := func(e map[string]any, k string) float64 {
		n, ok := e[k].(json.Number)
		if !ok {
			t.Fatalf("event %v: %s is not a number", e, k)
		}
		v, err := n.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	counts := map[string]int{}
	named := map[float64]bool{}
	used := map[float64]bool{}
	type span struct{ start, end float64 }
	open := map[float64][]span{}
	for _, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		name, _ := e["name"].(string)
		if name == "" || ph == "" {
			t.Fatalf("event without name/ph: %v", e)
		}
		num(e, "pid")
		tid := num(e, "tid")
		counts[ph]++
		switch ph {
		case "M":
			if name == "thread_name" {
				named[tid] = true
			}
			args, _ := e["args"].(map[string]any)
			if s, _ := args["name"].(string); s == "" {
				t.Errorf("metadata without args.name: %v", e)
			}
		case "X":
			ts, dur := num(e, "ts"), num(e, "dur")
			if ts < 0 || dur < 0 {
				t.Errorf("negative ts/dur: %v", e)
			}
			used[tid] = true
			st := open[tid]
			for len(st) > 0 && ts >= st[len(st)-1].end {
				st = st[:len(st)-1]
			}
			if len(st) > 0 && ts+dur > st[len(st)-1].end+1e-9 {
				t.Errorf("event %v overlaps its parent %v", e, st[len(st)-1])
			}
			open[tid] = append(st, span{ts, ts + dur})
		case "i":
			num(e, "ts")
			used[tid] = true
			if s, _ := e["s"].(string); s != "t" && s != "p" && s != "g" {
				t.Errorf("instant event scope %q", s)
			}
		default:
			t.Errorf("unexpected phase %q", ph)
		}
	}
	for tid := range used {
		if !named[tid] {
			t.Errorf("thread %v has no thread_name", tid)
		}
	}
	return counts
}

func TestWriteGraph(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	c := Validate(t, b.Bytes())
	if c["X"] != 7 || c["M"] != 3 || c["i"] != 0 {
		t.Errorf("counts %v, want 7 X, 3 M", c)
	}
	// Exact values of one event: bar under foo, 0.2 µs after the start, 0.1 µs long.
	var doc File
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range doc.TraceEvents {
		if e.Name == "bar" && e.TID == 100 && e.TS == 0.2 && e.Dur != nil && *e.Dur == 0.1 && e.PID == 42 {
			found = true
		}
	}
	if !found {
		t.Errorf("no bar event at 0.2 µs lasting 0.1 µs:\n%s", b.String())
	}
}

func TestWriteFunction(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 3 x\nc 10 a main\nc 20 b a\n")
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	if c := Validate(t, b.Bytes()); c["i"] != 2 || c["X"] != 0 {
		t.Errorf("counts %v", c)
	}
}
