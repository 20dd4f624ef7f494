package calltree

import "github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"

// Builder is an Observer (and Enterer) that makes call trees again from what it is told:
// Thread.Frames through a read-time filter into a Builder gives the filtered tree (the
// filter's tests compare it with their expectations).
type Builder struct {
	Roots []*Node
	Calls []Call
	Nodes int
	stack []*Node
}

// Enter begins a call below the current one.
func (b *Builder) Enter(fn *symbolize.Func, _ int, start uint64) {
	n := &Node{Func: fn, Start: start, Depth: len(b.stack)}
	if len(b.stack) > 0 {
		p := b.stack[len(b.stack)-1]
		n.Parent = p
		p.Children = append(p.Children, n)
	} else {
		b.Roots = append(b.Roots, n)
	}
	b.Nodes++
	b.stack = append(b.stack, n)
}

// Close ends the current call. Adopt frames are not expected (a Builder is fed by
// Thread.Frames).
func (b *Builder) Close(f *Frame) {
	if len(b.stack) == 0 {
		return
	}
	n := b.stack[len(b.stack)-1]
	b.stack = b.stack[:len(b.stack)-1]
	n.IP, n.End, n.Partial, n.Unwound = f.IP, f.End, f.Partial, f.Unwound
}

// Call keeps a function-tracer call.
func (b *Builder) Call(c *Call, _ int) { b.Calls = append(b.Calls, *c) }
