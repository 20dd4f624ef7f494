package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func validate(t *testing.T, data []byte) map[string]int {
	t.Helper()
	c, err := Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValidateRejects(t *testing.T) {
	for _, doc := range []string{
		`[]`, `{"traceEvents":null}`, `{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":0,"dur":1}]}`,
		`{"traceEvents":[{"name":"a","ph":"X","pid":1,"tid":1,"ts":0,"dur":-1}]}`,
		`{"traceEvents":[{"name":"a","ph":"X","pid":1,"tid":1,"ts":0,"dur":1}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"X","pid":1,"tid":1,"ts":0,"dur":1},{"name":"b","ph":"X","pid":1,"tid":1,"ts":0.5,"dur":1}]}`,
		// begins and ends: an end without a begin, of another name, before its begin; a
		// begin never ended; a begin before the one enclosing it
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"E","pid":1,"tid":1,"ts":1}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"B","pid":1,"tid":1,"ts":1},{"name":"b","ph":"E","pid":1,"tid":1,"ts":2}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"B","pid":1,"tid":1,"ts":1},{"name":"a","ph":"E","pid":1,"tid":1,"ts":0.5}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"B","pid":1,"tid":1,"ts":1},{"ph":"E","pid":1,"tid":1,"ts":0.5}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"ph":"E","pid":1,"tid":1,"ts":1}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"ph":"B","pid":1,"tid":1,"ts":1},{"ph":"E","pid":1,"tid":1,"ts":2}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"B","pid":1,"tid":1,"ts":1}]}`,
		`{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},{"name":"a","ph":"B","pid":1,"tid":1,"ts":1},{"name":"b","ph":"B","pid":1,"tid":1,"ts":0.5},{"name":"b","ph":"E","pid":1,"tid":1,"ts":2},{"name":"a","ph":"E","pid":1,"tid":1,"ts":3}]}`,
	} {
		if _, err := Validate([]byte(doc)); err == nil {
			t.Errorf("accepted %s", doc)
		}
	}
}

// Float rounding of ts+dur must not break nesting: a sibling starting where the previous
// one ended (3686.954 + 0.141 = 3687.0950000000003).
func TestValidateRounding(t *testing.T) {
	doc := `{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},
{"name":"p","ph":"X","pid":1,"tid":1,"ts":3686.9,"dur":1},
{"name":"a","ph":"X","pid":1,"tid":1,"ts":3686.954,"dur":0.141},
{"name":"b","ph":"X","pid":1,"tid":1,"ts":3687.095,"dur":0.08},
{"name":"z","ph":"X","pid":1,"tid":1,"ts":3687.175,"dur":0}]}`
	if _, err := Validate([]byte(doc)); err != nil {
		t.Error(err)
	}
}

// An end event may leave out its name: it ends the innermost open begin.
func TestValidateNamelessEnd(t *testing.T) {
	doc := `{"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"x"}},
{"name":"a","ph":"B","pid":1,"tid":1,"ts":1},{"name":"b","ph":"B","pid":1,"tid":1,"ts":1.5},
{"ph":"E","pid":1,"tid":1,"ts":2},{"name":"a","ph":"E","pid":1,"tid":1,"ts":3}]}`
	if c, err := Validate([]byte(doc)); err != nil || c["E"] != 2 {
		t.Errorf("%v %v", c, err)
	}
}

func TestWriteGraph(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	c := validate(t, b.Bytes())
	if c["B"] != 7 || c["E"] != 7 || c["M"] != 3 || c["i"] != 0 {
		t.Errorf("counts %v, want 7 B, 7 E, 3 M", c)
	}
	// Exact values of one call: bar under foo, 0.2 µs after the start, 0.1 µs long.
	var doc File
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var bar []string
	for _, e := range nameEnds(doc.TraceEvents) {
		if e.Name == "bar" && e.TID == 100 && e.PID == 42 {
			bar = append(bar, fmt.Sprintf("%s %v", e.Ph, e.TS))
		}
	}
	if len(bar) < 2 || fmt.Sprint(bar[:2]) != "[B 0.2 E 0.3]" {
		t.Errorf("bar events %v, want [B 0.2 E 0.3 ...]:\n%s", bar, b.String())
	}
}

// nameEnds gives each end event the name of the begin it ends, as the viewers do.
func nameEnds(evs []Event) []Event {
	type thread struct{ pid, tid int }
	open := map[thread][]string{}
	for i, e := range evs {
		k := thread{e.PID, e.TID}
		switch e.Ph {
		case "B":
			open[k] = append(open[k], e.Name)
		case "E":
			if st := open[k]; len(st) > 0 {
				evs[i].Name = st[len(st)-1]
				open[k] = st[:len(st)-1]
			}
		}
	}
	return evs
}

func TestWriteFunction(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 3 x\nc 10 a main\nc 20 b a\n")
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	if c := validate(t, b.Bytes()); c["i"] != 2 || c["B"] != 0 {
		t.Errorf("counts %v", c)
	}
}

// The writer's own encoder writes what encoding/json writes, on events of every shape.
func TestAppendEventMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	strs := []string{"", "main", "ns::f<int>(char const*)", "a\"b\\c", "<tag>&", "\x00\x1f\u2028é", "operator<<"}
	floats := []float64{0, 1, 0.001, 123456.789, 1e-7, 3e21, 1.5e-9, 42.125, 1e20}
	cw := &writer{}
	for i := 0; i < 2000; i++ {
		e := Event{Name: strs[rng.Intn(len(strs))], Cat: strs[rng.Intn(2)], Ph: []string{"B", "E", "i", "M"}[rng.Intn(4)],
			TS: floats[rng.Intn(len(floats))], PID: rng.Intn(1 << 20), TID: -rng.Intn(3), S: []string{"", "t"}[rng.Intn(2)]}
		if rng.Intn(3) == 0 {
			d := floats[rng.Intn(len(floats))]
			e.Dur = &d
		}
		if n := rng.Intn(4); n > 0 {
			e.Args = map[string]string{}
			for k := 0; k < n; k++ {
				e.Args[strs[rng.Intn(len(strs))]] = strs[rng.Intn(len(strs))]
			}
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := cw.appendEvent(nil, &e); string(got) != string(want) {
			t.Fatalf("event %+v:\n got %s\nwant %s", e, got, want)
		}
	}
}
