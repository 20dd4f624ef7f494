package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func row(s *Stat) string {
	return fmt.Sprintf("%s:%d/%d/%d/%d/%d/%d", s.Name, s.Calls, s.Total, s.Self, s.Avg, s.Min, s.Max)
}

func TestCompute(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		// fib: outer call 1300-1400 (100), inner 1310-1330 (20): total counts the
		// outermost only; self 80+20; avg (100+20)/2.
		{"total", Options{}, "main:1/1000/550/1000/1000/1000 work:1/700/600/700/700/700 foo:1/400/300/400/400/400 bar:2/150/150/75/50/100 fib:2/100/100/60/20/100"},
		{"calls limit", Options{Sort: "calls", Limit: 2}, "bar:2/150/150/75/50/100 fib:2/100/100/60/20/100"},
		{"self", Options{Sort: "self", Limit: 1}, "work:1/700/600/700/700/700"},
		{"min", Options{Sort: "min", Limit: 2}, "main:1/1000/550/1000/1000/1000 work:1/700/600/700/700/700"},
		{"name", Options{Sort: "name"}, "bar:2/150/150/75/50/100 fib:2/100/100/60/20/100 foo:1/400/300/400/400/400 main:1/1000/550/1000/1000/1000 work:1/700/600/700/700/700"},
		{"tid", Options{TIDs: []int{101}, Sort: "avg"}, "work:1/700/600/700/700/700 fib:2/100/100/60/20/100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stats, err := Compute(f, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range stats {
				got = append(got, row(s))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("\n got %s\nwant %s", g, tt.want)
			}
		})
	}
	if _, err := Compute(f, Options{Sort: "bogus"}); err == nil || !strings.Contains(err.Error(), "unknown sort key") {
		t.Errorf("bogus sort: %v", err)
	}
}

// A trace whose tracer was switched live holds function-tracer calls (no duration) and
// graph calls: both count as calls, only the graph calls make the times. In a function
// trace (every total 0) the default order is by calls.
func TestMixedAndFunctionOnly(t *testing.T) {
	mixed := tracetest.Forest(t, "thread 1\nc 100 work main\nc 200 work main\nc 300 work main\n> 1000 work\n< 1040 work\n> 2000 work\n< 2060 work\n")
	stats, err := Compute(mixed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || row(stats[0]) != "work:5/100/100/50/40/60" {
		t.Errorf("mixed trace: %v, want work:5/100/100/50/40/60", stats)
	}
	fn := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a main\nc 2 b main\nc 3 b main\nc 4 c main\nc 5 c main\nc 6 c main\n")
	stats, err = Compute(fn, Options{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 2 || row(stats[0]) != "c:3/0/0/0/0/0" || row(stats[1]) != "b:2/0/0/0/0/0" {
		t.Errorf("function trace, default order: %v, want c then b", stats)
	}
}

func TestPerThread(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample+"thread 102\n> 5000 bar\n< 5010 bar\n")
	stats, err := Compute(f, Options{PerThread: true, Sort: "name"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range stats {
		if s.Name == "bar" {
			got = append(got, fmt.Sprintf("%d:%d", s.TID, s.Calls))
		}
	}
	if g := strings.Join(got, " "); g != "100:2 102:1" {
		t.Errorf("bar per thread: %s", g)
	}
}

func TestJSONAndText(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	stats, _ := Compute(f, Options{})
	var b bytes.Buffer
	if err := WriteJSON(&b, f, stats); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tracer    string
		PID       int
		Functions []struct {
			Name                                 string
			Calls                                uint64
			TotalNS, SelfNS, AvgNS, MinNS, MaxNS uint64
		}
	}
	dec := json.NewDecoder(&b)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tracer != "function_graph" || doc.PID != 42 || len(doc.Functions) != 5 || doc.Functions[0].Name != "main" || doc.Functions[3].Calls != 2 {
		t.Errorf("json %+v", doc)
	}
	b.Reset()
	if err := WriteText(&b, f, stats, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], "CALLS") || !strings.Contains(lines[0], "SELF") ||
		!strings.HasSuffix(lines[4], "  bar") || !strings.Contains(lines[4], " 2  ") {
		t.Errorf("text:\n%s", b.String())
	}
	// Function traces: calls only.
	ff := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a\nc 2 a\nc 3 b\n")
	st, _ := Compute(ff, Options{Sort: "calls"})
	b.Reset()
	WriteText(&b, ff, st, false)
	if got := b.String(); strings.Contains(got, "TOTAL") || !strings.Contains(got, "2  a\n") || !strings.Contains(got, "1  b\n") {
		t.Errorf("function trace text:\n%s", got)
	}
}

func TestDur(t *testing.T) {
	for ns, want := range map[uint64]string{0: "0 ns", 9999: "9999 ns", 12345: "12.345 us", 12_345_678: "12.346 ms", 12_345_678_901: "12.346 s"} {
		if got := Dur(ns); got != want {
			t.Errorf("Dur(%d) = %q, want %q", ns, got, want)
		}
	}
}

// A trace whose tracer was switched while running holds both kinds of events.
func TestMixedTracers(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a main\n> 10 b\n< 30 b\n")
	stats, err := Compute(f, Options{Sort: "name"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range stats {
		got = append(got, row(s))
	}
	if g := strings.Join(got, " "); g != "a:1/0/0/0/0/0 b:1/20/20/20/20/20" {
		t.Errorf("got %s", g)
	}
	var b bytes.Buffer
	WriteText(&b, f, stats, false)
	if !strings.Contains(b.String(), "TOTAL") {
		t.Errorf("times not shown:\n%s", b.String())
	}
}

// The JSON document carries the trace's lost counts and the calls without a return or an
// entry, so that a consumer can tell a complete report from a partial one.
func TestJSONLossFields(t *testing.T) {
	f := tracetest.Forest(t, "tracer function_graph\nlostnobuf 4\nthread 1 a\nlost 3\nlostdepth 2\n"+
		"> 100 main\n> 110 foo\n< 120 foo\n< 130 bar 90\nthread 2 b\nlost 1\n> 200 work\n")
	stats, _ := Compute(f, Options{})
	var b bytes.Buffer
	if err := WriteJSON(&b, f, stats); err != nil {
		t.Fatal(err)
	}
	var doc JSON
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("complete=%v lost=%d nobuf=%d depth=%d unmatched=%d unfinished=%d",
		doc.Complete, doc.Lost, doc.LostNoBuf, doc.LostDepth, doc.Unmatched, doc.Unfinished)
	// main and work never return; bar returns without an entry
	if want := "complete=false lost=4 nobuf=4 depth=2 unmatched=1 unfinished=2"; got != want {
		t.Errorf("got  %s\nwant %s\n%s", got, want, b.String())
	}
}

// A call whose end was not recorded (cut by the trace's end or a loss) does not make a
// function's minimum or average while it has a whole call: its time is a lower bound (a loss gap
// gave minimums of 0 ns). Alone, it does.
func TestMinOfWholeCalls(t *testing.T) {
	f := tracetest.Forest(t, "thread 1\n> 100 main\n> 110 work\n< 200 work\n> 300 work\n< 310 main\n"+
		"thread 2\n> 100 other\n> 101 work\n< 106 other\n> 200 lone\n< 203 other\n")
	for _, o := range []Options{{}, {PerThread: true}} {
		stats, err := Compute(f, o)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range stats {
			if s.Name == "work" || s.Name == "lone" {
				got = append(got, fmt.Sprintf("%s:%d/%d/%d/%d/%d", s.Name, s.Calls, s.Partial, s.Min, s.Max, s.Avg))
			}
		}
		sort.Strings(got)
		// the average too is the whole calls' (it fell below the minimum: memcached's
		// sleeping threads, cut at their last event, counted 0 ns)
		want := "lone:1/1/3/3/3 work:3/2/90/90/90"
		if o.PerThread {
			want = "lone:1/1/3/3/3 work:1/1/5/5/5 work:2/1/90/90/90"
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%+v: %s, want %s", o, g, want)
		}
	}
}

// The text header of a report of several traces names their processes, the first ones
// and the last when there are many; the JSON document has them all.
func TestProcessesHeader(t *testing.T) {
	for _, n := range []int{2, maxPIDsShown, maxPIDsShown + 1, 589} {
		f := tracetest.Forest(t, tracetest.Sample)
		f.PIDs = nil
		for i := 0; i < n; i++ {
			f.PIDs = append(f.PIDs, 100+i)
		}
		stats, _ := Compute(f, Options{})
		var b bytes.Buffer
		WriteText(&b, f, stats, false)
		head, _, _ := strings.Cut(b.String(), "\n")
		words := strings.Fields(strings.TrimPrefix(head, fmt.Sprintf("# %d processes:", n)))
		if !strings.HasPrefix(head, fmt.Sprintf("# %d processes: 100 101", n)) || len(words) > maxPIDsShown+1 ||
			words[len(words)-1] != fmt.Sprint(100+n-1) || (n > maxPIDsShown) != slices.Contains(words, "…") {
			t.Errorf("%d processes: header %q", n, head)
		}
		b.Reset()
		WriteJSON(&b, f, stats)
		var doc struct{ PIDs []int }
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.PIDs) != n {
			t.Errorf("%d processes: JSON has %d (%v)", n, len(doc.PIDs), err)
		}
	}
}

// Rows of one name from several modules (a static function of each of pcre2's 8-, 16-
// and 32-bit libraries) name their module; a name only one module has does not, in the
// report and in its diff.
func TestSharedNamesShowModule(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a\n")
	stats := []*Stat{
		{Name: "compile_branch", Mod: "/usr/lib/libpcre2-8.so.0", Calls: 3},
		{Name: "compile_branch", Mod: "/usr/lib/libpcre2-16.so.0", Calls: 2},
		{Name: "main", Mod: "/usr/bin/prog", Calls: 1},
		{Name: "helper", Mod: "/usr/bin/prog", TID: 1, Calls: 1},
		{Name: "helper", Mod: "/usr/bin/prog", TID: 2, Calls: 1},
	}
	var b bytes.Buffer
	if err := WriteText(&b, f, stats, false); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"  compile_branch (libpcre2-8.so.0)\n", "  compile_branch (libpcre2-16.so.0)\n", "  main\n", "  helper\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	rows, err := Diff(stats[:3], stats[1:3], "calls", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteDiffText(&b, rows, false); err != nil {
		t.Fatal(err)
	}
	got = b.String()
	for _, want := range []string{"  compile_branch (libpcre2-8.so.0) (gone)\n", "  compile_branch (libpcre2-16.so.0)\n", "  main\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff: no %q in\n%s", want, got)
		}
	}
}
