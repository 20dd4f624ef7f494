// Package argfmt prints the arguments and return values a trace recorded: by the
// program's DWARF (fnargs plans) for records made by --auto-args, else by the format
// each value was recorded with (-A / -R specs).
package argfmt

import (
	"strconv"
	"strings"
	"sync"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/internal/fnargs"
)

// Formatter formats values; the DWARF of each object is read once, when first needed.
type Formatter struct {
	// Open finds the file to read an object's DWARF from (the path the trace recorded,
	// by default).
	Open func(module string) string
	mu   sync.Mutex
	tabs map[string]*fnargs.Table // nil entry: no DWARF
}

func (f *Formatter) table(module string) *fnargs.Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tabs[module]; ok {
		return t
	}
	if f.tabs == nil {
		f.tabs = map[string]*fnargs.Table{}
	}
	path := module
	if f.Open != nil {
		path = f.Open(module)
	}
	t, err := fnargs.Load(path)
	if err != nil {
		t = nil
	}
	f.tabs[module] = t
	return t
}

// plan is fn's DWARF plan, if v was recorded from one and matches it.
func (f *Formatter) plan(fn *symbolize.Func, v *tracefile.Values) *fnargs.Func {
	if !v.Auto || fn == nil || fn.Module == "" || fn.Unknown {
		return nil
	}
	t := f.table(fn.Module)
	if t == nil {
		return nil
	}
	p := t.ByEntry(fn.Addr)
	if p == nil {
		return nil
	}
	entry, exit := p.Words()
	if !v.Ret && len(v.Items) > entry || v.Ret && len(v.Items) != exit {
		return nil
	}
	return p
}

// Args prints a call's arguments: "buf=\"GET /\", len=5" from DWARF, "1, \"x\"" from
// specs.
func (f *Formatter) Args(fn *symbolize.Func, v *tracefile.Values) string {
	if p := f.plan(fn, v); p != nil {
		words, strs := split(v)
		return fnargs.FormatArgs(p, fnargs.Split(p, words, strs))
	}
	parts := make([]string, len(v.Items))
	for i, it := range v.Items {
		parts[i] = plain(it)
	}
	return strings.Join(parts, ", ")
}

// WithArgs is fn's name with the arguments args (as Args prints them) in place of its
// parameter list: "parse(buf=\"GET /\", len=5)".
func WithArgs(fn *symbolize.Func, args string) string {
	// tags after the parameter list stay after the values: "~S(this=0x…) [deleting]"
	name, tail := symbolize.CutTags(fn.Name)
	if i := paramList(name); i > 0 {
		name = name[:i]
	}
	return name + "(" + args + ")" + tail
}

// paramList is where a demangled name's parameter list begins, if the name ends with it
// (or with qualifiers such as " const"): -1 otherwise.
func paramList(name string) int {
	end := strings.LastIndexByte(name, ')')
	if end < 0 || strings.HasSuffix(name, "operator()") {
		return -1
	}
	switch strings.TrimSpace(name[end+1:]) {
	case "", "const", "volatile", "const volatile", "&", "&&", "const &", "const &&":
		return symbolize.ParamList(name)
	}
	return -1
}

// Ret prints a return value.
func (f *Formatter) Ret(fn *symbolize.Func, v *tracefile.Values) string {
	if p := f.plan(fn, v); p != nil && p.Ret != nil {
		words, strs := split(v)
		val := fnargs.Value{Words: words}
		if len(strs) > 0 {
			val = strs[0]
			val.Words = words
		}
		return fnargs.FormatValue(p.Ret, val)
	}
	if len(v.Items) == 0 {
		return "?"
	}
	return plain(v.Items[0])
}

func split(v *tracefile.Values) ([]uint64, []fnargs.Value) {
	words := make([]uint64, len(v.Items))
	var strs []fnargs.Value
	for i, it := range v.Items {
		words[i] = it.Word
		if it.IsString() {
			strs = append(strs, strValue(it))
		}
	}
	return words, strs
}

func strValue(it tracefile.Value) fnargs.Value {
	return fnargs.Value{Words: []uint64{it.Word}, Str: it.Str, StrBad: it.StrFlags&tracefile.StrBad != 0,
		StrTrunc: it.StrFlags&tracefile.StrTrunc != 0, StrUnread: it.StrFlags&tracefile.StrUnread != 0}
}

var formats = map[int]fnargs.Format{
	tracefile.ArgFmtInt: fnargs.FInt, tracefile.ArgFmtUint: fnargs.FUint, tracefile.ArgFmtHex: fnargs.FHex,
	tracefile.ArgFmtString: fnargs.FString, tracefile.ArgFmtChar: fnargs.FChar,
	tracefile.ArgFmtFloat: fnargs.FFloat, tracefile.ArgFmtPtr: fnargs.FPtr,
}

// plain prints a value by the format it was recorded with (hex without one).
func plain(it tracefile.Value) string {
	ft, ok := formats[it.Fmt()]
	if !ok {
		if it.IsString() {
			ft = fnargs.FString
		} else {
			return "0x" + strconv.FormatUint(it.Word, 16)
		}
	}
	a := &fnargs.Arg{Fmt: ft, Size: it.Size()}
	val := fnargs.Value{Words: []uint64{it.Word}}
	if it.IsString() {
		val = strValue(it)
	}
	return fnargs.FormatValue(a, val)
}
