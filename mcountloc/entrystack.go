package mcountloc

// The tracers read the traced function's return address at the top of the stack at the
// call site (the slot the function was called with): true only when the call is the
// function's first instruction (after endbr64). Two gcc outputs break that rule:
//
//   - gcc -pg without -mfentry calls mcount after the frame setup (push %rbp; mov %rsp,%rbp):
//     the slot above the call holds the saved %rbp. ftkit does not trace such sites at all
//     (the kernel needs -mfentry on x86-64 too); the object must be rebuilt with -mfentry.
//   - a GCC nested function that uses its static chain saves %r10 around the call
//     (push %r10; call __fentry__; pop %r10): the slot holds the static chain. Such a site is
//     left out of the table (the call stays and reaches the runtime's __fentry__, a ret).

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/ftkit/ftkit/elfrw"
)

var (
	// ErrMcountSite marks a call to mcount (gcc -pg without -mfentry).
	ErrMcountSite = errors.New("call to mcount: compiled with gcc -pg without -mfentry; ftkit needs __fentry__ " +
		"call sites (the return address is not on top of the stack at an mcount call): recompile with -pg -mfentry")
	// ErrNotAtEntry marks a __fentry__ call that is not the function's first instruction.
	ErrNotAtEntry = errors.New("the call is not the function's first instruction, so the stack there is not " +
		"the function's entry stack (e.g. a GCC nested function saving its static chain first)")
)

// IsMcountName reports whether name is gcc's non-fentry profiling hook.
func IsMcountName(name string) bool {
	return name == "mcount" || name == "_mcount" || name == "__gnu_mcount_nc"
}

// X86CheckEntry checks the code between a function's first byte and its call site: the
// call must come first (after an optional endbr64). It returns nil, or an error wrapping
// ErrMcountSite (the frame-setup prologue of gcc -pg) or ErrNotAtEntry that shows the
// instructions found before the call.
func X86CheckEntry(before []byte) error { return x86CheckEntry(before, 64) }

func x86CheckEntry(before []byte, mode int) error {
	if HasEndbr64(before) || (mode == 32 && HasEndbr32(before)) {
		before = before[4:]
	}
	if len(before) == 0 {
		return nil
	}
	var insns []string
	for b := before; len(b) > 0; {
		if len(insns) == 8 { // enough to see what it is; the code may be long
			insns = append(insns, fmt.Sprintf("... (%d bytes in all)", len(before)))
			break
		}
		inst, err := x86asm.Decode(b, mode)
		if err != nil || inst.Len == 0 || inst.Op == 0 {
			insns = append(insns, fmt.Sprintf(".byte % x", b))
			break
		}
		insns = append(insns, x86asm.GNUSyntax(inst, 0, nil))
		b = b[inst.Len:]
	}
	what := ErrNotAtEntry
	// gcc -pg forces a frame pointer and sets it up first: push %rbp; mov %rsp,%rbp.
	if len(before) >= 4 && before[0] == 0x55 && before[1] == 0x48 && before[2] == 0x89 && before[3] == 0xe5 {
		what = ErrMcountSite
	}
	// i386: push %ebp; mov %esp,%ebp.
	if mode == 32 && len(before) >= 3 && before[0] == 0x55 && before[1] == 0x89 && before[2] == 0xe5 {
		what = ErrMcountSite
	}
	return fmt.Errorf("%w (before the call: %s)", what, strings.Join(insns, "; "))
}

// X86PrologueBefore classifies the bytes just before a call site when the function's start
// is unknown (stripped files; the runtime does the same): nil, or an error wrapping
// ErrNotAtEntry (push %r10 of a nested function) or ErrMcountSite (gcc -pg's mcount call
// comes after the whole prologue, which ends with push %reg, mov %rsp,%rbp or
// sub $imm,%rsp). A site at its function's entry follows endbr64 or the previous function's
// last instruction or padding (ret, jmp, nops, int3, ud2), which never end so.
func X86PrologueBefore(b []byte) error {
	n := len(b)
	at := func(back int, bytes ...byte) bool {
		if n < back {
			return false
		}
		for i, x := range bytes {
			if b[n-back+i] != x {
				return false
			}
		}
		return true
	}
	var what error
	var insn string
	switch {
	case at(2, 0x41, 0x52):
		what, insn = ErrNotAtEntry, "push %r10"
	case at(3, 0x48, 0x89, 0xe5):
		what, insn = ErrMcountSite, "mov %rsp,%rbp"
	case at(4, 0x48, 0x83, 0xec):
		what, insn = ErrMcountSite, fmt.Sprintf("sub $%#x,%%rsp", b[n-1])
	case at(7, 0x48, 0x81, 0xec):
		what, insn = ErrMcountSite, fmt.Sprintf("sub $%#x,%%rsp", uint32(b[n-4])|uint32(b[n-3])<<8|uint32(b[n-2])<<16|uint32(b[n-1])<<24)
	case n >= 2 && b[n-2] == 0x41 && b[n-1]&0xf8 == 0x50:
		what, insn = ErrMcountSite, fmt.Sprintf("push %%r%d", 8+b[n-1]&7)
	case n >= 1 && b[n-1]&0xf8 == 0x50:
		what, insn = ErrMcountSite, "push %"+[8]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"}[b[n-1]&7]
	default:
		return nil
	}
	return fmt.Errorf("%w (just before the call: %s)", what, insn)
}

// funcStarts finds, for sites in relocatable objects, the start of the function symbol
// covering an offset: one sorted list per section, built once.
type funcStarts map[int][]elfrw.Symbol

func newFuncStarts(syms []elfrw.Symbol) funcStarts {
	fs := funcStarts{}
	for _, s := range syms {
		t := s.Type()
		if s.Name == "" || s.Shndx == 0 || s.Shndx >= uint32(elf.SHN_LORESERVE) ||
			(t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC) {
			continue
		}
		fs[int(s.Shndx)] = append(fs[int(s.Shndx)], s)
	}
	for _, v := range fs {
		sort.Slice(v, func(i, j int) bool { return v[i].Value < v[j].Value })
	}
	return fs
}

// start returns the start of the function symbol of section sec that covers off.
func (fs funcStarts) start(sec int, off uint64) (uint64, bool) {
	v := fs[sec]
	i := sort.Search(len(v), func(i int) bool { return v[i].Value > off }) - 1
	// Aliases and a few overlapping symbols: look back a little.
	for n := 0; i >= 0 && n < 8; i, n = i-1, n+1 {
		if off < v[i].Value+v[i].Size {
			return v[i].Value, true
		}
	}
	return 0, false
}

// startsAt reports whether a function symbol of section sec starts at off.
func (fs funcStarts) startsAt(sec int, off uint64) bool {
	v := fs[sec]
	i := sort.Search(len(v), func(i int) bool { return v[i].Value >= off })
	return i < len(v) && v[i].Value == off
}

// next returns the start of the first function symbol of section sec after off.
func (fs funcStarts) next(sec int, off uint64) (uint64, bool) {
	v := fs[sec]
	i := sort.Search(len(v), func(i int) bool { return v[i].Value > off })
	if i == len(v) {
		return 0, false
	}
	return v[i].Value, true
}

// end returns the end of the largest function symbol of section sec starting at off
// (off itself when none has a size).
func (fs funcStarts) end(sec int, off uint64) uint64 {
	v := fs[sec]
	e := off
	for i := sort.Search(len(v), func(i int) bool { return v[i].Value >= off }); i < len(v) && v[i].Value == off; i++ {
		e = max(e, off+v[i].Size)
	}
	return e
}

// checkObjEntries drops the sites that are not at their function's entry, reporting them
// as problems, and refuses mcount sites outright.
func checkObjEntries(f *elfrw.File, arch *Arch, syms []elfrw.Symbol, sites []ObjSite, res *Result) ([]ObjSite, error) {
	fs := newFuncStarts(syms)
	out := sites[:0]
	for _, s := range sites {
		start, ok := fs.start(s.SecIndex, s.Offset)
		if IsMcountName(s.Callee) {
			if !arch.McountAtEntry || !ok || start >= s.Offset {
				return nil, fmt.Errorf("%s+%#x (%s): %w", s.Section, s.Offset, s.Func, arch.McountErr)
			}
			code := f.SectionData(f.Sections[s.SecIndex])
			if err := arch.CheckEntry(code[start:s.Offset]); err != nil {
				return nil, fmt.Errorf("%s+%#x (%s): %w", s.Section, s.Offset, s.Func, arch.McountErr)
			}
			out = append(out, s)
			continue
		}
		if ok && start < s.Offset && arch.CheckEntry != nil {
			code := f.SectionData(f.Sections[s.SecIndex])
			if err := arch.CheckEntry(code[start:s.Offset]); err != nil {
				res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x (%s): %v", s.Section, s.Offset, s.Func, err))
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// checkEntry drops a verified hook call that is not at its function's entry.
func (s *LinkedSite) checkEntry(l *Linked) {
	if err := s.checkLinkedEntry(l); err != nil {
		s.Err = fmt.Errorf("site %#x: %w", s.Addr, err)
	}
}

// checkLinkedEntry applies the entry rule to a site of a linked file: with symbols, to the
// code from the function's start; stripped, to the patterns just before the site.
// (Only x86-64 call sites come here: checkSite.)
func (s *LinkedSite) checkLinkedEntry(l *Linked) error {
	if s.Func != "" && s.FuncAt < s.Addr {
		if code, ok := l.code(s.FuncAt); ok && uint64(len(code)) >= s.Addr-s.FuncAt {
			if l.arch.CheckEntry == nil {
				return nil
			}
			return l.arch.CheckEntry(code[:s.Addr-s.FuncAt])
		}
		return nil
	}
	if s.Func == "" && l.arch.PrologueBefore != nil {
		// Up to 7 bytes before the site, within its section.
		for back := uint64(7); back > 0; back-- {
			if s.Addr < back {
				continue
			}
			if code, ok := l.code(s.Addr - back); ok && uint64(len(code)) >= back {
				return l.arch.PrologueBefore(code[:back])
			}
		}
	}
	return nil
}
