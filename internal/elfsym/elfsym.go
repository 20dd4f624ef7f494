// Package elfsym holds the rule that picks, of the symbols sharing one address (aliases,
// functions gcc's identical code folding made one), the name the function is known by.
// It is the runtime's (runtime/src/core/ftrace_elf.c: sym_rank and sym_cmp), so that the
// readers, the argument planner and the traced program name a function alike.
package elfsym

import (
	"debug/elf"
	"strings"
)

// Rank orders the symbols at one address: a sized one first, then a global or weak one,
// then one without a compiler's suffix ("f.localalias", "f.cold").
func Rank(s elf.Symbol) int {
	r := 0
	if s.Size > 0 {
		r += 4
	}
	if elf.ST_BIND(s.Info) != elf.STB_LOCAL {
		r += 2
	}
	if !strings.Contains(s.Name, ".") {
		r++
	}
	return r
}

// Better reports whether s rather than b names their address: the higher Rank, then the
// first name in byte order.
func Better(s, b elf.Symbol) bool {
	r, q := Rank(s), Rank(b)
	return r > q || r == q && s.Name < b.Name
}
