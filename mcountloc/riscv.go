package mcountloc

// riscv64 rules. gcc -pg saves the registers, moves ra to a0 and calls _mcount
// (auipc ra / jalr, R_RISCV_CALL_PLT) after the prologue: refused. The kernel's way,
// -fpatchable-function-entry, puts nops at the entry (c.nop with the C extension, Debian's
// rv64gc default; addi x0, x0, 0 without), listed through local .LPFE labels. Linker
// relaxation shrinks code after the objects are recorded, so the table's relocations
// refer to local symbols at the sites (Arch.SiteSymbols).

// ErrMcountRISCV is ErrMcountSite with the riscv64 advice.
var ErrMcountRISCV error = &mcountErr{"call to _mcount: compiled with gcc -pg; on riscv64 the call comes after the " +
	"function's prologue (registers saved, ra moved to a0), so ftkit does not record it: recompile without -pg, " +
	"with -fpatchable-function-entry=4 (4 c.nop: room for auipc/jalr), as the Linux kernel does"}

// RISCVNopLen returns the length of the nop at the start of code: 2 for c.nop (0001), 4
// for nop (addi x0, x0, 0: 00000013), else 0.
func RISCVNopLen(code []byte) int {
	if len(code) >= 2 && code[0]&3 != 3 {
		if code[0] == 0x01 && code[1] == 0x00 {
			return 2
		}
		return 0
	}
	if len(code) >= 4 && code[0] == 0x13 && code[1] == 0 && code[2] == 0 && code[3] == 0 {
		return 4
	}
	return 0
}
