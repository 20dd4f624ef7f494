package fnargs

import (
	"fmt"
	"strings"
)

// The runtime caps (tracers/args.h): values recorded at entry, words of a return value.
const (
	runtimeMaxArgs = 16
	runtimeMaxRet  = 4
)

// RuntimeSpecs writes the table's plans in the runtime's spec syntax (FTRACE_ARGS and
// FTRACE_RETVAL, one `SYMBOL@ITEM,...` per line) for `ftrace record --auto-args`: each
// word of each argument at its location, formatted by readers from the DWARF (letter a,
// A for a string to copy, T for a std::string's text, V for a std::string_view's). Functions are named by their symbol (the C++ linkage name);
// a name that several functions with different plans share is left out, and so are gcc
// clones (Func.Clone: their parameters may not be the declaration's; the clone-only
// functions of leveldb's db_bench were specs the runtime then said matched nothing) and
// the arguments past the runtime's 16 words (readers show them as ?). keep, when not nil,
// says which functions may be traced (by entry address): the others are left out before
// names are compared. skipped counts the functions left out by name.
func (t *Table) RuntimeSpecs(keep func(entry uint64) bool) (args, rets string, skipped int) {
	type pair struct{ a, r string }
	byName := map[string]*pair{}
	var order []string
	bad := map[string]bool{}
	for _, f := range t.Funcs {
		if keep != nil && !keep(f.Entry) {
			continue
		}
		if f.Clone {
			skipped++
			continue
		}
		name := f.Linkage
		if name == "" {
			name = f.Name
		}
		if name == "" || strings.ContainsAny(name, "*?[@;,\n ") {
			skipped++
			continue
		}
		a, r := runtimeItems(f)
		if p, ok := byName[name]; ok {
			if p.a != a || p.r != r {
				bad[name] = true
			}
			continue
		}
		byName[name] = &pair{a, r}
		order = append(order, name)
	}
	var ab, rb strings.Builder
	for _, name := range order {
		if bad[name] {
			skipped++
			continue
		}
		p := byName[name]
		if p.a != "" {
			fmt.Fprintf(&ab, "%s@%s\n", name, p.a)
		}
		if p.r != "" {
			fmt.Fprintf(&rb, "%s@%s\n", name, p.r)
		}
	}
	return ab.String(), rb.String(), skipped
}

// runtimeItems is one plan's argument and return-value items.
func runtimeItems(f *Func) (args, ret string) {
	var items []string
	for i, a := range f.Args {
		if len(items)+len(a.Parts) > runtimeMaxArgs {
			break
		}
		for k, p := range a.Parts {
			items = append(items, fmt.Sprintf("arg%d/%s%s%s", i+1, autoLetter(a, k), partBits(a, k), runtimeLoc(p)))
		}
	}
	args = strings.Join(items, ",")
	items = items[:0]
	if r := f.Ret; r != nil && len(r.Parts) <= runtimeMaxRet {
		for k, p := range r.Parts {
			if p.Stack {
				return args, ""
			}
			items = append(items, "retval/"+autoLetter(r, k)+partBits(r, k)+runtimeLoc(p))
		}
	}
	return args, strings.Join(items, ",")
}

// bits is "32" for a value of one word of 4 bytes or less (the runtime then records one
// 32-bit word instead of two), else "".
func bits(a *Arg) string {
	if len(a.Parts) == 1 && a.Size > 0 && a.Size <= 4 && !a.isString() && !a.Indirect && a.Fmt != FFloat {
		return "32"
	}
	return ""
}

// partBits is bits(a) for a value of one word; for word k of a struct, "32" when the
// struct's members end in its first 4 bytes (the rest is padding, which the caller never
// wrote: recording it put undefined bytes in the trace, which valgrind reports).
func partBits(a *Arg, k int) string {
	if len(a.Parts) == 1 {
		return bits(a)
	}
	if a.PartSize > 0 && a.PartSize <= 4 {
		return "32" // a float member in the low bytes of its v register
	}
	if t := a.Type; t != nil && t.Kind == KStruct && !a.Indirect {
		if end := dataEnd(t) - 8*k; end > 0 && end <= 4 {
			return "32"
		}
	}
	return ""
}

// dataEnd is where t's last member ends: its size less its trailing padding.
func dataEnd(t *Type) int {
	end := 0
	ok := leaves(t, 0, func(bf *Field, t *Type, off int) bool {
		e := off + t.Size
		if bf != nil {
			e = off + (bf.BitOff+bf.BitSize+7)/8
		}
		end = max(end, e)
		return true
	})
	if !ok || end == 0 {
		return t.Size
	}
	return end
}

func autoLetter(a *Arg, part int) string {
	switch {
	case a.stringView():
		if part == 1 {
			return "V" // the bytes at the data pointer, as many as the length before
		}
	case part == 0 && a.stdString():
		return "T"
	case a.viewAt():
		return "W" // the view's length and data pointer at this word, then its bytes
	case part == 0 && a.isString():
		return "A"
	}
	return "a"
}

func runtimeLoc(l Loc) string {
	if l.Stack {
		return fmt.Sprintf("%%stack+%d", l.Off/8)
	}
	return "%" + l.Reg.String()
}
