package calltree

import (
	"fmt"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
)

// A return address's function is the one holding the byte before it; where no symbol
// holds that byte the caller is named by the return address itself (an arm64 caller
// showed as an odd address), but never by a function the return address begins.
func TestCallerOf(t *testing.T) {
	f := &symbolize.Func{Name: "f", Addr: 0x1000}
	lookup := func(a uint64) *symbolize.Func {
		if a >= 0x1000 && a < 0x2000 {
			return f
		}
		return &symbolize.Func{Name: fmt.Sprintf("0x%x", a), Addr: a, Unknown: true}
	}
	for _, c := range []struct {
		parent uint64
		want   string
	}{
		{0x1234, "f"},
		{0x2000, "f"},      // a noreturn call ending f
		{0x3004, "0x3004"}, // no symbol: the return address, not 0x3003
		{0x1000, "0xfff"},  // no symbol before f: not f, which the address begins
	} {
		if got := callerOf(lookup, c.parent); got.Name != c.want {
			t.Errorf("%#x: %s, want %s", c.parent, got.Name, c.want)
		}
	}
}
