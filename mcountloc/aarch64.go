package mcountloc

// aarch64 rules. gcc has no -mfentry on aarch64: a function is traced through the nops of
// -fpatchable-function-entry (the Linux kernel's choice, DYNAMIC_FTRACE_WITH_ARGS), listed
// in __patchable_function_entries. gcc -pg's `bl _mcount` comes after the prologue and is
// refused (docs/table-format.md says why).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/arm64/arm64asm"
)

// aarch64 instruction words.
const (
	A64Nop   uint32 = 0xd503201f // nop
	A64BTIc  uint32 = 0xd503245f // bti c
	A64BTIjc uint32 = 0xd50324df // bti jc
)

// ErrMcountAArch64 is ErrMcountSite with the aarch64 advice.
var ErrMcountAArch64 error = &mcountErr{"call to _mcount: compiled with gcc -pg; on aarch64 the call comes after the " +
	"function's prologue (the frame is built and the arguments may be moved by then), so ftkit does not record it: " +
	"recompile without -pg, with -fpatchable-function-entry=2 (or 4,2 for an area before each function)"}

type mcountErr struct{ msg string }

func (e *mcountErr) Error() string        { return e.msg }
func (e *mcountErr) Is(target error) bool { return target == ErrMcountSite }

func a64Word(code []byte) (uint32, bool) {
	if len(code) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(code), true
}

// A64NopLen returns 4 when code starts with a nop, else 0.
func A64NopLen(code []byte) int {
	if w, ok := a64Word(code); ok && w == A64Nop {
		return 4
	}
	return 0
}

// A64IsPad reports whether code starts with a BTI landing pad for calls (bti c or bti jc).
func A64IsPad(code []byte) bool {
	w, ok := a64Word(code)
	return ok && (w == A64BTIc || w == A64BTIjc)
}

var errNotBL = errors.New("not a bl instruction")

// DecodeA64Site checks that code starts with `bl` (the form gcc -pg calls _mcount with).
func DecodeA64Site(code []byte) (Kind, int, error) {
	w, ok := a64Word(code)
	if !ok || w&0xfc000000 != 0x94000000 {
		return KindNone, 0, fmt.Errorf("bytes % x: %w", head(code, 4), errNotBL)
	}
	return KindBL, 4, nil
}

// A64BranchTargets calls fn with the target of every pc-relative branch (b, bl, b.cond,
// cbz/cbnz, tbz/tbnz) and adr in code, which starts at address base. Words are screened by
// their encoding and decoded with arm64asm.
func A64BranchTargets(code []byte, base uint64, fn func(uint64)) {
	for i := 0; i+4 <= len(code); i += 4 {
		w := binary.LittleEndian.Uint32(code[i:])
		if w&0x7c000000 != 0x14000000 && // b, bl
			w&0xff000010 != 0x54000000 && // b.cond
			w&0x7c000000 != 0x34000000 && // cbz, cbnz, tbz, tbnz
			w&0x9f000000 != 0x10000000 { // adr
			continue
		}
		inst, err := arm64asm.Decode(code[i : i+4])
		if err != nil {
			continue
		}
		for _, a := range inst.Args {
			if rel, ok := a.(arm64asm.PCRel); ok {
				fn(base + uint64(i) + uint64(int64(rel)))
			}
		}
	}
}
