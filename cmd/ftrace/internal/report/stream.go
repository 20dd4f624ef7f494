package report

import (
	"errors"
	"runtime"
	"sync"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// ComputeStream computes what Compute does, reading the trace as a stream: memory grows
// with the functions, threads and call depth, not with the events. Threads are read in
// parallel (each one decoded and followed on two goroutines). lookup must be safe for
// concurrent use. The returned Forest has the threads' counts but no trees.
func ComputeStream(st *tracefile.Stream, lookup calltree.Lookup, o Options) ([]*Stat, *calltree.Forest, error) {
	less, err := lessFunc(o.Sort)
	if err != nil {
		return nil, nil, err
	}
	tr := st.Trace
	f := &calltree.Forest{Header: tr.Header, Start: tr.Header.StartNS}
	for _, m := range tr.Maps {
		if m.Flags&tracefile.MapMain != 0 {
			f.Main = m.Path
			break
		}
	}
	var todo []int
	for i, th := range tr.Threads {
		if selected(th.TID, o.TIDs) {
			todo = append(todo, i)
		}
	}
	var total uint64
	for _, i := range todo {
		total += st.Hint(i)
	}
	prog := newProgress(o.Progress, total)
	aggs := make([]*agg, len(tr.Threads))
	threads := make([]*calltree.Thread, len(tr.Threads))
	errs := make([]error, len(tr.Threads))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				aggs[i], threads[i], errs[i] = streamThread(st, i, lookup, prog)
			}
		}()
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	prog.end()
	var done []*agg
	for _, i := range todo {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		done = append(done, aggs[i])
		f.Threads = append(f.Threads, threads[i])
		if t := threads[i]; t.Events > 0 && (f.Start == 0 || t.First < f.Start) {
			f.Start = t.First
		}
	}
	f.Header = tr.Header // decoding may have added warnings
	return finish(done, o, less), f, nil
}

// batchEvents is the size of the batches passed from the decoding goroutine.
const batchEvents = 8192

// streamThread follows thread i: one goroutine decodes, this one walks. A stream the
// walker cannot follow alone is read again into memory and built as a tree.
func streamThread(st *tracefile.Stream, i int, lookup calltree.Lookup, prog *progress) (*agg, *calltree.Thread, error) {
	th := st.Trace.Threads[i]
	a := newAgg(th.TID)
	w := calltree.NewWalker(th, lookup, a)
	full := make(chan []tracefile.Event, 4)
	free := make(chan []tracefile.Event, 4)
	for k := 0; k < cap(free); k++ {
		free <- make([]tracefile.Event, 0, batchEvents)
	}
	stop := make(chan struct{})
	errStopped := errors.New("stopped")
	var decErr error
	go func() {
		defer close(full)
		var cur []tracefile.Event
		send := func() bool {
			select {
			case full <- cur:
				cur = nil
				return true
			case <-stop:
				return false
			}
		}
		decErr = st.Events(i, func(evs []tracefile.Event) error {
			for len(evs) > 0 {
				if cur == nil {
					select {
					case cur = <-free:
						cur = cur[:0]
					case <-stop:
						return errStopped
					}
				}
				n := copy(cur[len(cur):cap(cur)], evs)
				cur, evs = cur[:len(cur)+n], evs[n:]
				if len(cur) == cap(cur) && !send() {
					return errStopped
				}
			}
			return nil
		})
		if decErr == nil && len(cur) > 0 {
			send()
		}
	}()
	var walkErr error
	for b := range full {
		if walkErr == nil {
			walkErr = w.Events(b)
			if walkErr != nil {
				close(stop)
			}
			prog.add(len(b))
		}
		free <- b
	}
	if walkErr == nil && decErr != nil {
		return nil, nil, decErr
	}
	if walkErr != nil && !errors.Is(walkErr, calltree.ErrNeedTree) {
		return nil, nil, walkErr
	}
	var t *calltree.Thread
	if walkErr != nil {
		// the rare stream that needs its tree: read it again, whole
		var evs []tracefile.Event
		if err := st.Events(i, func(b []tracefile.Event) error {
			evs = append(evs, b...)
			return nil
		}); err != nil {
			return nil, nil, err
		}
		whole := *th
		whole.Events = evs
		t = calltree.BuildThread(&whole, lookup)
		a = newAgg(th.TID)
		t.Frames(a)
		t.Roots, t.Calls = nil, nil
	} else {
		w.End()
		t = &w.T
	}
	t.Lost, t.LostDepth = th.Lost, th.LostDepth
	return a, t, nil
}

// LockedLookup makes a Symbolizer's Lookup safe for concurrent use.
func LockedLookup(s *symbolize.Symbolizer) calltree.Lookup {
	var mu sync.Mutex
	return func(addr uint64) *symbolize.Func {
		mu.Lock()
		defer mu.Unlock()
		return s.Lookup(addr)
	}
}

// progress counts the events read by all threads' walkers for an Options.Progress.
type progress struct {
	mu          sync.Mutex
	fn          calltree.Progress
	done, total int
}

func newProgress(fn calltree.Progress, total uint64) *progress {
	return &progress{fn: fn, total: int(total)}
}

func (p *progress) add(n int) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	p.done += n
	if p.done < p.total {
		p.fn(p.done, p.total)
	}
	p.mu.Unlock()
}

// end says all is read (the announced total may differ a little from the events read).
func (p *progress) end() {
	if p.fn != nil {
		p.fn(p.total, p.total)
	}
}
