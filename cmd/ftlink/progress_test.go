package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	for _, c := range []struct {
		name  string
		tty   bool
		total int
		want  bool
	}{
		{"terminal, large", true, 300000, true},
		{"terminal, small", true, progressMin - 1, false},
		{"not a terminal", false, 300000, false},
	} {
		var buf bytes.Buffer
		p := newProgress(&buf, "prog")
		p.tty = c.tty // a bytes.Buffer is never a terminal
		for done := 0; done <= c.total; done += 4096 {
			p.update(done, c.total)
		}
		p.update(c.total, c.total)
		p.done()
		out := buf.String()
		if got := strings.Contains(out, "sites"); got != c.want {
			t.Errorf("%s: progress drawn %v, want %v: %q", c.name, got, c.want, out)
		}
		if c.want && (!strings.Contains(out, "[##############################] 300000/300000 sites") || !strings.HasSuffix(out, "\r\033[K")) {
			t.Errorf("%s: no complete bar or not cleared: %q", c.name, out[max(0, len(out)-120):])
		}
	}
}
