package report

import (
	"path/filepath"
	"slices"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Merge adds up the statistics of several traces (each computed with Limit 0), sorted
// and limited as o says: the processes of one run (a shell's, a test suite's, a server's
// workers'). Their functions are told apart by name, the object's and the source file's
// base names, as Diff does (the same static function of one program in several
// processes is one row; static functions of one name in different files stay apart);
// with PerThread, by thread too.
func Merge(lists [][]*Stat, o Options) ([]*Stat, error) {
	less, err := lessFunc(o.Sort)
	if err != nil {
		return nil, err
	}
	type id struct {
		name, mod, file string
		tid             int
	}
	rows := map[id]*Stat{}
	var out []*Stat
	for _, stats := range lists {
		for _, s := range stats {
			k := id{s.Name, base(s.Mod), base(s.File), 0}
			if o.PerThread {
				k.tid = s.TID
			}
			m := rows[k]
			if m == nil {
				m = &Stat{Func: s.Func, TID: s.TID, Name: s.Name, Mod: s.Mod, File: s.File, Line: s.Line}
				rows[k] = m
				out = append(out, m)
			}
			m.merge(s)
		}
	}
	return sortLimit(out, o, less), nil
}

func base(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Base(p)
}

// Combine is the forest of several traces' forests as report's header lines and JSON
// count them: their threads, lost events, whether all are complete, their pids.
func Combine(fs []*calltree.Forest) *calltree.Forest {
	if len(fs) == 1 {
		return fs[0]
	}
	c := &calltree.Forest{Header: fs[0].Header}
	c.Header.Flags |= tracefile.FlagComplete
	c.Header.LostNoBuf = 0
	for _, f := range fs {
		if f.Header.Flags&tracefile.FlagComplete == 0 {
			c.Header.Flags &^= tracefile.FlagComplete
		}
		if f.Header.Tracer != c.Header.Tracer {
			c.Header.Tracer = "mixed"
		}
		c.Header.LostNoBuf += f.Header.LostNoBuf
		c.Threads = append(c.Threads, f.Threads...)
		if !slices.Contains(c.PIDs, f.Header.PID) {
			c.PIDs = append(c.PIDs, f.Header.PID)
		}
	}
	return c
}
