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
func IsMcountName(name string) bool { return name == "mcount" || name == "_mcount" }

// X86CheckEntry checks the code between a function's first byte and its call site: the
// call must come first (after an optional endbr64). It returns nil, or an error wrapping
// ErrMcountSite (the frame-setup prologue of gcc -pg) or ErrNotAtEntry that shows the
// instructions found before the call.
func X86CheckEntry(before []byte) error {
	if HasEndbr64(before) {
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
		inst, err := x86asm.Decode(b, 64)
		if err != nil || inst.Len == 0 || inst.Op == 0 {
			insns = append(insns, fmt.Sprintf(".byte % x", b))
			break
		}
		insns = append(insns, x86asm.GNUSyntax(inst, 0, nil))
		b = b[inst.Len:]
	}
	what := ErrNotAtEntry
	if X86McountPrologue(before) {
		what = ErrMcountSite
	}
	return fmt.Errorf("%w (before the call: %s)", what, strings.Join(insns, "; "))
}

// X86McountPrologue reports whether code ends with gcc -pg's frame setup before an mcount
// call: push %rbp; mov %rsp,%rbp.
func X86McountPrologue(code []byte) bool {
	n := len(code)
	return n >= 4 && code[n-4] == 0x55 && code[n-3] == 0x48 && code[n-2] == 0x89 && code[n-1] == 0xe5
}

// X86AfterPushR10 reports whether code ends with push %r10 (41 52): the nested-function
// pattern, checked when no symbol says where the function starts.
func X86AfterPushR10(code []byte) bool {
	n := len(code)
	return n >= 2 && code[n-2] == 0x41 && code[n-1] == 0x52
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

// checkObjEntries drops the sites that are not at their function's entry, reporting them
// as problems, and refuses mcount sites outright.
func checkObjEntries(f *elfrw.File, arch *Arch, syms []elfrw.Symbol, sites []ObjSite, res *Result) ([]ObjSite, error) {
	fs := newFuncStarts(syms)
	out := sites[:0]
	for _, s := range sites {
		if IsMcountName(s.Callee) {
			return nil, fmt.Errorf("%s+%#x (%s): %w", s.Section, s.Offset, s.Func, ErrMcountSite)
		}
		start, ok := fs.start(s.SecIndex, s.Offset)
		if ok && start < s.Offset && arch.Machine == elf.EM_X86_64 {
			code := f.SectionData(f.Sections[s.SecIndex])
			if err := X86CheckEntry(code[start:s.Offset]); err != nil {
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
// (Linked files are x86-64 only, OpenLinked checks.)
func (s *LinkedSite) checkLinkedEntry(l *Linked) error {
	if s.Func != "" && s.FuncAt < s.Addr {
		if code, ok := l.code(s.FuncAt); ok && uint64(len(code)) >= s.Addr-s.FuncAt {
			return X86CheckEntry(code[:s.Addr-s.FuncAt])
		}
		return nil
	}
	if s.Func == "" && s.Addr >= 4 {
		if code, ok := l.code(s.Addr - 4); ok && len(code) >= 4 {
			if X86McountPrologue(code[:4]) {
				return fmt.Errorf("%w (before the call: push %%rbp; mov %%rsp,%%rbp)", ErrMcountSite)
			}
			if X86AfterPushR10(code[:4]) {
				return fmt.Errorf("%w (before the call: push %%r10)", ErrNotAtEntry)
			}
		}
	}
	return nil
}
