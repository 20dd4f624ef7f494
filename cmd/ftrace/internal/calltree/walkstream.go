package calltree

import (
	"errors"
	"runtime"
	"slices"
	"sync"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// WalkStream follows the threads of st whose ids are in tids (all when empty), in
// parallel, each with a Walker telling the Observer newObs makes for it. It returns the
// observers and the threads' counts, in thread order; progress (may be nil) is told how
// many events were read.
func WalkStream(st *tracefile.Stream, lookup Lookup, tids []int, newObs func(*tracefile.Thread) Observer, progress Progress) ([]Observer, []*Thread, error) {
	return WalkStreamArgs(st, lookup, tids, newObs, progress, nil)
}

// WalkStreamArgs is WalkStream telling the calls with recorded arguments as functions of
// their own per distinct values (args; nil: as WalkStream); with args it sets st.Values.
func WalkStreamArgs(st *tracefile.Stream, lookup Lookup, tids []int, newObs func(*tracefile.Thread) Observer, progress Progress, args *ArgKeys) ([]Observer, []*Thread, error) {
	if args != nil {
		st.Values = true
	}
	tr := st.Trace
	var todo []int
	for i, th := range tr.Threads {
		if len(tids) == 0 || slices.Contains(tids, th.TID) {
			todo = append(todo, i)
		}
	}
	var total uint64
	for _, i := range todo {
		total += st.Hint(i)
	}
	prog := newProgress(progress, total)
	obs := make([]Observer, len(tr.Threads))
	threads := make([]*Thread, len(tr.Threads))
	errs := make([]error, len(tr.Threads))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				obs[i], threads[i], errs[i] = walkThread(st, i, lookup, newObs, prog, args)
			}
		}()
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
	prog.end()
	var outObs []Observer
	var outThreads []*Thread
	for _, i := range todo {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		outObs = append(outObs, obs[i])
		outThreads = append(outThreads, threads[i])
	}
	return outObs, outThreads, nil
}

// batchEvents is the size of the batches passed from the decoding goroutine.
const batchEvents = 8192

// walkThread follows thread i: one goroutine decodes, this one walks. A stream the
// walker cannot follow alone is read again into memory and built as a tree.
func walkThread(st *tracefile.Stream, i int, lookup Lookup, newObs func(*tracefile.Thread) Observer, prog *progress, args *ArgKeys) (Observer, *Thread, error) {
	th := st.Trace.Threads[i]
	a := newObs(th)
	w := NewWalker(th, lookup, a)
	w.Text = st.MarkerText
	if args != nil {
		w.Vals, w.Args = st.TakeValues, args
	}
	full := make(chan []tracefile.Event, 4)
	free := make(chan []tracefile.Event, 4)
	// batches no larger than the thread's events (its chunks say how many, about: a
	// batch fills and goes as it would): a thousand short traces read together made 1 MB
	// of batches each
	size := min(max(int(min(st.Hint(i), batchEvents))+16, 64), batchEvents)
	for k := 0; k < cap(free); k++ {
		free <- make([]tracefile.Event, 0, size)
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
	if walkErr != nil && !errors.Is(walkErr, ErrNeedTree) {
		return nil, nil, walkErr
	}
	var t *Thread
	if walkErr != nil {
		// the rare stream that needs its tree: read it again, whole
		var err error
		if t, err = ReadThread(st, i, lookup); err != nil {
			return nil, nil, err
		}
		a = newObs(th)
		t.Frames(a)
		t.Tree = true
		for _, r := range t.Roots {
			t.RootTime += r.Duration()
		}
		t.Roots, t.Calls = nil, nil
	} else {
		w.End()
		// a copy: the forest keeps the thread, not the walker it is part of (its
		// function tables: 100 KB a trace kept until the last of a thousand was read)
		tc := w.T
		t = &tc
	}
	t.Lost, t.LostDepth = th.Lost, th.LostDepth
	t.Events += th.Skipped // the events of blocks outside --since/--until count too
	return a, t, nil
}

// progress counts the events read by all threads' walkers for an Options.Progress.
type progress struct {
	mu          sync.Mutex
	fn          Progress
	done, total int
}

func newProgress(fn Progress, total uint64) *progress {
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

// ForestOf is the Forest of a trace's threads (built, or counted by a streaming walk):
// its header, the executable, and the earliest time of the trace.
func ForestOf(tr *tracefile.Trace, threads []*Thread) *Forest {
	f := &Forest{Header: tr.Header, Start: tr.Header.StartNS, Threads: threads}
	for _, m := range tr.Maps {
		if m.Flags&tracefile.MapMain != 0 {
			f.Main = m.Path
			break
		}
	}
	for _, t := range threads {
		if t.Events > 0 && (f.Start == 0 || t.FirstEvent < f.Start) {
			f.Start = t.FirstEvent
		}
	}
	return f
}
