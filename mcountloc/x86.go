package mcountloc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Endbr64 is the encoding of the endbr64 instruction (f3 0f 1e fa) that gcc's
// -fcf-protection puts before the call site. x86asm cannot decode it.
var Endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// HasEndbr64 reports whether code starts with endbr64.
func HasEndbr64(code []byte) bool {
	return len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa
}

// X86Nop5 and X86Nop6 are the nops ftlink writes over 5- and 6-byte call sites.
var (
	X86Nop5 = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}
	X86Nop6 = []byte{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}
)

// X86Nop returns the nop of length n (5 or 6) or nil.
func X86Nop(n int) []byte {
	switch n {
	case 5:
		return X86Nop5
	case 6:
		return X86Nop6
	}
	return nil
}

// ErrNotCall is returned (wrapped) by DecodeX86Site when the bytes are not one of the
// recognised call forms.
var ErrNotCall = errors.New("not an e8/ff15/67e8 call")

// DecodeX86Site decodes the x86-64 call instruction at the start of code and returns its
// form and length: e8 rel32 (5 bytes), ff 15 rel32 (6, call through a RIP-relative slot) or
// 67 e8 rel32 (6, the form GNU ld relaxes a GOT call into). The bytes are checked both by
// pattern and with x86asm, so a prefix or a different ModRM byte is refused. code must start
// at the call itself (skip a preceding endbr64 with HasEndbr64 first).
func DecodeX86Site(code []byte) (Kind, int, error) {
	var want Kind
	switch {
	case len(code) >= 5 && code[0] == 0xe8:
		want = KindCallRel
	case len(code) >= 6 && code[0] == 0xff && code[1] == 0x15:
		want = KindCallGOT
	case len(code) >= 6 && code[0] == 0x67 && code[1] == 0xe8:
		want = KindCallAddr
	default:
		return KindNone, 0, fmt.Errorf("bytes % x: %w", head(code, 6), ErrNotCall)
	}
	n := want.Len()
	inst, err := x86asm.Decode(code[:n], 64)
	if err != nil {
		return KindNone, 0, fmt.Errorf("bytes % x: %v: %w", code[:n], err, ErrNotCall)
	}
	if inst.Op != x86asm.CALL || inst.Len != n {
		return KindNone, 0, fmt.Errorf("bytes % x decode as %v: %w", code[:n], inst, ErrNotCall)
	}
	switch want {
	case KindCallRel, KindCallAddr:
		if _, ok := inst.Args[0].(x86asm.Rel); !ok {
			return KindNone, 0, fmt.Errorf("bytes % x decode as %v: %w", code[:n], inst, ErrNotCall)
		}
	case KindCallGOT:
		m, ok := inst.Args[0].(x86asm.Mem)
		if !ok || m.Base != x86asm.RIP || m.Index != 0 || m.Segment != 0 {
			return KindNone, 0, fmt.Errorf("bytes % x decode as %v: %w", code[:n], inst, ErrNotCall)
		}
	}
	return want, n, nil
}

// X86SiteDisp returns the rel32 displacement of a decoded call of form k at code.
func X86SiteDisp(code []byte, k Kind) int32 {
	n := k.Len()
	return int32(binary.LittleEndian.Uint32(code[n-4 : n]))
}

// X86SiteTarget decodes the call at code, located at address addr, and returns its form,
// length and the address it refers to: the callee for e8 and 67 e8, the memory slot (GOT
// entry) the callee's address is loaded from for ff 15.
func X86SiteTarget(addr uint64, code []byte) (k Kind, n int, target uint64, err error) {
	k, n, err = DecodeX86Site(code)
	if err != nil {
		return KindNone, 0, 0, err
	}
	return k, n, addr + uint64(n) + uint64(int64(X86SiteDisp(code, k))), nil
}

// X86IsNopSite reports whether code starts with the ftkit nop of length n.
func X86IsNopSite(code []byte, n int) bool {
	nop := X86Nop(n)
	if nop == nil || len(code) < n {
		return false
	}
	for i := range nop {
		if code[i] != nop[i] {
			return false
		}
	}
	return true
}

func head(b []byte, n int) []byte {
	if len(b) < n {
		return b
	}
	return b[:n]
}

// X86NopLen returns the length of the nop instruction (any encoding x86asm decodes as NOP:
// 0x90, 66 90, 0f 1f /0 with prefixes) at the start of code, or 0.
func X86NopLen(code []byte) int { return x86NopLen(code, 64) }

func x86NopLen(code []byte, mode int) int {
	if len(code) == 0 {
		return 0
	}
	if code[0] == 0x90 {
		return 1
	}
	inst, err := x86asm.Decode(code, mode)
	if err != nil || inst.Op != x86asm.NOP {
		return 0
	}
	return inst.Len
}

// X86BranchTargets decodes code (at address base) from its start and calls fn with the
// target of every relative jump or call. It stops at the first byte it cannot decode.
func X86BranchTargets(code []byte, base uint64, fn func(uint64)) {
	x86BranchTargets(code, base, 64, fn)
}

func x86BranchTargets(code []byte, base uint64, mode int, fn func(uint64)) {
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], mode)
		if err != nil || inst.Len == 0 {
			return
		}
		for _, a := range inst.Args {
			if rel, ok := a.(x86asm.Rel); ok {
				fn(base + uint64(off+inst.Len) + uint64(int64(rel)))
			}
		}
		off += inst.Len
	}
}
