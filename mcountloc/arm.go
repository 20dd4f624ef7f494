package mcountloc

// 32-bit arm rules (Debian armhf: Thumb-2 by default, -marm for the Arm state). gcc -pg
// calls __gnu_mcount_nc (push {lr}; bl __gnu_mcount_nc) after the prologue has saved the
// registers (push {r4, ..., lr}): not an entry site, refused like aarch64's -pg. gcc's
// -fpatchable-function-entry puts nops at the entry (Thumb `nop` bf00, Arm `nop`
// e320f000) listed with R_ARM_ABS32 in __patchable_function_entries. A Thumb function's
// symbol value has bit 0 set; the rules below work on the address with that bit cleared.

import (
	"debug/elf"

	"github.com/ftkit/ftkit/elfrw"
)

// ErrMcountARM is ErrMcountSite with the arm advice.
var ErrMcountARM error = &mcountErr{"call to __gnu_mcount_nc: compiled with gcc -pg; on arm the call comes after the " +
	"function's prologue (push {..., lr}), so ftkit does not record it: recompile without -pg, with " +
	"-fpatchable-function-entry=2 (two Thumb nops; 1 in the Arm state)"}

// ArmNopLen returns the length of the nop at the start of code: 2 for the Thumb nop
// (bf00), 4 for the Arm nops (e320f000, mov r0, r0), else 0. The Arm words are not
// Thumb nops; recordmcount meets them in areas before a Thumb function (gcc writes them in
// the Arm state there) and at Arm functions' entries.
func ArmNopLen(code []byte) int {
	if len(code) >= 4 {
		switch w := uint32(code[0]) | uint32(code[1])<<8 | uint32(code[2])<<16 | uint32(code[3])<<24; w {
		case 0xe320f000, 0xe1a00000:
			return 4
		}
	}
	if len(code) >= 2 && code[0] == 0x00 && code[1] == 0xbf {
		return 2
	}
	return 0
}

func noPad([]byte) bool { return false }

// armSyms returns syms with bit 0 (the Thumb bit) of function symbols cleared.
func armSyms(syms []elfrw.Symbol) []elfrw.Symbol {
	out := append([]elfrw.Symbol(nil), syms...)
	for i := range out {
		if t := out[i].Type(); t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC {
			out[i].Value &^= 1
		}
	}
	return out
}
