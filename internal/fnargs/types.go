// Package fnargs describes the arguments and return values of a program's functions
// for recording them at function entry and exit (issue 16): from an ELF file's DWARF,
// each function's formal parameters and return type, their x86-64 System V (or arm64
// AAPCS64) locations at entry (registers, or stack words above the entry stack pointer),
// and a small printable type model; from uftrace-style specs (`func@arg1,arg2/s,fparg1`, `func@retval/x`), the
// same recording plan without DWARF. Format prints recorded words as `name=value`.
package fnargs

import "fmt"

// Kind is what a value is for printing and for the calling convention.
type Kind uint8

// The kinds of the type model.
const (
	KUnknown Kind = iota
	KVoid
	KInt     // signed integer
	KUint    // unsigned integer
	KBool    // bool / _Bool
	KChar    // char, signed char, unsigned char: printed as a character
	KFloat   // float, double (long double: Size 16, passed in memory)
	KComplex // _Complex float/double: printed as two floats
	KPtr     // a pointer other than a string: printed in hex
	KString  // char * / const char *: the bytes it points to are copied at record time
	KEnum    // printed by name
	KRef     // C++ lvalue or rvalue reference: printed as the address
	KStruct  // struct, class or union passed by value
	KArray   // an array member of a struct (Elem, Count)
)

var kindNames = [...]string{"unknown", "void", "int", "uint", "bool", "char", "float", "complex", "pointer", "string", "enum", "reference", "struct", "array"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Type is the printable model of a C or C++ type: typedefs and qualifiers resolved for
// Kind, the name as written in the source kept for display.
type Type struct {
	Kind Kind
	Name string // C/C++ spelling, e.g. "const char *", "size_t", "std::string &"
	Size int    // bytes
	// Elem is the pointee of a KPtr, KString or KRef (kind and name only: pointed-to
	// values are not recorded).
	Elem   *Type
	Enums  []EnumVal // KEnum
	Fields []Field   // KStruct: the data members with their byte offsets
	Union  bool      // KStruct: a union (members overlap)
	// ByRef: a C++ class with a non-trivial copy constructor or destructor, which the
	// ABI passes and returns through a hidden pointer (DW_AT_calling_convention).
	ByRef bool
	// Count is the element count of a KArray (Elem is then the element type).
	Count int
	// StdString: a KStruct laid out as libstdc++'s std::string (the C++11 ABI's
	// basic_string<char>: the data pointer at 0, the length at 8), whose text the
	// runtime copies when a recorded word is its address.
	StdString bool
	// StringView: a KStruct laid out as libstdc++'s std::string_view (basic_string_view
	// <char>: the length at 0, the data pointer at 8), passed or returned in two words
	// whose second's bytes the runtime copies, as many as the first says.
	StringView bool
}

// EnumVal is one enumerator.
type EnumVal struct {
	Name string
	Val  int64
}

// Field is one data member of a struct or union.
type Field struct {
	Name string
	Off  int
	Type *Type
	// BitSize and BitOff describe a bit-field (BitOff counted from the least
	// significant bit of the byte at Off); BitSize 0 for an ordinary member.
	BitSize, BitOff int
}

// Signed reports whether integer values of t are sign-extended.
func (t *Type) Signed() bool {
	switch t.Kind {
	case KInt:
		return true
	case KChar:
		return t.Name == "char" || t.Name == "signed char"
	case KEnum:
		for _, e := range t.Enums {
			if e.Val < 0 {
				return true
			}
		}
	}
	return false
}
