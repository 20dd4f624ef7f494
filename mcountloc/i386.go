package mcountloc

// i386 rules. gcc -pg calls mcount after the frame set-up (push %ebp; mov %esp,%ebp), and
// Debian's i686 gcc builds PIE by default, where it calls *mcount@GOT(%ebx): both are
// refused. gcc -pg -mfentry puts `call __fentry__` (e8 rel32, R_386_PC32 or R_386_PLT32)
// first in every function, but only without PIC (-fno-pie; gcc: "-mfentry isn't supported
// for 32-bit in combination with -fpic"). -fpatchable-function-entry works with and without
// PIC and lists 4-byte absolute addresses (R_386_32) in __patchable_function_entries.

import (
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// ErrMcount386 is ErrMcountSite with the i386 advice.
var ErrMcount386 error = &mcountErr{"call to mcount: compiled with gcc -pg without -mfentry; on i386 the call comes after " +
	"the frame set-up (push %ebp; mov %esp,%ebp), so ftkit does not record it: recompile with -pg -mfentry -fno-pie " +
	"(gcc has no -mfentry with PIC on i386) or with -fpatchable-function-entry=5"}

// HasEndbr32 reports whether code starts with endbr32 (f3 0f 1e fb).
func HasEndbr32(code []byte) bool {
	return len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfb
}

// Decode386Site checks that code starts with `call rel32` (e8), the only form gcc -mfentry
// calls __fentry__ with on i386 (ff 15 is an absolute indirect call there: refused).
func Decode386Site(code []byte) (Kind, int, error) {
	if len(code) < 5 || code[0] != 0xe8 {
		return KindNone, 0, fmt.Errorf("bytes % x: %w", head(code, 5), errNotE8)
	}
	inst, err := x86asm.Decode(code[:5], 32)
	if err != nil || inst.Op != x86asm.CALL || inst.Len != 5 {
		return KindNone, 0, fmt.Errorf("bytes % x: %w", code[:5], errNotE8)
	}
	return KindCallRel, 5, nil
}

var errNotE8 = errors.New("not an e8 call")

// I386NopLen returns the length of the nop instruction at the start of code (32-bit mode), or 0.
func I386NopLen(code []byte) int { return x86NopLen(code, 32) }

// I386BranchTargets is X86BranchTargets for 32-bit code.
func I386BranchTargets(code []byte, base uint64, fn func(uint64)) {
	x86BranchTargets(code, base, 32, fn)
}

// I386CheckEntry is X86CheckEntry for 32-bit code (endbr32, push %ebp; mov %esp,%ebp).
func I386CheckEntry(before []byte) error { return x86CheckEntry(before, 32) }

// I386PrologueBefore is X86PrologueBefore for i386: the bytes just before a call site of a
// stripped file end with a frame set-up (push %reg, mov %esp,%ebp, sub $imm,%esp) only
// after a prologue, where gcc -pg calls mcount.
func I386PrologueBefore(b []byte) error {
	n := len(b)
	var insn string
	switch {
	case n >= 2 && b[n-2] == 0x89 && b[n-1] == 0xe5:
		insn = "mov %esp,%ebp"
	case n >= 3 && b[n-3] == 0x83 && b[n-2] == 0xec:
		insn = fmt.Sprintf("sub $%#x,%%esp", b[n-1])
	case n >= 6 && b[n-6] == 0x81 && b[n-5] == 0xec:
		insn = fmt.Sprintf("sub $%#x,%%esp", uint32(b[n-4])|uint32(b[n-3])<<8|uint32(b[n-2])<<16|uint32(b[n-1])<<24)
	case n >= 1 && b[n-1]&0xf8 == 0x50:
		insn = "push %" + [8]string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"}[b[n-1]&7]
	default:
		return nil
	}
	return fmt.Errorf("%w (just before the call: %s)", ErrMcountSite, insn)
}
