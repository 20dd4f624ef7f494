package main

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// lineTable maps addresses to file:line from the DWARF line tables, when present.
type lineTable struct {
	rows []lineRow
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // end of a sequence: no line information from here
}

func newLineTable(data []byte) *lineTable {
	t := &lineTable{}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return t
	}
	d, err := f.DWARF()
	if err != nil {
		return t
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				break
			}
			row := lineRow{addr: le.Address, line: le.Line, end: le.EndSequence}
			if le.File != nil {
				row.file = le.File.Name
			}
			t.rows = append(t.rows, row)
		}
	}
	sort.SliceStable(t.rows, func(i, j int) bool { return t.rows[i].addr < t.rows[j].addr })
	return t
}

func (t *lineTable) lookup(addr uint64) (string, int) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > addr }) - 1
	// Several rows can share an address (end of one sequence, start of the next): take
	// the last non-end row at the greatest address <= addr.
	for ; i >= 0; i-- {
		if !t.rows[i].end {
			break
		}
		if i > 0 && t.rows[i-1].addr != t.rows[i].addr {
			return "", 0
		}
	}
	if i < 0 {
		return "", 0
	}
	return t.rows[i].file, t.rows[i].line
}

// progress draws a progress bar on stderr when it is a terminal and the table is large.
type progress struct {
	w     io.Writer
	name  string
	tty   bool
	shown bool
	last  time.Time
}

const progressMin = 100000

func newProgress(w io.Writer, name string) *progress {
	p := &progress{w: w, name: name}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(done, total int) {
	if !p.tty || total < progressMin {
		return
	}
	if now := time.Now(); done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	} else {
		p.last = now
	}
	const width = 30
	n := done * width / total
	fmt.Fprintf(p.w, "\rftlink: %s [%s%s] %d/%d sites", p.name, bytes.Repeat([]byte("#"), n), bytes.Repeat([]byte("."), width-n), done, total)
	p.shown = true
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
