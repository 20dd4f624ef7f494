package mcountloc

import (
	"debug/elf"
	"math/rand"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
)

// funcAtScan is the definition funcIndex must agree with: one scan of the symbol table.
func funcAtScan(syms []elfrw.Symbol, sec int, off uint64) string {
	best, bestFunc := "", false
	for _, s := range syms {
		if int(s.Shndx) != sec || s.Shndx >= uint32(elf.SHN_LORESERVE) || s.Name == "" {
			continue
		}
		t := s.Type()
		if t != elf.STT_FUNC && t != elf.STT_NOTYPE && t != elf.STT_GNU_IFUNC {
			continue
		}
		if s.Value <= off && (off < s.Value+s.Size || (s.Size == 0 && s.Value == off)) {
			isFunc := t == elf.STT_FUNC
			if best == "" || (isFunc && !bestFunc) {
				best, bestFunc = s.Name, isFunc
			}
		}
	}
	return best
}

// TestFuncIndex checks the index against the scan on random tables with aliases,
// zero-sized labels, nested and overlapping symbols, objects and absolute symbols.
func TestFuncIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	types := []elf.SymType{elf.STT_FUNC, elf.STT_NOTYPE, elf.STT_GNU_IFUNC, elf.STT_OBJECT, elf.STT_SECTION}
	for round := 0; round < 300; round++ {
		var syms []elfrw.Symbol
		for i := 0; i < 1+rng.Intn(60); i++ {
			s := elfrw.Symbol{
				Name:  string(rune('a'+rng.Intn(26))) + string(rune('a'+rng.Intn(26))),
				Value: uint64(rng.Intn(200)),
				Size:  uint64(rng.Intn(4) * rng.Intn(40)),
				Shndx: uint32(1 + rng.Intn(3)),
				Info:  elf.ST_INFO(elf.STB_GLOBAL, types[rng.Intn(len(types))]),
			}
			switch rng.Intn(20) {
			case 0:
				s.Name = ""
			case 1:
				s.Shndx = uint32(elf.SHN_ABS)
			case 2:
				s.Size = 1000 // spans everything after it
			}
			syms = append(syms, s)
		}
		idx := newFuncIndex(syms)
		for sec := 0; sec <= 4; sec++ {
			for off := uint64(0); off < 260; off++ {
				if got, want := idx.at(sec, off), funcAtScan(syms, sec, off); got != want {
					t.Fatalf("round %d: section %d offset %d: %q, want %q (symbols %+v)", round, sec, off, got, want, syms)
				}
			}
		}
	}
}
