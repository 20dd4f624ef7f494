package report

import (
	"path/filepath"
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
