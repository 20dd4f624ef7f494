package tracefile

import (
	"strings"
	"testing"
)

// What a loss summary tells to do depends on where the events were lost.
func TestLostSummaryHint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       Header
		lost    uint64
		hint    string
		noLoss  bool
		wantSum uint64
	}{
		{"none", Header{Version: Version2}, 0, "", false, 0},
		{"buffers full", Header{Version: Version2}, 5, "record with --no-loss", true, 5},
		{"no buffer only", Header{Version: Version2, LostNoBuf: 6}, 0, "no buffer (at its end, or inside fork): --no-loss cannot help", false, 6},
		{"both", Header{Version: Version2, LostNoBuf: 6}, 5, "record with --no-loss", true, 11},
		{"write error", Header{Version: Version2, Flags: FlagWriteError}, 5, "--no-loss cannot help", false, 5},
		{"ring", Header{Version: Version2, Ring: true}, 5, "", false, 5},
	} {
		tr := &Trace{Header: tc.h, Threads: []*Thread{{TID: 1, Lost: tc.lost}}}
		l := LostSummary(tr)
		if l.Lost != tc.wantSum || l.NoLossHelps != tc.noLoss || !strings.Contains(l.Hint, tc.hint) || (tc.hint == "" && l.Hint != "") {
			t.Errorf("%s: lost %d, hint %q, no-loss helps %v", tc.name, l.Lost, l.Hint, l.NoLossHelps)
		}
	}
}
