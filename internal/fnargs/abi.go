package fnargs

import (
	"fmt"
	"strings"
)

// Reg is an x86-64 register by its DWARF number (System V psABI, figure 3.36):
// 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 17-32 xmm0-xmm15;
// or an arm64 one, from A64X0 and A64V0 up (aapcs64.go).
type Reg uint8

// The registers the calling convention uses for arguments and return values.
const (
	RAX  Reg = 0
	RDX  Reg = 1
	RCX  Reg = 2
	RSI  Reg = 4
	RDI  Reg = 5
	R8   Reg = 8
	R9   Reg = 9
	XMM0 Reg = 17
)

// IntArgRegs are the integer argument registers in order; XMM0..XMM0+7 the SSE ones.
var IntArgRegs = []Reg{RDI, RSI, RDX, RCX, R8, R9}

var regNames = map[Reg]string{0: "rax", 1: "rdx", 2: "rcx", 3: "rbx", 4: "rsi", 5: "rdi", 6: "rbp", 7: "rsp"}

func (r Reg) String() string {
	switch {
	case r >= A64X0 && r <= A64X0+30:
		return fmt.Sprintf("x%d", r-A64X0)
	case r >= A64V0 && r <= A64V0+31:
		return fmt.Sprintf("d%d", r-A64V0)
	case regNames[r] != "":
		return regNames[r]
	case r >= 8 && r <= 15:
		return fmt.Sprintf("r%d", r)
	case r >= XMM0 && r <= XMM0+15:
		return fmt.Sprintf("xmm%d", r-XMM0)
	}
	return fmt.Sprintf("reg%d", r)
}

// IsSSE reports whether r is an xmm register or an arm64 v register (their low 8 bytes
// are recorded).
func (r Reg) IsSSE() bool { return r >= XMM0 && r <= XMM0+15 || r >= A64V0 && r <= A64V0+31 }

// Loc is one 8-byte word of a value at function entry or exit: a register (for an xmm
// register, its low 8 bytes), or the stack word at Off bytes above the entry %rsp (the
// return address is at 0, the first stack-passed argument at 8).
type Loc struct {
	Stack bool
	Reg   Reg
	Off   int
}

func (l Loc) String() string {
	if l.Stack {
		return fmt.Sprintf("stack+%d", l.Off)
	}
	return "%" + l.Reg.String()
}

// class is the psABI classification of one eightbyte.
type class uint8

const (
	clNone class = iota
	clInt
	clSSE
	clMem
	// clSSEUp: a 16-byte SSE scalar (_Float128) in one xmm register; only its low 8
	// bytes are recorded
	clSSEUp
)

// isLongDouble tells the x87 80-bit long double from _Float128 (both 16-byte floats).
func isLongDouble(t *Type) bool {
	return strings.Contains(t.Name, "long double")
}

// x87 reports whether a return value of t comes back in the x87 stack, which is not
// recorded.
func x87(t *Type) bool {
	return isLongDouble(t) && (t.Kind == KFloat && t.Size == 16 || t.Kind == KComplex && t.Size == 32)
}

// maxStackWords bounds what is recorded of a value passed in memory: larger ones are
// printed as far as recorded.
const maxStackWords = 4

// classify returns the classes of t's eightbytes, or nil when t is passed in memory.
func classify(t *Type) []class {
	switch t.Kind {
	case KVoid:
		return []class{}
	case KStruct:
		if t.ByRef {
			return nil
		}
		if t.Size > 16 || t.Size == 0 {
			return nil
		}
		cls := make([]class, (t.Size+7)/8)
		if len(t.Fields) == 0 {
			// members unknown: gcc describes a transparent union (glibc's
			// __SOCKADDR_ARG) without them; it is passed as its first member, a
			// pointer
			for i := range cls {
				cls[i] = clInt
			}
			return cls
		}
		if !mergeFields(t, 0, cls) {
			return nil
		}
		// trailing padding-only eightbytes (an over-aligned struct) take no register
		for len(cls) > 0 && cls[len(cls)-1] == clNone {
			cls = cls[:len(cls)-1]
		}
		for _, c := range cls {
			if c == clMem || c == clNone {
				return nil
			}
		}
		return cls
	case KFloat:
		switch {
		case t.Size <= 8:
			return []class{clSSE}
		case t.Size == 16 && !isLongDouble(t):
			return []class{clSSEUp} // _Float128: one whole xmm register
		}
		return nil // long double (x87 class): memory, returned in %st0
	case KComplex:
		if t.Size > 16 {
			return nil // complex long double: memory, returned in %st0/%st1
		}
		cls := make([]class, (t.Size+7)/8)
		for i := range cls {
			cls[i] = clSSE
		}
		return cls
	case KUnknown:
		return nil
	}
	if t.Size > 8 {
		if t.Size == 16 { // __int128
			return []class{clInt, clInt}
		}
		return nil
	}
	return []class{clInt}
}

// leaves calls visit for each scalar of t, struct members and array elements flattened,
// at its byte offset (from base); a bit-field is visited with its field. false as soon
// as visit says false, or for a member of unknown type or a class passed by reference.
func leaves(t *Type, base int, visit func(bf *Field, t *Type, off int) bool) bool {
	switch t.Kind {
	case KStruct:
		if t.ByRef {
			return false
		}
		for i := range t.Fields {
			f := &t.Fields[i]
			if f.Type == nil {
				return false
			}
			if f.BitSize > 0 {
				if !visit(f, f.Type, base+f.Off) {
					return false
				}
			} else if !leaves(f.Type, base+f.Off, visit) {
				return false
			}
		}
		return true
	case KArray:
		if t.Elem == nil {
			return false
		}
		for i := 0; i < t.Count; i++ {
			if !leaves(t.Elem, base+i*t.Elem.Size, visit) {
				return false
			}
		}
		return true
	}
	return visit(nil, t, base)
}

// mergeFields folds the classes of t's scalars at base into cls (psABI 3.2.3 rule 4);
// false when a member is unaligned or of a kind passed in memory.
func mergeFields(t *Type, base int, cls []class) bool {
	return leaves(t, base, func(bf *Field, t *Type, base int) bool {
		if bf != nil { // bit-fields are integers
			first := (base*8 + bf.BitOff) / 64
			last := (base*8 + bf.BitOff + bf.BitSize - 1) / 64
			for i := first; i <= last; i++ {
				if i >= len(cls) {
					return false
				}
				cls[i] = merge(cls[i], clInt)
			}
			return true
		}
		return mergeScalar(t, base, cls)
	})
}

// mergeScalar folds the classes of scalar t at base into cls.
func mergeScalar(t *Type, base int, cls []class) bool {
	sub := classify(t)
	if sub == nil || len(sub) == 1 && sub[0] == clSSEUp {
		return false // memory; a _Float128 member is not modelled (taken as memory too)
	}
	align := t.Size
	if t.Kind == KComplex {
		align = t.Size / 2
	}
	if align > 8 {
		align = 8
	}
	if align > 0 && base%align != 0 {
		return false
	}
	for i, c := range sub {
		// a scalar of under 8 bytes lies in one eightbyte; a 16-byte one spans two
		idx := (base + i*8) / 8
		if idx >= len(cls) {
			return false
		}
		cls[idx] = merge(cls[idx], c)
	}
	return true
}

func merge(a, b class) class {
	switch {
	case a == b:
		return a
	case a == clNone:
		return b
	case b == clNone:
		return a
	case a == clMem || b == clMem:
		return clMem
	case a == clInt || b == clInt:
		return clInt
	}
	return clSSE
}

func alignOf(t *Type) int {
	switch t.Kind {
	case KStruct:
		a := 1
		for _, f := range t.Fields {
			if f.Type != nil {
				if fa := alignOf(f.Type); fa > a {
					a = fa
				}
			}
		}
		return a
	case KArray:
		if t.Elem != nil {
			return alignOf(t.Elem)
		}
		return 1
	case KComplex:
		return t.Size / 2
	}
	if t.Size >= 16 {
		return 16
	}
	if t.Size < 1 {
		return 1
	}
	return t.Size
}

// assign computes the entry locations of params and the exit location of ret for a
// System V x86-64 call (psABI 3.2.3). ret may be nil (void).
func assign(params []*Arg, ret *Arg) {
	nInt, nSSE, stack := 0, 0, 8
	if ret != nil {
		cls := classify(ret.Type)
		switch {
		case x87(ret.Type):
			// in %st0 (and %st1): not recorded, printed as "?"
		case cls == nil:
			// returned in memory: the caller passes the buffer's address in %rdi,
			// and %rax holds it at exit
			nInt = 1
			ret.Indirect = true
			ret.Parts = []Loc{{Reg: RAX}}
		default:
			ri, rs := []Reg{RAX, RDX}, []Reg{XMM0, XMM0 + 1}
			for _, c := range cls {
				if c == clSSEUp {
					ret.Parts = append(ret.Parts, Loc{Reg: XMM0})
					continue
				}
				if c == clInt {
					ret.Parts = append(ret.Parts, Loc{Reg: ri[0]})
					ri = ri[1:]
				} else {
					ret.Parts = append(ret.Parts, Loc{Reg: rs[0]})
					rs = rs[1:]
				}
			}
		}
	}
	for _, a := range params {
		cls := classify(a.Type)
		if a.Type.Kind == KStruct && a.Type.ByRef {
			// hidden reference to a caller-made copy
			a.Indirect = true
			cls = []class{clInt}
		}
		needInt, needSSE := 0, 0
		for _, c := range cls {
			if c == clInt {
				needInt++
			} else {
				needSSE++
			}
		}
		if cls != nil && nInt+needInt <= len(IntArgRegs) && nSSE+needSSE <= 8 {
			for _, c := range cls {
				if c == clInt {
					a.Parts = append(a.Parts, Loc{Reg: IntArgRegs[nInt]})
					nInt++
				} else {
					a.Parts = append(a.Parts, Loc{Reg: XMM0 + Reg(nSSE)})
					nSSE++
				}
			}
			continue
		}
		// on the stack, each argument on an eightbyte boundary (16 for 16-aligned
		// types; the area starts 16-aligned at entry %rsp + 8)
		if alignOf(a.Type) >= 16 && (stack-8)%16 != 0 {
			stack += 8
		}
		words := (a.Type.Size + 7) / 8
		if words == 0 {
			words = 1
		}
		for i := 0; i < words && i < maxStackWords; i++ {
			a.Parts = append(a.Parts, Loc{Stack: true, Off: stack + 8*i})
		}
		stack += 8 * words
	}
}
