package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestDiff(t *testing.T) {
	// old: work 700 total (foo 400 of it), fib twice; new: foo slower, fib gone, baz new.
	oldT := "thread 1\n> 0 work\n> 100 foo\n< 500 foo\n> 500 fib\n< 600 fib\n> 600 fib\n< 650 fib\n< 700 work\n"
	newT := "thread 1\n> 0 work\n> 100 foo\n< 1100 foo\n> 1100 baz\n< 1130 baz\n< 1200 work\n"
	o, err := Compute(tracetest.Forest(t, oldT), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Compute(tracetest.Forest(t, newT), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want string // name:oldTotal/newTotal/oldCalls/newCalls
	}{
		// |delta total|: foo 600, work 500, fib 150, baz 30
		{"total", "foo:400/1000/1/1 work:700/1200/1/1 fib:150/0/2/0 baz:0/30/0/1"},
		// |delta self|: foo 600, fib 150, baz 30, work 150->170 = 20
		{"self", "foo:400/1000/1/1 fib:150/0/2/0 baz:0/30/0/1 work:700/1200/1/1"},
		// |delta calls|: fib 2, baz 1, then equal (0): bigger calls first, then name
		{"calls", "fib:150/0/2/0 baz:0/30/0/1 foo:400/1000/1/1 work:700/1200/1/1"},
		{"name", "baz:0/30/0/1 fib:150/0/2/0 foo:400/1000/1/1 work:700/1200/1/1"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			rows, err := Diff(o, n, tt.key, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				to, tn := r.val("total")
				co, cn := r.val("calls")
				got = append(got, fmt.Sprintf("%s:%d/%d/%d/%d", r.Name, to, tn, co, cn))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("\n got %s\nwant %s", g, tt.want)
			}
		})
	}
	// two static functions called helper, in a.c and b.c: two rows
	same := []*Stat{{Name: "helper", File: "/old/a.c", Calls: 1}, {Name: "helper", File: "/old/b.c", Calls: 2}}
	moved := []*Stat{{Name: "helper", File: "/new/a.c", Calls: 5}, {Name: "helper", File: "/new/b.c", Calls: 2}}
	if rows, err := Diff(same, moved, "calls", 0); err != nil || len(rows) != 2 || rows[0].Old.Calls != 1 || rows[0].New.Calls != 5 {
		t.Errorf("static functions: %v %v", rows, err)
	}
	rows, err := Diff(o, n, "", 2)
	if err != nil || len(rows) != 2 || rows[0].Name != "foo" {
		t.Fatalf("limit 2: %v %v", rows, err)
	}
	if _, err := Diff(o, n, "avg", 0); err == nil || !strings.Contains(err.Error(), "unknown sort key") {
		t.Errorf("bad key: %v", err)
	}
	var b bytes.Buffer
	rows, _ = Diff(o, n, "total", 0)
	if err := WriteDiffText(&b, rows, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for i, want := range []string{
		"FUNCTION",
		"1 1 +0 400 ns 1000 ns +600 ns +150.0% 400 ns 1000 ns +600 ns +150.0% foo",
		"1 1 +0 700 ns 1200 ns +500 ns +71.4% 150 ns 170 ns +20 ns +13.3% work",
		"2 0 -2 150 ns 0 ns -150 ns -100.0% 150 ns 0 ns -150 ns -100.0% fib (gone)",
		"0 1 +1 0 ns 30 ns +30 ns new 0 ns 30 ns +30 ns new baz (new)",
	} {
		if i >= len(lines) || !strings.Contains(strings.Join(strings.Fields(lines[i]), " "), want) {
			t.Errorf("line %d: want %q in\n%s", i, want, b.String())
		}
	}
}

func TestPercent(t *testing.T) {
	for _, tt := range []struct {
		o, n uint64
		want string
	}{
		{100, 100, "0%"}, {0, 0, "0%"}, {0, 5, "new"}, {100, 150, "+50.0%"},
		{100, 0, "-100.0%"}, {3, 2, "-33.3%"}, {1, 100, "+9900%"},
	} {
		if got := Percent(tt.o, tt.n); got != tt.want {
			t.Errorf("Percent(%d, %d) = %q, want %q", tt.o, tt.n, got, tt.want)
		}
	}
	if got := SignedDur(5000, 20000); got != "+15.000 us" {
		t.Errorf("SignedDur = %q", got)
	}
	if got := SignedDur(20, 5); got != "-15 ns" {
		t.Errorf("SignedDur = %q", got)
	}
}
