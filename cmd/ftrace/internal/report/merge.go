package report

import (
	"path/filepath"
)

// A Merger adds up the statistics of several traces (each computed with Limit 0), one
// trace at a time, so that a reader of many (a test suite's thousand processes) keeps one
// row per function, not each trace's rows until the end. Their functions are told apart
// by name, the object's and the source file's base names, as Diff does (the same static
// function of one program in several processes is one row; static functions of one name
// in different files stay apart); with perThread, by thread too.
type Merger struct {
	perThread bool
	rows      map[mergeID]*Stat
	out       []*Stat
}

type mergeID struct {
	name, mod, file string
	tid             int
}

// NewMerger returns a Merger telling threads apart when perThread.
func NewMerger(perThread bool) *Merger {
	return &Merger{perThread: perThread, rows: map[mergeID]*Stat{}}
}

// Add adds one trace's statistics (computed with Limit 0).
func (m *Merger) Add(stats []*Stat) {
	for _, s := range stats {
		k := mergeID{s.Name, base(s.Mod), base(s.File), 0}
		if m.perThread {
			k.tid = s.TID
		}
		r := m.rows[k]
		if r == nil {
			r = &Stat{Func: s.Func, TID: s.TID, Name: s.Name, Mod: s.Mod, File: s.File, Line: s.Line}
			m.rows[k] = r
			m.out = append(m.out, r)
		}
		r.merge(s)
	}
}

// Stats is the sum of what was added, sorted and limited as o says.
func (m *Merger) Stats(o Options) ([]*Stat, error) {
	less, err := lessFunc(o.Sort)
	if err != nil {
		return nil, err
	}
	return sortLimit(m.out, o, less), nil
}

func base(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Base(p)
}
