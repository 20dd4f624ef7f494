package elfsym

import (
	"debug/elf"
	"testing"
)

func TestBetter(t *testing.T) {
	sym := func(name string, size uint64, bind elf.SymBind) elf.Symbol {
		return elf.Symbol{Name: name, Size: size, Info: elf.ST_INFO(bind, elf.STT_FUNC)}
	}
	for _, c := range []struct {
		s, b elf.Symbol
		want bool
	}{
		{sym("f", 8, elf.STB_LOCAL), sym("g", 0, elf.STB_GLOBAL), true},           // sized first
		{sym("f", 8, elf.STB_WEAK), sym("g", 8, elf.STB_LOCAL), true},             // then global or weak
		{sym("f", 8, elf.STB_LOCAL), sym("f.localalias", 8, elf.STB_LOCAL), true}, // then no suffix
		{sym("fold_a", 8, elf.STB_LOCAL), sym("fold_b", 8, elf.STB_LOCAL), true},  // then the first name
		{sym("fold_b", 8, elf.STB_LOCAL), sym("fold_a", 8, elf.STB_LOCAL), false},
		{sym("scale", 8, elf.STB_GLOBAL), sym("scale", 8, elf.STB_GLOBAL), false}, // not better than itself
		{sym("f.cold", 8, elf.STB_GLOBAL), sym("g", 8, elf.STB_LOCAL), true},      // bind outranks suffix
	} {
		if got := Better(c.s, c.b); got != c.want {
			t.Errorf("Better(%s %d %v, %s %d %v) = %v, want %v", c.s.Name, c.s.Size, elf.ST_BIND(c.s.Info),
				c.b.Name, c.b.Size, elf.ST_BIND(c.b.Info), got, c.want)
		}
	}
}
