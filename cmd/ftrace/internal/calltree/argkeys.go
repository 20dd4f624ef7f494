package calltree

import (
	"sync"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// ArgKeys splits functions by the arguments recorded with their calls: each distinct
// text Name gives becomes a function of its own (a copy of the function under that
// name), shared by the walkers of every thread, so readers that aggregate by function
// (report, profiles, flame graphs) show one row or frame per argument values. Past
// MaxArgKeys distinct values of one function, its other calls are told as one function
// named OtherArgs: pointers in the arguments made nearly every call a row of its own, and
// the readers' memory grew with the calls (3 GB for a 38M-event trace in the gawk trial).
type ArgKeys struct {
	// Name is fn's name with the arguments v ("fib(n=3)"); "" or fn.Name: not split.
	Name  func(fn *symbolize.Func, v *tracefile.Values) string
	mu    sync.Mutex
	m     map[argKey]*symbolize.Func
	per   map[*symbolize.Func]int
	other map[*symbolize.Func]*symbolize.Func
}

// MaxArgKeys is how many distinct argument values of one function ArgKeys splits it by.
const MaxArgKeys = 1000

// OtherArgs is what a function's name is followed by for its calls past MaxArgKeys
// distinct argument values.
const OtherArgs = "(other values)"

type argKey struct {
	fn   *symbolize.Func
	name string
}

// funcOf is the function a call of fn with arguments v is told as.
func (k *ArgKeys) funcOf(fn *symbolize.Func, v *tracefile.Values) *symbolize.Func {
	if fn == nil || fn.Unknown {
		return fn
	}
	name := k.Name(fn, v)
	if name == "" || name == fn.Name {
		return fn
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key := argKey{fn, name}
	if f, ok := k.m[key]; ok {
		return f
	}
	if k.m == nil {
		k.m = map[argKey]*symbolize.Func{}
		k.per = map[*symbolize.Func]int{}
		k.other = map[*symbolize.Func]*symbolize.Func{}
	}
	if k.per[fn] >= MaxArgKeys {
		if f := k.other[fn]; f != nil {
			return f
		}
		name = fn.Name + OtherArgs
		f := *fn
		f.Name = name
		if f.Raw == "" {
			f.Raw = fn.Name
		}
		k.other[fn] = &f
		return &f
	}
	k.per[fn]++
	f := *fn
	f.Name = name
	if f.Raw == "" {
		f.Raw = fn.Name // filters still match the function's own name
	}
	k.m[key] = &f
	return &f
}
