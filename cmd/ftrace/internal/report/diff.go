package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
)

// DiffRow compares one function between two traces. Old or New is nil when the
// function was not recorded in that trace.
type DiffRow struct {
	Name string
	Mod  string // module base name: two builds of a program live at different paths
	Old  *Stat
	New  *Stat
}

// DiffSortKeys are the accepted sort keys of Diff: the row with the biggest absolute
// change of that figure comes first.
var DiffSortKeys = []string{"total", "self", "calls", "name"}

// stat is the new figures, else the old ones.
func (r *DiffRow) stat() *Stat {
	if r.New != nil {
		return r.New
	}
	return r.Old
}

func (r *DiffRow) val(key string) (o, n uint64) {
	get := func(s *Stat) uint64 {
		if s == nil {
			return 0
		}
		switch key {
		case "self":
			return s.Self
		case "calls":
			return s.Calls
		}
		return s.Total
	}
	return get(r.Old), get(r.New)
}

// Diff pairs the functions of two whole-trace reports (Compute without PerThread) by
// name and module and source file base names, and sorts them by the biggest absolute change of key
// (total, self or calls; name sorts by name). limit > 0 keeps that many rows.
func Diff(old, cur []*Stat, key string, limit int) ([]*DiffRow, error) {
	if key == "" {
		key = "total"
	}
	ok := false
	for _, k := range DiffSortKeys {
		ok = ok || k == key
	}
	if !ok {
		return nil, fmt.Errorf("unknown sort key %q for --diff (want one of %s)", key, strings.Join(DiffSortKeys, ", "))
	}
	// static functions of one name in several files stay apart: the file's base name
	// is part of the key (paths differ between two builds' trees)
	type id struct{ name, mod, file string }
	rows := map[id]*DiffRow{}
	row := func(s *Stat) *DiffRow {
		k := id{s.Name, base(s.Mod), base(s.File)}
		r := rows[k]
		if r == nil {
			r = &DiffRow{Name: k.name, Mod: k.mod}
			rows[k] = r
		}
		return r
	}
	// several functions of one key (a template's per-object copies, `[clone .isra.0]`,
	// one name and file: the ninja trial's 26) add up; the last one alone was kept
	add := func(side **Stat, s *Stat) {
		if *side == nil {
			c := *s
			*side = &c
			return
		}
		(*side).merge(s)
		(*side).setAvg()
	}
	for _, s := range old {
		add(&row(s).Old, s)
	}
	for _, s := range cur {
		add(&row(s).New, s)
	}
	out := make([]*DiffRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	absDelta := func(r *DiffRow) uint64 {
		o, n := r.val(key)
		if n > o {
			return n - o
		}
		return o - n
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if key != "name" {
			if da, db := absDelta(a), absDelta(b); da != db {
				return da > db
			}
			// equal change: the bigger function first (new, else old figure)
			ao, an := a.val(key)
			bo, bn := b.val(key)
			if max(ao, an) != max(bo, bn) {
				return max(ao, an) > max(bo, bn)
			}
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Mod < b.Mod
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SignedDur formats new-old nanoseconds with a sign, as Dur does.
func SignedDur(old, cur uint64) string {
	if cur >= old {
		return "+" + Dur(cur-old)
	}
	return "-" + Dur(old-cur)
}

// Percent is the change from old to cur: "+12.5%", "new" when old is 0 and cur is not,
// "0%" when both are equal.
func Percent(old, cur uint64) string {
	switch {
	case old == cur:
		return "0%"
	case old == 0:
		return "new"
	}
	p := (float64(cur) - float64(old)) / float64(old) * 100
	if math.Abs(p) >= 1000 {
		return fmt.Sprintf("%+.0f%%", p)
	}
	return fmt.Sprintf("%+.1f%%", p)
}

func signedCount(old, cur uint64) string {
	if cur >= old {
		return fmt.Sprintf("+%d", cur-old)
	}
	return fmt.Sprintf("-%d", old-cur)
}

// WriteDiffText prints the rows as a table: calls, total and self of the old and the new
// trace with their change; a function missing from one side is marked (gone) or (new).
// timed is false when neither trace has durations (function traces): calls only.
func WriteDiffText(w io.Writer, rows []*DiffRow, timed bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := []string{"CALLS OLD", "NEW", "DELTA"}
	if timed {
		hdr = append(hdr, "TOTAL OLD", "NEW", "DELTA", "%", "SELF OLD", "NEW", "DELTA", "%")
	}
	fmt.Fprintf(tw, "%s\t  FUNCTION\n", strings.Join(hdr, "\t"))
	shared := sharedNames(rows, func(r *DiffRow) (string, string) { return r.Name, r.Mod })
	for _, r := range rows {
		var row []string
		co, cn := r.val("calls")
		row = append(row, fmt.Sprint(co), fmt.Sprint(cn), signedCount(co, cn))
		if timed {
			to, tn := r.val("total")
			so, sn := r.val("self")
			row = append(row, Dur(to), Dur(tn), SignedDur(to, tn), Percent(to, tn),
				Dur(so), Dur(sn), SignedDur(so, sn), Percent(so, sn))
		}
		name := r.Name
		if shared[name] && r.Mod != "" {
			name += " (" + r.Mod + ")"
		}
		if s := r.stat(); s.File != "" {
			name += fmt.Sprintf(" [%s:%d]", symbolize.ShortFile(s.File), s.Line)
		}
		switch {
		case r.Old == nil:
			name += " (new)"
		case r.New == nil:
			name += " (gone)"
		}
		fmt.Fprintf(tw, "%s\t  %s\n", strings.Join(row, "\t"), name)
	}
	return tw.Flush()
}
