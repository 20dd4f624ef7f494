package fnargs

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is what was recorded of one Arg: its words in the order of Arg.Parts (fewer
// when the recording was cut short), and for a string the bytes read at its address.
type Value struct {
	Words []uint64
	Str   []byte // the bytes read, without the terminating NUL
	// StrBad: the read failed (a bad pointer); StrTrunc: the copy stopped at its bound
	// before a NUL; StrUnread: not read (the recorder had no fault-safe read there).
	StrBad, StrTrunc, StrUnread bool
}

// FormatArgs prints a call's arguments as `name=value, ...` (vals in the order of
// f.Args; a missing value prints as "?").
func FormatArgs(f *Func, vals []Value) string {
	var b strings.Builder
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Name)
		b.WriteByte('=')
		if i < len(vals) {
			b.WriteString(FormatValue(a, vals[i]))
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// FormatCall prints `name(args)`, and ` = ret` when ret is not nil and f has a Ret.
func FormatCall(f *Func, args []Value, ret *Value) string {
	s := f.Name + "(" + FormatArgs(f, args) + ")"
	if ret != nil && f.Ret != nil {
		s += " = " + FormatValue(f.Ret, *ret)
	}
	return s
}

// FormatValue prints one recorded value by the arg's format, else by its type.
func FormatValue(a *Arg, v Value) string {
	if len(v.Words) == 0 {
		return "?"
	}
	if a.stdString() || a.viewAt() {
		return str(v)
	}
	if a.stringView() {
		return counted(v)
	}
	if a.Indirect {
		return ptr(v.Words[0])
	}
	// strings first: the commonest values, and they need no copy of the words
	if a.Fmt == FString || a.Fmt == FAuto && a.Type != nil && a.Type.Kind == KString {
		return str(v)
	}
	raw := words(a, v.Words)
	size := a.Size
	if size <= 0 || size > len(raw) {
		size = min(8, len(raw))
		if a.Type != nil && a.Type.Kind == KStruct {
			size = len(raw)
		}
	}
	switch a.Fmt {
	case FInt:
		return strconv.FormatInt(sext(raw[:size]), 10)
	case FUint:
		return strconv.FormatUint(zext(raw[:size]), 10)
	case FHex:
		return "0x" + strconv.FormatUint(zext(raw[:size]), 16)
	case FPtr:
		return ptr(v.Words[0])
	case FChar:
		return charLit(raw[0])
	case FFloat:
		return float(raw[:size])
	case FString:
		return str(v)
	}
	if a.Type == nil {
		return "0x" + strconv.FormatUint(v.Words[0], 16)
	}
	if a.Type.Kind == KString {
		return str(v)
	}
	return typed(a.Type, raw, len(raw), 0)
}

// words lays out the recorded words as the value's bytes: 8 of each, or a.PartSize.
func words(a *Arg, ws []uint64) []byte {
	step := 8
	if a.PartSize > 0 && a.PartSize < 8 {
		step = a.PartSize
	}
	raw := make([]byte, 8*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint64(raw[step*i:], w)
	}
	return raw[:step*len(ws)]
}

// typed prints the value of type t at the start of b; have is how many of t's bytes
// were recorded.
func typed(t *Type, b []byte, have, depth int) string {
	if have < t.Size && t.Kind != KStruct && t.Kind != KArray || have <= 0 && t.Size > 0 {
		return "?"
	}
	n := t.Size
	if n > len(b) {
		n = len(b)
	}
	switch t.Kind {
	case KInt:
		return strconv.FormatInt(sext(b[:n]), 10)
	case KUint:
		return strconv.FormatUint(zext(b[:n]), 10)
	case KBool:
		if zext(b[:n]) != 0 {
			return "true"
		}
		return "false"
	case KChar:
		return charLit(b[0])
	case KFloat:
		if n == 16 && isLongDouble(t) {
			return x87Float(b[:10])
		}
		return float(b[:n])
	case KComplex:
		h := n / 2
		return "{" + float(b[:h]) + ", " + float(b[h:n]) + "}"
	case KPtr, KRef, KString:
		return ptr(zext(b[:n]))
	case KEnum:
		var val int64
		if t.Signed() {
			val = sext(b[:n])
		} else {
			val = int64(zext(b[:n]))
		}
		for _, e := range t.Enums {
			if e.Val == val {
				return e.Name
			}
		}
		return strconv.FormatInt(val, 10)
	case KStruct:
		if depth > 4 {
			return "{...}"
		}
		var parts []string
		// a union's members overlap: each is shown, as gdb shows them (jq's jv: a
		// number read as its pointer member alone meant nothing)
		for _, f := range t.Fields {
			if f.Off >= len(b) || f.Off >= have {
				parts = append(parts, "...")
				break
			}
			s := ""
			if f.Name != "" { // an anonymous union or struct member: its braces only
				s = f.Name + "="
			}
			if f.BitSize > 0 {
				s += bitfield(f, b)
			} else {
				s += typed(f.Type, b[f.Off:], have-f.Off, depth+1)
			}
			parts = append(parts, s)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case KArray:
		var parts []string
		for i := 0; i < t.Count && t.Elem != nil && t.Elem.Size > 0; i++ {
			off := i * t.Elem.Size
			if off >= len(b) || off >= have {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, typed(t.Elem, b[off:], have-off, depth+1))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "0x" + strconv.FormatUint(zext(b[:min(n, 8)]), 16)
}

func bitfield(f Field, b []byte) string {
	var w [8]byte
	copy(w[:], b[f.Off:])
	v := binary.LittleEndian.Uint64(w[:]) >> uint(f.BitOff)
	if f.BitSize < 64 {
		v &= 1<<uint(f.BitSize) - 1
	}
	if f.Type != nil && f.Type.Signed() && f.BitSize < 64 && v&(1<<uint(f.BitSize-1)) != 0 {
		return strconv.FormatInt(int64(v)-1<<uint(f.BitSize), 10)
	}
	if f.Type != nil && f.Type.Kind == KBool {
		return strconv.FormatBool(v != 0)
	}
	if f.Type != nil && f.Type.Kind == KEnum {
		for _, e := range f.Type.Enums {
			if e.Val == int64(v) {
				return e.Name
			}
		}
	}
	return strconv.FormatUint(v, 10)
}

func sext(b []byte) int64 {
	switch len(b) {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	}
	return int64(zext(b))
}

func zext(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

func float(b []byte) string {
	switch len(b) {
	case 4:
		return strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 'g', -1, 32)
	case 8:
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64)
	}
	return fmt.Sprintf("<float%d?>", 8*len(b))
}

// x87Float prints an 80-bit x87 extended value (long double) through float64: the
// 64-bit mantissa has an explicit integer bit; 15-bit exponent biased by 16383.
func x87Float(b []byte) string {
	mant := binary.LittleEndian.Uint64(b)
	se := binary.LittleEndian.Uint16(b[8:])
	exp := int(se & 0x7fff)
	var v float64
	switch {
	case exp == 0x7fff && mant<<1 == 0:
		v = math.Inf(1)
	case exp == 0x7fff:
		return "nan"
	case exp == 0: // zero or denormal: far below float64's range
		v = math.Ldexp(float64(mant), -16382-63)
	default:
		v = math.Ldexp(float64(mant), exp-16383-63)
	}
	if se&0x8000 != 0 {
		v = -v
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func ptr(w uint64) string {
	if w == 0 {
		return "NULL"
	}
	return "0x" + strconv.FormatUint(w, 16)
}

// str prints a string the word points to: NULL for a null pointer.
func str(v Value) string {
	if len(v.Words) > 0 && v.Words[0] == 0 {
		return "NULL"
	}
	return counted(v)
}

// counted prints the bytes the trace recorded of a string, also of one whose length
// the trace recorded (a std::string_view's: its data pointer may be NULL when empty).
func counted(v Value) string {
	switch {
	case v.StrUnread:
		return "<unread>"
	case v.StrBad:
		return "<bad>"
	}
	s := quote(v.Str, '"')
	if v.StrTrunc {
		s += "..."
	}
	return s
}

func charLit(c byte) string { return quote([]byte{c}, '\'') }

// quote writes b as a C literal: the usual escapes, other control and non-ASCII
// bytes as \xHH. C reads a \x escape up to the last hex digit, so a hex digit right
// after one is escaped as well.
func quote(b []byte, q byte) string {
	const hex = "0123456789abcdef"
	s := make([]byte, 0, len(b)+2)
	s = append(s, q)
	hexPrev := false
	for _, c := range b {
		esc := ""
		switch c {
		case '\n':
			esc = `\n`
		case '\t':
			esc = `\t`
		case '\r':
			esc = `\r`
		case '\\':
			esc = `\\`
		case q:
			esc = `\` + string(q)
		}
		isHex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		switch {
		case esc != "":
			s = append(s, esc...)
			hexPrev = false
		case c < 0x20 || c >= 0x7f || hexPrev && isHex:
			s = append(s, '\\', 'x', hex[c>>4], hex[c&15])
			hexPrev = true
		default:
			s = append(s, c)
			hexPrev = false
		}
	}
	return string(append(s, q))
}

// Split turns what a call recorded — the words of every Part of f.Args in order, then
// one String per argument f.Strings lists (in that order) — into FormatArgs' values.
// Missing words leave the last values short ("?" when empty).
func Split(f *Func, words []uint64, strs []Value) []Value {
	vals := make([]Value, len(f.Args))
	si := 0
	for i, a := range f.Args {
		n := min(len(a.Parts), len(words))
		vals[i].Words, words = words[:n:n], words[n:]
		if a.isString() && si < len(strs) {
			vals[i].Str, vals[i].StrBad, vals[i].StrTrunc, vals[i].StrUnread = strs[si].Str, strs[si].StrBad, strs[si].StrTrunc, strs[si].StrUnread
			si++
		}
	}
	return vals
}
