package report

import (
	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
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
	obs, threads, err := calltree.WalkStreamArgs(st, lookup, o.TIDs, func(th *tracefile.Thread) calltree.Observer { return o.wrap(newAgg(th.TID)) }, o.Progress, o.Args)
	if err != nil {
		return nil, nil, err
	}
	done := make([]*agg, len(obs))
	for k := range obs {
		done[k] = calltree.Unwrap(obs[k]).(*agg)
	}
	f := calltree.ForestOf(st.Trace, threads)
	return finish(done, o, less), f, nil
}
