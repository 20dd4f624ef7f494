package mcountloc

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/ftkit/ftkit/elfrw"
)

// Arch holds the per-architecture rules of the recorder: which relocations mark a call to
// the profiling hook, how the call instruction is checked, and how table entries are
// relocated. Adding an architecture means adding one entry to Arches.
type Arch struct {
	Name    string
	Machine elf.Machine
	Class   elf.Class
	// Rela: the table's relocations go to a SHT_RELA section (else SHT_REL, addend in place).
	Rela bool
	// SiteRelocs maps a relocation type found on a call to the call form it must be; the
	// relocated field is the last 4 bytes of the instruction.
	SiteRelocs map[uint32]Kind
	// SiteAddend is the addend a RELA site relocation must carry.
	SiteAddend int64
	// TableReloc is the PC-relative 32-bit relocation type of table entries.
	TableReloc uint32
	// Decode checks the instruction at a site and returns its form and length.
	Decode func(code []byte) (Kind, int, error)
	// McountErr refuses an object calling mcount/_mcount (wraps ErrMcountSite).
	McountErr error
	// CheckEntry, when set, checks the code between a function's first byte and a hook
	// call found after it (the call must be the first instruction, after a landing pad).
	CheckEntry func(before []byte) error
	// PrologueBefore, when set, classifies the bytes just before a hook call of a linked
	// file whose function start is unknown (stripped): see X86PrologueBefore.
	PrologueBefore func(b []byte) error
	// LinkedSite, when set, verifies a call-site entry (not KindNops) of a linked file;
	// else the x86 rules apply (x86-64, i386) or the entry is refused.
	LinkedSite func(l *Linked, s *LinkedSite, e Entry, code []byte)
	// McountAtEntry: a call to mcount/_mcount is recorded when CheckEntry accepts it
	// (ppc64le -mprofile-kernel), and refuses the object (McountErr) when not.
	McountAtEntry bool
	// PatchCheck, when set, checks the code right after a patchable nop run at an entry.
	PatchCheck func(after []byte) error
	// SiteNop returns the nop ftlink writes over a verified call site of length n (nil:
	// X86Nop).
	SiteNop func(n int) []byte
	// FuncSyms, when set, turns the symbol table into the addresses of the code (arm:
	// clears the Thumb bit of function symbols) for every lookup of functions.
	FuncSyms func([]elfrw.Symbol) []elfrw.Symbol
	// SiteSymbols: table relocations refer to a local symbol added at each site, not to
	// the section symbol (RISC-V: linker relaxation moves symbols, not addends).
	SiteSymbols bool

	// -fpatchable-function-entry: PatchReloc is the 64-bit absolute relocation type of the
	// __patchable_function_entries entries; NopLen the length of the nop starting code (0:
	// none); IsPad reports the 4-byte landing pad gcc puts first (endbr64, bti c);
	// BranchTargets calls fn with every branch target of code located at base (a nop run
	// at a function's entry is cut where a branch lands: the rest is loop alignment).
	PatchReloc uint32
	// MaxSiteLen, when not 0, is the most of an entry's nop run a site takes: the rest
	// stays nops (arm64: the runtime patches two instructions, as the kernel; a nop the
	// function itself starts with, inline asm or a loop's alignment behind a bti c, had
	// made 12-byte sites the runtime refused).
	MaxSiteLen    int
	NopLen        func(code []byte) int
	IsPad         func(code []byte) bool
	BranchTargets func(code []byte, base uint64, fn func(uint64))
}

// Arches lists the supported architectures.
var Arches = []*Arch{
	{
		Name:    "x86-64",
		Machine: elf.EM_X86_64,
		Class:   elf.ELFCLASS64,
		Rela:    true,
		SiteRelocs: map[uint32]Kind{
			uint32(elf.R_X86_64_PC32):      KindCallRel,
			uint32(elf.R_X86_64_PLT32):     KindCallRel,
			uint32(elf.R_X86_64_GOTPCREL):  KindCallGOT,
			uint32(elf.R_X86_64_GOTPCRELX): KindCallGOT,
		},
		SiteAddend:     -4,
		TableReloc:     uint32(elf.R_X86_64_PC32),
		Decode:         DecodeX86Site,
		McountErr:      ErrMcountSite,
		CheckEntry:     X86CheckEntry,
		PrologueBefore: X86PrologueBefore,

		PatchReloc:    uint32(elf.R_X86_64_64),
		NopLen:        X86NopLen,
		IsPad:         HasEndbr64,
		BranchTargets: X86BranchTargets,
	},
	{
		Name:    "aarch64",
		Machine: elf.EM_AARCH64,
		Class:   elf.ELFCLASS64,
		Rela:    true,
		// gcc -pg: bl _mcount. Recognised so that the object is refused with advice.
		SiteRelocs: map[uint32]Kind{uint32(elf.R_AARCH64_CALL26): KindBL},
		SiteAddend: 0,
		TableReloc: uint32(elf.R_AARCH64_PREL32),
		Decode:     DecodeA64Site,
		McountErr:  ErrMcountAArch64,

		PatchReloc:    uint32(elf.R_AARCH64_ABS64),
		MaxSiteLen:    8,
		NopLen:        A64NopLen,
		IsPad:         A64IsPad,
		BranchTargets: A64BranchTargets,
	},
	{
		Name:    "i386",
		Machine: elf.EM_386,
		Class:   elf.ELFCLASS32,
		Rela:    false,
		// gcc -pg -mfentry -fno-pie: call __fentry__ (R_386_PC32; R_386_PLT32 from gcc 12's
		// assembler for a call to an undefined function). SiteAddend is the addend in place.
		SiteRelocs: map[uint32]Kind{
			uint32(elf.R_386_PC32):  KindCallRel,
			uint32(elf.R_386_PLT32): KindCallRel,
		},
		SiteAddend:     -4,
		TableReloc:     uint32(elf.R_386_PC32),
		Decode:         Decode386Site,
		McountErr:      ErrMcount386,
		CheckEntry:     I386CheckEntry,
		PrologueBefore: I386PrologueBefore,

		PatchReloc:    uint32(elf.R_386_32),
		NopLen:        I386NopLen,
		IsPad:         HasEndbr32,
		BranchTargets: I386BranchTargets,
	},
	{
		Name:    "arm",
		Machine: elf.EM_ARM,
		Class:   elf.ELFCLASS32,
		Rela:    false,
		// No call form is recorded: a relocation against __gnu_mcount_nc refuses the object.
		SiteRelocs: map[uint32]Kind{},
		TableReloc: uint32(elf.R_ARM_REL32),
		Decode:     func([]byte) (Kind, int, error) { return KindNone, 0, errNotE8 },
		McountErr:  ErrMcountARM,
		FuncSyms:   armSyms,

		PatchReloc: uint32(elf.R_ARM_ABS32),
		NopLen:     ArmNopLen,
		IsPad:      noPad,
		// BranchTargets nil: Thumb-2 branches are not decoded; nop runs longer than the
		// object's shortest are cut to it (capAtBranches).
	},
	{
		Name:    "riscv64",
		Machine: elf.EM_RISCV,
		Class:   elf.ELFCLASS64,
		Rela:    true,
		// gcc -pg calls _mcount (auipc/jalr, R_RISCV_CALL_PLT) after the prologue: refused.
		SiteRelocs:  map[uint32]Kind{},
		TableReloc:  uint32(elf.R_RISCV_32_PCREL),
		Decode:      func([]byte) (Kind, int, error) { return KindNone, 0, errNotE8 },
		McountErr:   ErrMcountRISCV,
		SiteSymbols: true,

		PatchReloc: uint32(elf.R_RISCV_64),
		NopLen:     RISCVNopLen,
		IsPad:      noPad,
	},
	{
		Name:    "s390x",
		Machine: elf.EM_S390,
		Class:   elf.ELFCLASS64,
		Rela:    true,
		SiteRelocs: map[uint32]Kind{
			uint32(elf.R_390_PC32DBL):  KindBrasl,
			uint32(elf.R_390_PLT32DBL): KindBrasl,
		},
		SiteAddend: 2,
		TableReloc: uint32(elf.R_390_PC32),
		Decode:     DecodeS390Site,
		McountErr:  ErrMcountS390,
		CheckEntry: entryOnly,
		LinkedSite: s390LinkedSite,
		SiteNop:    func(int) []byte { return S390Nop6 },

		PatchReloc: uint32(elf.R_390_64),
		NopLen:     S390NopLen,
		IsPad:      noPad,
	},
	{
		Name:    "ppc64le",
		Machine: elf.EM_PPC64,
		Class:   elf.ELFCLASS64,
		Rela:    true,
		// -pg -mprofile-kernel: mflr r0; bl _mcount. The relocated field is the whole word.
		SiteRelocs:    map[uint32]Kind{uint32(elf.R_PPC64_REL24): KindBL},
		TableReloc:    uint32(elf.R_PPC64_REL32),
		Decode:        DecodePPCSite,
		McountErr:     ErrMcountPPC,
		McountAtEntry: true,
		CheckEntry:    PPCCheckEntry,
		LinkedSite:    ppcLinkedSite,
		SiteNop:       func(int) []byte { return PPCNop },

		PatchReloc: uint32(elf.R_PPC64_ADDR64),
		NopLen:     PPCNopLen,
		IsPad:      noPad,
		PatchCheck: ppcPatchCheck,
	},
}

// ptrSize is the size of an address: of a __patchable_function_entries entry.
func (a *Arch) ptrSize() uint64 {
	if a.Class == elf.ELFCLASS32 {
		return 4
	}
	return 8
}

// refusedArches explains the machines ftkit knows and does not support.
var refusedArches = map[elf.Machine]string{
	elf.EM_MIPS: "mips is not supported: gcc -pg calls _mcount through the GOT (R_MIPS_CALL16, jalr) after the " +
		"prologue has set up the frame and gp, gcc 12's -fpatchable-function-entry puts every nop before the function's " +
		"symbol (none at its entry), and MIPS64 relocations pack three types in r_info, which ftkit does not write",
}

// unsupported describes why a machine has no rules.
func unsupported(m elf.Machine, c elf.Class) string {
	if why, ok := refusedArches[m]; ok {
		return why
	}
	return fmt.Sprintf("unsupported machine %v (%v): ftkit supports %s", m, c, archNames())
}

// archNames lists the supported architectures, for messages.
func archNames() string {
	var n []string
	for _, a := range Arches {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// ArchFor returns the rules for a machine and class, or nil.
func ArchFor(m elf.Machine, c elf.Class) *Arch {
	for _, a := range Arches {
		if a.Machine == m && a.Class == c {
			return a
		}
	}
	return nil
}

// Callees are the names of the profiling hooks gcc calls from function entries.
var Callees = map[string]bool{"__fentry__": true, "mcount": true, "_mcount": true, "__gnu_mcount_nc": true}

// IsRecordedSection reports whether call sites in an executable section called name are
// recorded: every executable section, as gcc's -mrecord-mcount records them (lmdb puts
// its mdb_env_* API in "text_env": 39 functions were left untraced, their sites live),
// but .init and .fini, the C runtime's glue around a program's start and end.
func IsRecordedSection(name string) bool {
	return name != ".init" && name != ".fini"
}
