package fnargs

import (
	"fmt"
	"strings"
)

// Format says how a recorded value is printed.
type Format byte

// The formats: the letters of uftrace's argument specs, plus the DWARF-only ones.
const (
	FAuto   Format = 0   // by the type (DWARF plans)
	FInt    Format = 'd' // signed decimal (spec letters d and i)
	FUint   Format = 'u'
	FHex    Format = 'x'
	FString Format = 's'
	FChar   Format = 'c'
	FFloat  Format = 'f'
	FPtr    Format = 'p'
	// FStdString: the word is the address of a std::string, whose text is copied
	// (uftrace's letter S; libstdc++'s layout).
	FStdString Format = 'S'
)

// Arg is what is recorded of one argument or return value and how it is printed.
type Arg struct {
	Name string // parameter name; "arg3", "fparg1" or "retval" from a spec
	Type *Type  // nil for spec-made arguments without DWARF
	// Parts are the value's 8-byte words in the order of its bytes, at entry for an
	// argument, at exit for the return value.
	Parts []Loc
	// Indirect: the word is the address of the value (a C++ class passed by invisible
	// reference, a struct returned in memory); the address is what is printed.
	Indirect bool
	Fmt      Format
	// Size is the value's size in bytes: of Parts' bytes, the first Size are the value
	// (for FFloat 4 is float, 8 double).
	Size int
	// PartSize, when not 0, is how many bytes of the value each Part holds, in its low
	// bytes: 4 for an arm64 aggregate of floats, each member in a v register of its own.
	PartSize int
	// Confirmed: the DWARF location of the parameter at the entry address names the
	// same registers as the ABI (gcc -O1 and up say so for parameters still in them).
	Confirmed bool
}

// Func is the recording plan of one function.
type Func struct {
	Name    string // as in the source (qualified for C++ members when DWARF says so)
	Linkage string // C++ mangled name, "" for C
	Entry   uint64 // link-time address of the entry (DW_AT_low_pc)
	Args    []*Arg
	Ret     *Arg // nil: void, or not asked for
	// Variadic: the function takes "..." (the unnamed arguments are not recorded).
	Variadic bool
	// Unsure says why the locations may not be those the compiler used (a clone with
	// a changed signature, a type the model does not know); empty when they are.
	Unsure string
	// Clone: the code at Entry is a gcc clone only (every symbol there has a clone's
	// suffix: f.isra.0), whose parameters may not be the declaration's.
	Clone bool
	// CloneSym is the symbol of a Clone (what the readers name its calls by).
	CloneSym string
}

// Words is how many 8-byte words a call records: its arguments at entry
// (Entry) and its return value at exit (Exit).
func (f *Func) Words() (entry, exit int) {
	for _, a := range f.Args {
		entry += len(a.Parts)
	}
	if f.Ret != nil {
		exit = len(f.Ret.Parts)
	}
	return entry, exit
}

// Strings lists the arguments whose recording copies the bytes a pointer points to
// (char * in DWARF plans, /s in specs): the runtime reads them with a bounded,
// fault-safe copy.
func (f *Func) Strings() []*Arg {
	var out []*Arg
	for _, a := range f.Args {
		if a.isString() {
			out = append(out, a)
		}
	}
	if f.Ret != nil && f.Ret.isString() {
		out = append(out, f.Ret)
	}
	return out
}

func (a *Arg) isString() bool {
	if a.Fmt == FString || a.Fmt == FStdString {
		return true
	}
	return a.Fmt == FAuto && a.Type != nil && a.Type.Kind == KString && !a.Indirect || a.stdString() ||
		a.stringView() || a.viewAt()
}

// viewAt: the recorded word is the address of a std::string_view (a reference or
// pointer to one), whose length and data pointer the runtime reads, then its bytes.
func (a *Arg) viewAt() bool {
	t := a.Type
	return a.Fmt == FAuto && t != nil && !a.Indirect && len(a.Parts) == 1 &&
		(t.Kind == KRef || t.Kind == KPtr) && t.Elem != nil && t.Elem.StringView
}

// stringView: a std::string_view passed or returned by value in two words, its length
// then its data pointer, whose bytes the runtime copies.
func (a *Arg) stringView() bool {
	return a.Fmt == FAuto && a.Type != nil && a.Type.StringView && !a.Indirect && len(a.Parts) == 2 &&
		a.PartSize == 0
}

// stdString: the recorded word is the address of a std::string (a reference or pointer
// to one, or one passed or returned through a hidden pointer), whose text the runtime
// copies.
func (a *Arg) stdString() bool {
	if a.Fmt == FStdString {
		return true
	}
	t := a.Type
	if a.Fmt != FAuto || t == nil || len(a.Parts) != 1 {
		return false
	}
	if a.Indirect {
		return t.StdString
	}
	return (t.Kind == KRef || t.Kind == KPtr) && t.Elem != nil && t.Elem.StdString
}

// String is the plan in a readable form, e.g. "parse(buf/s=%rdi, len=%rsi) = %rax".
func (f *Func) String() string {
	var b strings.Builder
	b.WriteString(f.Name)
	b.WriteByte('(')
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	if f.Variadic {
		if len(f.Args) > 0 {
			b.WriteString(", ")
		}
		b.WriteString("...")
	}
	b.WriteByte(')')
	if f.Ret != nil {
		b.WriteString(" = ")
		b.WriteString(f.Ret.String())
	}
	return b.String()
}

func (a *Arg) String() string {
	var b strings.Builder
	b.WriteString(a.Name)
	switch {
	case a.Fmt != FAuto:
		fmt.Fprintf(&b, "/%c%d", a.Fmt, a.Size*8)
	case a.Type != nil:
		fmt.Fprintf(&b, " %s", a.Type.Kind)
	}
	b.WriteByte('=')
	if a.Indirect {
		b.WriteByte('*')
	}
	if len(a.Parts) == 0 {
		b.WriteString("(not recorded)")
	}
	for i, p := range a.Parts {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Describe is the plan in C terms, e.g.
// "parse(const char *buf @rdi, size_type len @rsi) = int @rax": each value's type and
// name, then where it is recorded ("@*rdi": the address of the value is).
func (f *Func) Describe() string {
	var b strings.Builder
	b.WriteString(f.Name)
	b.WriteByte('(')
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.describe(a.Name))
	}
	if f.Variadic {
		if len(f.Args) > 0 {
			b.WriteString(", ")
		}
		b.WriteString("...")
	}
	b.WriteByte(')')
	if f.Ret != nil {
		b.WriteString(" = ")
		b.WriteString(f.Ret.describe(""))
	}
	return b.String()
}

func (a *Arg) describe(name string) string {
	var s string
	switch {
	case a.Type != nil:
		s = a.Type.Name
		if name != "" {
			if !strings.HasSuffix(s, "*") && !strings.HasSuffix(s, "&") {
				s += " "
			}
			s += name
		}
	case a.Fmt != FAuto:
		s = fmt.Sprintf("%s/%c%d", a.Name, a.Fmt, a.Size*8)
	default:
		s = name
	}
	s += " @"
	if a.Indirect {
		s += "*"
	}
	if len(a.Parts) == 0 {
		return s + "-"
	}
	for i, p := range a.Parts {
		if i > 0 {
			s += ":"
		}
		if p.Stack {
			s += fmt.Sprintf("stack+%d", p.Off)
		} else {
			s += p.Reg.String()
		}
	}
	return s
}
