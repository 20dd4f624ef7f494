package fnargs

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ftkit/ftkit/internal/elfsym"
	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/dwarf/loclist"
	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/dwarf/reader"
	"github.com/ianlancetaylor/demangle"
)

// Table is the recording plans of every function an ELF file's DWARF describes with
// an address (out-of-line instances: inlined-only functions have no entry to record).
type Table struct {
	Funcs   []*Func // by entry address
	ARM64   bool    // the program's locations are AAPCS64's (else x86-64 System V)
	byEntry map[uint64]*Func
	byName  map[string][]*Func
}

// ByEntry is the function whose entry (link-time address) is addr, or nil.
func (t *Table) ByEntry(addr uint64) *Func { return t.byEntry[addr] }

// ByName is the functions called name: the source name ("parse", "ns::Cls::get<int>"),
// the unqualified name, or the C++ linkage name (several static functions of different
// files may share a name).
func (t *Table) ByName(name string) []*Func { return t.byName[name] }

// Load reads the plans from the ELF file at path.
func Load(path string) (*Table, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fnargs: %s: %w", path, err)
	}
	defer f.Close()
	t, err := FromELF(f)
	if err != nil {
		return nil, fmt.Errorf("fnargs: %s: %w", path, err)
	}
	return t, nil
}

// FromELF reads the plans from an opened x86-64 or aarch64 ELF file.
func FromELF(f *elf.File) (*Table, error) {
	if f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64 {
		return nil, fmt.Errorf("not an x86-64 or aarch64 file (machine %v)", f.Machine)
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("no DWARF: %w", err)
	}
	syms := map[uint64][]string{}
	best := map[uint64]elf.Symbol{} // of several at an address, the one the runtime names it by
	var funcs []elf.Symbol          // by address
	if ss, err := f.Symbols(); err == nil {
		for _, s := range ss {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				syms[s.Value] = append(syms[s.Value], s.Name)
				funcs = append(funcs, s)
				if b, ok := best[s.Value]; !ok || elfsym.Better(s, b) {
					best[s.Value] = s
				}
			}
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Value < funcs[j].Value })
	// entry is the function's address for a subprogram whose code starts at low: its
	// symbol's. They differ where gcc puts the patchable entry's nops (aarch64
	// -fpatchable-function-entry=2) before the DW_AT_low_pc it gives: the calls reach the
	// symbol, and the call site is the nops.
	entry := func(low uint64) uint64 {
		if len(syms[low]) > 0 {
			return low
		}
		i := sort.Search(len(funcs), func(i int) bool { return funcs[i].Value >= low })
		if i > 0 {
			s := funcs[i-1]
			if low-s.Value <= 4*maxPatchNops && s.Value+s.Size > low {
				return s.Value
			}
		}
		return low
	}
	sect := func(name string) []byte {
		if s := f.Section(name); s != nil {
			if b, err := s.Data(); err == nil {
				return b
			}
		}
		return nil
	}
	l := &loader{d: d, cache: map[dwarf.Offset]godwarf.Type{}, byRefCache: map[dwarf.Offset]bool{},
		loc5: loclist.NewDwarf5Reader(sect(".debug_loclists")),
		loc2: loclist.NewDwarf2Reader(sect(".debug_loc"), 8),
		addr: godwarf.ParseAddr(sect(".debug_addr")), arm64: f.Machine == elf.EM_AARCH64}
	t := &Table{byEntry: map[uint64]*Func{}, byName: map[string][]*Func{}, ARM64: f.Machine == elf.EM_AARCH64}
	r := reader.New(d)
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("reading DWARF: %w", err)
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagCompileUnit:
			l.cu = e
			lang, _ := e.Val(dwarf.AttrLanguage).(int64)
			// DW_LANG_C_plus_plus, _03, _11, _14 (the C ones, and others, tag their types)
			l.cplus = lang == 0x4 || lang == 0x19 || lang == 0x1a || lang == 0x21
			continue
		case dwarf.TagSubprogram:
		default:
			continue
		}
		low, ok := e.Val(dwarf.AttrLowpc).(uint64)
		if !ok {
			// split into hot and cold parts, gcc gives DW_AT_ranges, the entry's
			// part first (or DW_AT_entry_pc)
			if pc, isPC := e.Val(dwarf.AttrEntrypc).(uint64); isPC {
				low = pc
			} else if e.Val(dwarf.AttrRanges) != nil {
				if rs, err := d.Ranges(e); err == nil && len(rs) > 0 {
					low = rs[0][0]
				}
			}
		}
		if low == 0 {
			continue // a declaration or an abstract (inlined-only) instance
		}
		at := entry(low)
		fn, err := l.function(e, low, at, syms[at], best[at].Name)
		r.SkipChildren()
		if err != nil {
			return nil, fmt.Errorf("function at %#x: %w", low, err)
		}
		if t.byEntry[at] != nil {
			continue
		}
		t.byEntry[at] = fn
		t.Funcs = append(t.Funcs, fn)
	}
	sort.Slice(t.Funcs, func(i, j int) bool { return t.Funcs[i].Entry < t.Funcs[j].Entry })
	for _, fn := range t.Funcs {
		names := []string{fn.Name}
		if i := strings.LastIndex(fn.Name, "::"); i >= 0 && !strings.Contains(fn.Name, "<") {
			names = append(names, fn.Name[i+2:])
		}
		if fn.Linkage != "" {
			names = append(names, fn.Linkage)
		}
		for _, n := range names {
			t.byName[n] = append(t.byName[n], fn)
		}
	}
	return t, nil
}

// cloneSuffix marks gcc's specialised copies of a function (foo.constprop.0,
// foo.isra.0, foo.part.0): gcc may have dropped or split their parameters.
var cloneSuffix = regexp.MustCompile(`\.(constprop|isra|part|cold|lto_priv)(\.|$)`)

type loader struct {
	d     *dwarf.Data
	cu    *dwarf.Entry
	cplus bool // the unit is C++: struct names without their tag
	cache map[dwarf.Offset]godwarf.Type
	// byRefCache: classes already judged by passByRef
	byRefCache map[dwarf.Offset]bool
	loc5       *loclist.Dwarf5Reader
	loc2       *loclist.Dwarf2Reader
	addr       *godwarf.DebugAddrSection
	arm64      bool // AAPCS64 (else x86-64 System V)
}

// maxPatchNops bounds the patchable-entry nops (and a bti) a symbol may have before the
// DW_AT_low_pc of its code.
const maxPatchNops = 8

// function is the plan of the subprogram e whose code starts at low (where its
// parameters' locations are looked up), entered at entry, where syms are and best names
// it for the runtime and the readers.
func (l *loader) function(e *dwarf.Entry, low, entry uint64, syms []string, best string) (*Func, error) {
	tree, err := godwarf.LoadTree(e.Offset, l.d, 0)
	if err != nil {
		return nil, err
	}
	fn := &Func{Entry: entry}
	name, _ := tree.Val(dwarf.AttrName).(string)
	fn.Linkage, _ = tree.Val(dwarf.AttrLinkageName).(string)
	if fn.Linkage == "" {
		fn.Linkage, _ = tree.Val(dwarf.Attr(0x2007)).(string) // DW_AT_MIPS_linkage_name
	}
	if fn.Linkage == "" && l.cplus {
		// gcc gives a C++ function of internal linkage (static, or in an anonymous
		// namespace) no linkage name: its symbol is one, and the runtime matches by it
		// (its bare name would match nothing: the leveldb trial's -a showed no values).
		// Of aliases (a constructor's C1 and C2), the one the runtime names the address
		// by: without a compiler suffix, then the greatest (ftrace_elf.c's sym_cmp);
		// another matched nothing there.
		for _, s := range syms {
			if !strings.HasPrefix(s, "_Z") {
				continue
			}
			dot, cur := strings.Contains(s, "."), strings.Contains(fn.Linkage, ".")
			if fn.Linkage == "" || cur && !dot || cur == dot && s > fn.Linkage {
				fn.Linkage = s
			}
		}
	}
	fn.Name = name
	if fn.Linkage == "" && best != "" && best != name && slices.Contains(syms, name) {
		// a C function known by two symbols: the name the runtime and the readers give
		// the address (libxml2's xmlStrEqual, a global alias of its local
		// xmlStrEqual__internal_alias, which DWARF names): specs by the local one
		// matched nothing at record time
		fn.Name = best
	}
	if fn.Linkage != "" {
		// the qualified name with template arguments: ns::Cls::get<int>
		if dm, err := demangle.ToString(fn.Linkage, demangle.NoParams); err == nil {
			fn.Name = dm
		}
	}
	if fn.Name == "" && len(syms) > 0 {
		fn.Name = syms[0]
	}
	fn.Clone = len(syms) > 0
	for _, s := range syms {
		if cloneSuffix.MatchString(s) {
			fn.Unsure = fmt.Sprintf("%s is a gcc clone: its arguments may differ from the declaration's", s)
			fn.CloneSym = s
		} else {
			fn.Clone = false
		}
	}
	if !fn.Clone {
		fn.CloneSym = ""
	}
	var params []*Arg
	var dwarfRegs [][]Reg
	for _, c := range tree.Children {
		switch c.Tag {
		case dwarf.TagUnspecifiedParameters:
			fn.Variadic = true
			continue
		case dwarf.TagFormalParameter:
		default:
			continue
		}
		a := &Arg{}
		a.Name, _ = c.Val(dwarf.AttrName).(string)
		if a.Name == "" {
			a.Name = fmt.Sprintf("arg%d", len(params)+1)
		}
		gt, err := c.Type(l.d, 0, l.cache)
		if err != nil {
			a.Type = &Type{Kind: KUnknown, Name: "?"}
			if fn.Unsure == "" {
				fn.Unsure = fmt.Sprintf("parameter %s: %v", a.Name, err)
			}
		} else {
			a.Type = l.conv(gt, 0)
		}
		if art, _ := c.Val(dwarf.AttrArtificial).(bool); art && a.Type.Elem != nil &&
			(a.Type.Elem.StdString || a.Type.Elem.StringView) {
			// a std::string's or string_view's own this: a constructor's is not one yet
			e := *a.Type.Elem
			e.StdString, e.StringView = false, false
			t := *a.Type
			t.Elem = &e
			a.Type = &t
		}
		params = append(params, a)
		dwarfRegs = append(dwarfRegs, l.entryRegs(c, low))
	}
	if off, ok := tree.Val(dwarf.AttrType).(dwarf.Offset); ok {
		gt, err := godwarf.ReadType(l.d, 0, off, l.cache)
		if err != nil {
			return nil, fmt.Errorf("return type: %w", err)
		}
		if rt := l.conv(gt, 0); rt.Kind != KVoid {
			fn.Ret = &Arg{Name: "retval", Type: rt, Size: rt.Size}
		}
	}
	for _, a := range params {
		a.Size = a.Type.Size
		if a.Type.Kind == KUnknown && fn.Unsure == "" {
			fn.Unsure = fmt.Sprintf("parameter %s: type %q not modelled", a.Name, a.Type.Name)
		}
	}
	if l.arm64 {
		assignAAPCS64(params, fn.Ret)
	} else {
		assign(params, fn.Ret)
	}
	fn.Args = params
	// The compiler's own word where it gives one: a parameter still in its entry
	// register(s) at the entry address. It must agree with the ABI.
	for i, a := range params {
		regs := dwarfRegs[i]
		if regs == nil || len(regs) != len(a.Parts) || a.Indirect {
			continue
		}
		a.Confirmed = true
		for j, p := range a.Parts {
			if p.Stack || p.Reg != regs[j] {
				a.Confirmed = false
				if fn.Unsure == "" {
					fn.Unsure = fmt.Sprintf("parameter %s: DWARF has it in %%%s at entry, the ABI in %s", a.Name, regs[j], p)
				}
				break
			}
		}
	}
	return fn, nil
}

// entryRegs is the register(s) holding parameter c at pc according to its DWARF
// location, or nil when the location is not a plain register or register pieces.
func (l *loader) entryRegs(c *godwarf.Tree, pc uint64) []Reg {
	// with an abstract origin the entry is the concrete DIE then its origin: only
	// the concrete one has a location
	fld := c.AttrField(dwarf.AttrLocation)
	if fld == nil {
		return nil
	}
	var instr []byte
	switch fld.Class {
	case dwarf.ClassExprLoc:
		instr, _ = fld.Val.([]byte)
	case dwarf.ClassLocListPtr, dwarf.ClassLocList:
		off, ok := fld.Val.(int64)
		if !ok || l.cu == nil {
			return nil
		}
		base, _ := l.cu.Val(dwarf.AttrLowpc).(uint64)
		var ent *loclist.Entry
		var err error
		if !l.loc5.Empty() {
			var da *godwarf.DebugAddr
			if ab, ok := l.cu.Val(dwarf.AttrAddrBase).(int64); ok {
				da = l.addr.GetSubsection(uint64(ab))
			}
			ent, err = l.loc5.Find(int(off), 0, base, pc, da)
		} else if !l.loc2.Empty() {
			ent, err = l.loc2.Find(int(off), 0, base, pc, nil)
		}
		if err != nil || ent == nil {
			return nil
		}
		instr = ent.Instr
	}
	if len(instr) == 0 || !(instr[0] >= byte(op.DW_OP_reg0) && instr[0] <= byte(op.DW_OP_reg31) || instr[0] == byte(op.DW_OP_regx)) {
		return nil // only register locations: no memory to read, no frame base
	}
	_, pieces, err := op.ExecuteStackProgram(op.DwarfRegisters{}, instr, 8, nil)
	if err != nil {
		return nil
	}
	var regs []Reg
	for _, p := range pieces {
		if p.Kind != op.RegPiece || (p.Size != 0 && p.Size != 8 && len(pieces) > 1) {
			return nil
		}
		r := Reg(p.Val)
		if l.arm64 {
			var ok bool
			if r, ok = a64Reg(p.Val); !ok {
				return nil
			}
		}
		regs = append(regs, r)
	}
	return regs
}

// conv turns a delve type into the printable model.
func (l *loader) conv(t godwarf.Type, depth int) *Type {
	if t == nil {
		return &Type{Kind: KVoid, Name: "void"}
	}
	size := int(t.Size())
	name := t.Common().Name
	switch t := t.(type) {
	case *godwarf.TypedefType:
		u := *l.conv(t.Type, depth)
		u.Name = t.Name
		return &u
	case *godwarf.QualType:
		u := *l.conv(t.Type, depth)
		u.Name = qualName(t.Qual, u.Name, u.Kind)
		return &u
	case *godwarf.VoidType:
		return &Type{Kind: KVoid, Name: "void"}
	case *godwarf.BoolType:
		return &Type{Kind: KBool, Name: name, Size: size}
	case *godwarf.CharType:
		// plain char prints as a character; signed char (int8_t) as a number
		if name == "char" {
			return &Type{Kind: KChar, Name: name, Size: size}
		}
		return &Type{Kind: KInt, Name: name, Size: size}
	case *godwarf.UcharType:
		if name == "char" { // plain char is unsigned on aarch64
			return &Type{Kind: KChar, Name: name, Size: size}
		}
		return &Type{Kind: KUint, Name: name, Size: size}
	case *godwarf.IntType:
		return &Type{Kind: KInt, Name: name, Size: size}
	case *godwarf.UintType:
		return &Type{Kind: KUint, Name: name, Size: size}
	case *godwarf.FloatType:
		return &Type{Kind: KFloat, Name: name, Size: size}
	case *godwarf.ComplexType:
		return &Type{Kind: KComplex, Name: name, Size: size}
	case *godwarf.EnumType:
		et := &Type{Kind: KEnum, Name: l.tagged("enum", t.EnumName), Size: size}
		for _, v := range t.Val {
			et.Enums = append(et.Enums, EnumVal{Name: v.Name, Val: v.Val})
		}
		return et
	case *godwarf.PtrType:
		elem := l.shallow(t.Type)
		pt := &Type{Kind: KPtr, Name: ptrName(elem.Name, "*"), Size: 8, Elem: elem}
		if elem.Kind == KChar || charText(t.Type) {
			pt.Kind = KString
		}
		return pt
	case *godwarf.UnspecifiedType: // decltype(nullptr)
		return &Type{Kind: KPtr, Name: t.Name, Size: 8}
	case *godwarf.StructType:
		st := &Type{Kind: KStruct, Name: l.tagged(t.Kind, t.StructName), Size: size, Union: t.Kind == "union"}
		if t.Incomplete || depth > 8 {
			st.Kind = KUnknown
			return st
		}
		st.ByRef = l.passByRef(t.Offset)
		st.StdString = isStdString(t)
		st.StringView = isStringView(t)
		st.Fields = l.bases(t.Offset, depth)
		var raw []*dwarf.Entry // the member DIEs, for the bit-field positions
		for i, f := range t.Field {
			ft := l.conv(f.Type, depth+1)
			fd := Field{Name: f.Name, Off: int(f.ByteOffset), Type: ft}
			if f.BitSize != 0 {
				if raw == nil {
					raw = l.members(t.Offset)
				}
				fd.BitSize = int(f.BitSize)
				// delve keeps only DWARF 2's big-endian DW_AT_bit_offset; gcc 12
				// writes DW_AT_data_bit_offset (from the start of the struct)
				bit := -1
				if i < len(raw) {
					if dbo, ok := raw[i].Val(dwarf.AttrDataBitOffset).(int64); ok {
						bit = int(dbo)
					}
				}
				if bit < 0 && f.ByteSize > 0 {
					bit = int(f.ByteOffset*8 + f.ByteSize*8 - f.BitOffset - f.BitSize)
				}
				if bit < 0 {
					st.Kind = KUnknown
					return st
				}
				fd.Off, fd.BitOff = bit/8, bit%8
			}
			st.Fields = append(st.Fields, fd)
		}
		return st
	case *godwarf.ArrayType:
		return &Type{Kind: KArray, Name: t.String(), Size: size, Elem: l.conv(t.Type, depth+1), Count: int(t.Count)}
	case *godwarf.UnsupportedType:
		if t.Tag == dwarf.TagReferenceType || t.Tag == dwarf.TagRvalueReferenceType {
			rt := &Type{Kind: KRef, Size: 8}
			elem := &Type{Kind: KUnknown, Name: "?"}
			if off, ok := l.attrOf(t.Offset, dwarf.AttrType).(dwarf.Offset); ok {
				if et, err := godwarf.ReadType(l.d, 0, off, l.cache); err == nil {
					elem = l.shallow(et)
				}
			}
			rt.Elem = elem
			rt.Name = ptrName(elem.Name, "&")
			if t.Tag == dwarf.TagRvalueReferenceType {
				rt.Name += "&"
			}
			return rt
		}
		if t.Tag == dwarf.TagPtrToMemberType {
			return &Type{Kind: KPtr, Name: "pointer to member", Size: size}
		}
	}
	return &Type{Kind: KUnknown, Name: name, Size: size}
}

// isStdString: is t libstdc++'s std::string of the C++11 ABI (basic_string<char, …>,
// 32 bytes: _M_dataplus._M_p, the data pointer, at 0 and _M_string_length at 8)? The
// runtime reads its text through that layout, so the layout is checked, not the name
// alone: the old copy-on-write string (8 bytes, the length before the data) and libc++'s
// (24 bytes) have other ones and are not.
func isStdString(t *godwarf.StructType) bool {
	if !strings.HasPrefix(t.StructName, "basic_string<char,") || t.ByteSize != 32 {
		return false
	}
	hider, ok := bare(fieldAt(t, "_M_dataplus", 0)).(*godwarf.StructType)
	return ok && isPtr(fieldAt(hider, "_M_p", 0)) && isWord(fieldAt(t, "_M_string_length", 8))
}

// isStringView: is t libstdc++'s std::string_view (basic_string_view<char, …>, 16 bytes:
// _M_len at 0, _M_str, the data pointer, at 8)?
func isStringView(t *godwarf.StructType) bool {
	return strings.HasPrefix(t.StructName, "basic_string_view<char,") && t.ByteSize == 16 &&
		isWord(fieldAt(t, "_M_len", 0)) && isPtr(fieldAt(t, "_M_str", 8))
}

// fieldAt is the type of t's member name at byte offset off, nil without one.
func fieldAt(t *godwarf.StructType, name string, off int64) godwarf.Type {
	for _, f := range t.Field {
		if f.Name == name && f.ByteOffset == off {
			return f.Type
		}
	}
	return nil
}

func isPtr(t godwarf.Type) bool {
	_, ok := bare(t).(*godwarf.PtrType)
	return ok
}

func isWord(t godwarf.Type) bool { return t != nil && t.Size() == 8 }

// bare is t without typedefs and qualifiers (nil stays nil).
func bare(t godwarf.Type) godwarf.Type {
	for {
		switch u := t.(type) {
		case *godwarf.TypedefType:
			t = u.Type
		case *godwarf.QualType:
			t = u.Type
		default:
			return t
		}
	}
}

// charText: is t a character type by another name, whose pointers are text (libxml2's
// xmlChar, glib's guchar: unsigned char, shown as pointers in hex), but not the byte
// integers int8_t and uint8_t (buffers)?
func charText(t godwarf.Type) bool {
	for {
		switch u := t.(type) {
		case *godwarf.TypedefType:
			switch u.Name {
			case "int8_t", "uint8_t", "__int8_t", "__uint8_t":
				return false
			}
			t = u.Type
		case *godwarf.QualType:
			t = u.Type
		case *godwarf.CharType, *godwarf.UcharType:
			return true
		default:
			return false
		}
	}
}

// qualName spells a qualified type: "const char" but "char *const" (a qualified
// pointer has its qualifier after the star).
func qualName(qual, name string, k Kind) string {
	if k == KPtr || k == KString || k == KRef {
		return name + qual
	}
	return qual + " " + name
}

// ptrName spells a pointer or reference to a type called elem: "char *", "char **".
func ptrName(elem, op string) string {
	if strings.HasSuffix(elem, "*") || strings.HasSuffix(elem, "&") {
		return elem + op
	}
	return elem + " " + op
}

// tagged is a struct, union or enum type's name as the source language writes it: with
// its tag in C ("struct point"), bare in C++; the tag alone when it has no name.
func (l *loader) tagged(tag, name string) string {
	switch {
	case name == "":
		return tag
	case l.cplus:
		return name
	}
	return tag + " " + name
}

// shallow is a pointee's model: its kind and name, without members.
func (l *loader) shallow(t godwarf.Type) *Type {
	if t == nil {
		return &Type{Kind: KVoid, Name: "void"}
	}
	switch u := t.(type) {
	case *godwarf.StructType:
		return &Type{Kind: KStruct, Name: l.tagged(u.Kind, u.StructName), Size: int(u.ByteSize), StdString: isStdString(u),
			StringView: isStringView(u)}
	case *godwarf.FuncType:
		return &Type{Kind: KUnknown, Name: "function"}
	case *godwarf.PtrType:
		e := l.shallow(u.Type)
		return &Type{Kind: KPtr, Name: ptrName(e.Name, "*"), Size: 8}
	case *godwarf.TypedefType:
		e := *l.shallow(u.Type)
		e.Name = u.Name
		return &e
	case *godwarf.QualType:
		e := *l.shallow(u.Type)
		e.Name = qualName(u.Qual, e.Name, e.Kind)
		return &e
	}
	return l.conv(t, 9)
}

func (l *loader) attrOf(off dwarf.Offset, a dwarf.Attr) any {
	r := l.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil
	}
	return e.Val(a)
}

// passByRef reports whether the class at off is passed and returned through a hidden
// pointer: "non-trivial for the purposes of calls" in the Itanium C++ ABI. clang says
// so with DW_AT_calling_convention; gcc 12 does not, so it is inferred as the ABI
// defines it: a user-provided copy or move constructor or destructor, virtual
// functions or bases, or a base or member that is itself such a class.
func (l *loader) passByRef(off dwarf.Offset) bool {
	return l.byRef(off, 0)
}

func (l *loader) byRef(off dwarf.Offset, depth int) bool {
	if v, ok := l.byRefCache[off]; ok {
		return v
	}
	if depth > 8 {
		return false
	}
	l.byRefCache[off] = false // a cycle through pointers cannot make it true
	v := l.byRefUncached(off, depth)
	l.byRefCache[off] = v
	return v
}

func (l *loader) byRefUncached(off dwarf.Offset, depth int) bool {
	r := l.d.Reader()
	r.Seek(off)
	cls, err := r.Next()
	if err != nil || cls == nil {
		return false
	}
	if cc, ok := cls.Val(dwarf.Attr(0x36)).(int64); ok { // DW_AT_calling_convention
		return cc == 4 // DW_CC_pass_by_reference
	}
	name, _ := cls.Val(dwarf.AttrName).(string)
	if i := strings.IndexByte(name, '<'); i >= 0 {
		name = name[:i] // a template's constructors are named without the arguments
	}
	for _, c := range l.children(r, cls) {
		switch c.e.Tag {
		case dwarf.TagInheritance:
			if v, _ := c.e.Val(dwarf.AttrVirtuality).(int64); v != 0 {
				return true
			}
			if b, ok := c.e.Val(dwarf.AttrType).(dwarf.Offset); ok && l.byRef(l.stripCV(b), depth+1) {
				return true
			}
		case dwarf.TagMember:
			if n, _ := c.e.Val(dwarf.AttrName).(string); strings.HasPrefix(n, "_vptr") {
				return true
			}
			if ext, _ := c.e.Val(dwarf.AttrExternal).(bool); ext {
				continue // a static member (DWARF 4)
			}
			if t, ok := c.e.Val(dwarf.AttrType).(dwarf.Offset); ok && l.isClass(l.stripCV(t)) && l.byRef(l.stripCV(t), depth+1) {
				return true
			}
		case dwarf.TagSubprogram:
			if art, _ := c.e.Val(dwarf.AttrArtificial).(bool); art {
				continue
			}
			if def, _ := c.e.Val(dwarf.Attr(0x8b)).(int64); def == 1 { // DW_AT_defaulted: in class
				continue // as trivial as its members make it, checked above
			}
			if v, _ := c.e.Val(dwarf.AttrVirtuality).(int64); v != 0 {
				return true
			}
			n, _ := c.e.Val(dwarf.AttrName).(string)
			if strings.HasPrefix(n, "~") {
				return true
			}
			if n == name && l.isCopyOrMove(c.kids, off) {
				return true
			}
		}
	}
	return false
}

type dieKids struct {
	e    *dwarf.Entry
	kids []*dwarf.Entry // the direct children of a subprogram (its parameters)
}

// children returns e's direct children, each subprogram with its own children.
func (l *loader) children(r *dwarf.Reader, e *dwarf.Entry) []dieKids {
	var out []dieKids
	if !e.Children {
		return nil
	}
	for {
		c, err := r.Next()
		if err != nil || c == nil || c.Tag == 0 {
			return out
		}
		k := dieKids{e: c}
		if c.Children {
			if c.Tag == dwarf.TagSubprogram {
				for {
					g, err := r.Next()
					if err != nil || g == nil || g.Tag == 0 {
						break
					}
					k.kids = append(k.kids, g)
					if g.Children {
						r.SkipChildren()
					}
				}
			} else {
				r.SkipChildren()
			}
		}
		out = append(out, k)
	}
}

// isCopyOrMove reports whether a constructor's parameters are those of a copy or move
// constructor of the class at cls: one (non-artificial) reference to the class.
func (l *loader) isCopyOrMove(params []*dwarf.Entry, cls dwarf.Offset) bool {
	var real []*dwarf.Entry
	for _, p := range params {
		if p.Tag != dwarf.TagFormalParameter {
			continue
		}
		if art, _ := p.Val(dwarf.AttrArtificial).(bool); !art {
			real = append(real, p)
		}
	}
	if len(real) != 1 {
		return false
	}
	t, ok := real[0].Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return false
	}
	r := l.d.Reader()
	r.Seek(t)
	e, err := r.Next()
	if err != nil || e == nil || (e.Tag != dwarf.TagReferenceType && e.Tag != dwarf.TagRvalueReferenceType) {
		return false
	}
	to, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	return ok && l.stripCV(to) == cls
}

// stripCV follows const/volatile (and typedefs) from the type at off.
func (l *loader) stripCV(off dwarf.Offset) dwarf.Offset {
	for i := 0; i < 16; i++ {
		r := l.d.Reader()
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			return off
		}
		switch e.Tag {
		case dwarf.TagConstType, dwarf.TagVolatileType, dwarf.TagTypedef:
			next, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
			if !ok {
				return off
			}
			off = next
		default:
			return off
		}
	}
	return off
}

func (l *loader) isClass(off dwarf.Offset) bool {
	r := l.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	return err == nil && e != nil && (e.Tag == dwarf.TagClassType || e.Tag == dwarf.TagStructType || e.Tag == dwarf.TagUnionType)
}

// members are the DW_TAG_member children of the struct at off, in order.
func (l *loader) members(off dwarf.Offset) []*dwarf.Entry {
	r := l.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil
	}
	var out []*dwarf.Entry
	for _, c := range l.children(r, e) {
		if c.e.Tag == dwarf.TagMember {
			out = append(out, c.e)
		}
	}
	return out
}

// bases are the class's base-class subobjects as members (delve's types leave them
// out; the calling convention and the printing need their fields).
func (l *loader) bases(off dwarf.Offset, depth int) []Field {
	r := l.d.Reader()
	r.Seek(off)
	cls, err := r.Next()
	if err != nil || cls == nil {
		return nil
	}
	var out []Field
	for _, c := range l.children(r, cls) {
		if c.e.Tag != dwarf.TagInheritance {
			continue
		}
		bo, ok := c.e.Val(dwarf.AttrType).(dwarf.Offset)
		loc, ok2 := c.e.Val(dwarf.AttrDataMemberLoc).(int64)
		if !ok || !ok2 {
			continue
		}
		bt, err := godwarf.ReadType(l.d, 0, bo, l.cache)
		if err != nil {
			continue
		}
		b := l.conv(bt, depth+1)
		out = append(out, Field{Name: b.Name, Off: int(loc), Type: b})
	}
	return out
}
