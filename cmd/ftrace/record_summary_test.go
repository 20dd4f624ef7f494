package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// The summary's lost fraction is of the events the file's tables count: record reads no
// event back (a trial showed "(100.0%)" for every trace with losses).
func TestSummaryLine(t *testing.T) {
	tr := &tracefile.Trace{Header: tracefile.Header{Version: tracefile.Version2}, Threads: []*tracefile.Thread{
		{TID: 1, Lost: 10863425}, {TID: 2},
	}}
	ring := &tracefile.Trace{Header: tracefile.Header{Version: tracefile.Version2, Ring: true}, Threads: tr.Threads}
	for _, c := range []struct {
		tr                *tracefile.Trace
		events, lostDepth uint64
		noLoss            bool
		want              string
	}{
		// the jq trial's function tracer dropped 14 % at start-up, and the line said nothing of --no-loss
		{tr, 44135243, 0, false, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%; record with --no-loss to keep every event) (1.50s)"},
		{tr, 44135243, 0, true, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%) (1.50s)"},
		{ring, 44135243, 0, false, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%) (1.50s)"},
		{&tracefile.Trace{Threads: []*tracefile.Thread{{TID: 1}}}, 7, 3, false, "ftrace: t.dat: 1 thread, 7 events, 3 calls not graphed (1.50s)"},
	} {
		if got := summaryLine("t.dat", c.tr, c.events, c.lostDepth, 1500*time.Millisecond, c.noLoss); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// A summary line names at most maxNamed traces and counts the rest (libuv's suite, traced,
// named 1,059 children on one line).
func TestSomeOf(t *testing.T) {
	var names []string
	for i := 0; i < maxNamed+5; i++ {
		names = append(names, fmt.Sprintf("t.dat.%d", i))
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{2, "t.dat.0 t.dat.1"},
		{maxNamed, strings.Join(names[:maxNamed], " ")},
		{maxNamed + 5, strings.Join(names[:maxNamed], " ") + " … and 5 more"},
	} {
		if got := someOf(names[:tt.n], " "); got != tt.want {
			t.Errorf("someOf(%d names) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
