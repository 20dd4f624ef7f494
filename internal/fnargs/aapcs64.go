package fnargs

// The arm64 calling convention (AAPCS64, "Procedure Call Standard for the Arm 64-bit
// Architecture", 6.8.2 parameter passing, 6.9 result return), as GNU/Linux uses it.

// arm64 registers: x0-x30 and the low 8 bytes of v0-v31 (written d0-d31 in specs, as the
// runtime's arm64 recorder names them), numbered apart from the x86-64 ones.
const (
	A64X0 Reg = 128
	A64V0 Reg = 160
)

// a64Reg maps an AAPCS64 DWARF register number (0-30 x, 64-95 v) to a Reg; false for
// the others (sp, pc, ...).
func a64Reg(n uint64) (Reg, bool) {
	switch {
	case n <= 30:
		return A64X0 + Reg(n), true
	case n >= 64 && n <= 95:
		return A64V0 + Reg(n-64), true
	}
	return 0, false
}

// hfa returns the size of the members and their number when t is a floating-point
// value or a homogeneous floating-point aggregate (one to four members of one
// floating type, nested structs and arrays flattened): the values passed in v
// registers, one member each. 0, 0 otherwise.
func hfa(t *Type) (size, n int) {
	var float func(t *Type, off int) bool
	float = func(t *Type, off int) bool {
		switch {
		case t.Kind == KComplex:
			half := &Type{Kind: KFloat, Size: t.Size / 2}
			return float(half, off) && float(half, off+half.Size)
		case t.Kind != KFloat || size != 0 && size != t.Size:
			return false
		}
		size = t.Size
		n++
		// one after the other: overlapping ones are a union's
		return n <= 4 && off == (n-1)*size
	}
	ok := leaves(t, 0, func(bf *Field, t *Type, off int) bool { return bf == nil && float(t, off) })
	if !ok || n == 0 || size*n != t.Size {
		return 0, 0
	}
	return size, n
}

// vParts sets where a floating value or HFA of n members of size bytes is recorded
// from: v registers first.., one word per member. A single member is in its register's
// low bytes (a float's 4, a quad's low 8); the members of an aggregate of floats or
// halves each sit in the low bytes of a register of their own, so each word holds size
// bytes of the value (PartSize). An aggregate of quads is not recorded (only 8 bytes of
// each register are), printed as "?".
func vParts(a *Arg, size, n, first int) {
	if n != 1 && size > 8 {
		return
	}
	if n != 1 && size < 8 {
		a.PartSize = size
	}
	a.Parts = make([]Loc, n)
	for i := range a.Parts {
		a.Parts[i] = Loc{Reg: A64V0 + Reg(first+i)}
	}
}

// assignAAPCS64 computes the entry locations of params and the exit location of ret for
// an AAPCS64 call. ret may be nil (void). Stack words are numbered as on x86-64 (Off 8 is
// the first stack-passed word, here at the entry sp itself).
func assignAAPCS64(params []*Arg, ret *Arg) {
	if ret != nil {
		t := ret.Type
		switch size, n := hfa(t); {
		case t.Kind == KUnknown:
		case t.Kind == KStruct && t.ByRef || n == 0 && t.Size > 16:
			// returned in memory (a C++ class that is not trivially copyable at any
			// size, floats or not) at the address the caller passed in x8, which the
			// callee need not keep: the runtime reads the x8 of the entry
			ret.Indirect = true
			ret.Parts = []Loc{{Reg: A64X0 + 8}}
		case n > 0:
			vParts(ret, size, n, 0)
		default:
			for i := 0; i < (t.Size+7)/8; i++ {
				ret.Parts = append(ret.Parts, Loc{Reg: A64X0 + Reg(i)})
			}
		}
	}
	ngrn, nsrn, stack := 0, 0, 8
	for _, a := range params {
		t := a.Type
		words, align := (t.Size+7)/8, alignOf(t)
		size, n := hfa(t)
		switch {
		case t.Kind == KUnknown:
			continue
		case t.Kind == KStruct && t.ByRef || (t.Kind == KStruct || t.Kind == KArray) && n == 0 && t.Size > 16:
			// a C++ class by invisible reference, or a large composite: the
			// address of a copy the caller made
			a.Indirect = true
			words, align = 1, 8
		case n > 0:
			if nsrn+n <= 8 {
				vParts(a, size, n, nsrn)
				nsrn += n
				continue
			}
			nsrn = 8 // the rest of the floats go on the stack too
			if align < 8 {
				align = 8
			}
			if words == 0 {
				words = 1
			}
			stack = stackParts(a, stack, words, align)
			continue
		}
		if words == 0 {
			words = 1
		}
		if align >= 16 && words == 2 && ngrn%2 == 1 {
			ngrn++ // a 16-byte aligned value starts at an even register
		}
		if ngrn+words <= 8 {
			for i := 0; i < words; i++ {
				a.Parts = append(a.Parts, Loc{Reg: A64X0 + Reg(ngrn+i)})
			}
			ngrn += words
			continue
		}
		ngrn = 8 // never split between registers and stack
		stack = stackParts(a, stack, words, align)
	}
}

// stackParts gives a the stack words of a value of words words aligned to align, at the
// next stack word (8-byte slots, 16 for 16-aligned values; Off 8 is the entry sp), and
// returns the next free one.
func stackParts(a *Arg, stack, words, align int) int {
	if align >= 16 && (stack-8)%16 != 0 {
		stack += 8
	}
	for i := 0; i < words && i < maxStackWords; i++ {
		a.Parts = append(a.Parts, Loc{Stack: true, Off: stack + 8*i})
	}
	return stack + 8*words
}
