package mcountloc

// ppc64le rules (ELFv2). gcc -pg -mprofile-kernel (the kernel's ppc64le ftrace) calls
// _mcount at the local entry point, before the prologue: `mflr r0; bl _mcount`
// (R_PPC64_REL24), after the global entry point's TOC set-up (addis r2, r12; addi r2, r2)
// when the function has one. That call is recorded (KindBL); ftlink writes a nop over it
// (the mflr stays, harmless). gcc -pg without -mprofile-kernel calls _mcount after the
// frame is built: refused. gcc 12's -fpatchable-function-entry puts the nops before the
// global entry point's TOC set-up, so a call through the local entry point, the usual one,
// skips them: such areas are reported, not recorded; functions without a TOC set-up
// (one entry point) are recorded.

import (
	"encoding/binary"
	"fmt"
)

const (
	ppcMflrR0 uint32 = 0x7c0802a6
	ppcNop    uint32 = 0x60000000
)

// PPCNop is the nop ftlink writes over a `bl _mcount` site.
var PPCNop = []byte{0x00, 0x00, 0x00, 0x60}

// ErrMcountPPC is ErrMcountSite with the ppc64le advice.
var ErrMcountPPC error = &mcountErr{"call to _mcount after the function's prologue: compiled with gcc -pg without " +
	"-mprofile-kernel, so ftkit does not record it: recompile with -pg -mprofile-kernel (mflr r0; bl _mcount at the " +
	"local entry point)"}

func ppcWord(b []byte) (uint32, bool) {
	if len(b) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// isTOCSetup reports whether code starts with the global entry point's TOC set-up:
// addis r2, r12, hi; addi r2, r2, lo.
func isTOCSetup(code []byte) bool {
	w1, ok1 := ppcWord(code)
	w2, ok2 := ppcWord(head(code[min(4, len(code)):], 4))
	return ok1 && ok2 && w1>>16 == 0x3c4c && w2>>16 == 0x3842
}

// DecodePPCSite checks that code starts with `bl` (opcode 18, AA = 0, LK = 1).
func DecodePPCSite(code []byte) (Kind, int, error) {
	w, ok := ppcWord(code)
	if !ok || w&0xfc000003 != 0x48000001 {
		return KindNone, 0, fmt.Errorf("bytes % x: %w", head(code, 4), errNotBL)
	}
	return KindBL, 4, nil
}

// PPCCheckEntry checks the code between a function's start and its `bl _mcount`: `mflr
// r0` at the local entry point, after the TOC set-up if there is one, and nothing else.
func PPCCheckEntry(before []byte) error {
	b := before
	if isTOCSetup(b) {
		b = b[8:]
	}
	if w, ok := ppcWord(b); ok && len(b) == 4 && w == ppcMflrR0 {
		return nil
	}
	return fmt.Errorf("%w (%d bytes before the call, not [TOC set-up;] mflr r0)", ErrMcountSite, len(before))
}

// PPCNopLen returns 4 when code starts with nop (ori 0, 0, 0), else 0.
func PPCNopLen(code []byte) int {
	if w, ok := ppcWord(code); ok && w == ppcNop {
		return 4
	}
	return 0
}

// ppcPatchCheck refuses a nop area the local entry point skips (nops followed by the TOC
// set-up of the global entry point).
func ppcPatchCheck(code []byte) error {
	if isTOCSetup(code) {
		return fmt.Errorf("the nops come before the global entry point's TOC set-up (gcc 12), so calls through the local entry point skip them")
	}
	return nil
}

// ppcLinkedSite verifies a `bl _mcount` site of a linked file: mflr r0 before it, a
// call to a local _mcount definition, or the nop ftlink wrote.
func ppcLinkedSite(l *Linked, s *LinkedSite, e Entry, code []byte) {
	if e.Magic == 0 || e.Kind != KindBL {
		s.Err = fmt.Errorf("site %#x: entry kind %v is not a ppc64le site", s.Addr, e.Kind)
		return
	}
	if c, ok := l.code(s.Addr - 4); !ok || len(c) < 4 || binary.LittleEndian.Uint32(c) != ppcMflrR0 {
		s.Err = fmt.Errorf("site %#x: %w: no mflr r0 before it", s.Addr, ErrNotAtEntry)
		return
	}
	s.Len, s.Kind = 4, KindBL
	if w, ok := ppcWord(code); ok && w == ppcNop {
		if e.Magic != MagicLinked {
			s.Err = fmt.Errorf("site %#x: a nop where the entry records a call", s.Addr)
			return
		}
		s.Nop = true
		return
	}
	if _, _, err := DecodePPCSite(code); err != nil {
		s.Err = fmt.Errorf("site %#x: %v", s.Addr, err)
		return
	}
	w := binary.LittleEndian.Uint32(code)
	disp := int64(int32(w&0x03fffffc<<6) >> 6)
	target := s.Addr + uint64(disp)
	if !l.fentry[target] {
		s.Err = fmt.Errorf("site %#x: bl to %s, not to a local _mcount", s.Addr, l.describe(target, KindBL))
	}
}
