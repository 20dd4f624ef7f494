package fnargs

import (
	"math"
	"testing"
)

func TestFormatValue(t *testing.T) {
	i32 := &Type{Kind: KInt, Name: "int", Size: 4}
	u8 := &Type{Kind: KUint, Name: "unsigned char", Size: 1}
	color := &Type{Kind: KEnum, Name: "color", Size: 4, Enums: []EnumVal{{"RED", 0}, {"BLUE", -1}}}
	flags := &Type{Kind: KStruct, Name: "flags", Size: 4, Fields: []Field{
		{Name: "on", Off: 0, Type: &Type{Kind: KBool, Name: "_Bool", Size: 1}, BitSize: 1},
		{Name: "mode", Off: 0, Type: i32, BitSize: 3, BitOff: 1},
		{Name: "n", Off: 1, Type: u8},
	}}
	point := &Type{Kind: KStruct, Name: "point", Size: 12, Fields: []Field{
		{Name: "c", Off: 0, Type: color},
		{Name: "xy", Off: 4, Type: &Type{Kind: KArray, Size: 8, Count: 2, Elem: &Type{Kind: KFloat, Name: "float", Size: 4}}},
	}}
	big := &Type{Kind: KStruct, Name: "big", Size: 48, Fields: []Field{{Name: "a", Off: 0, Type: i32}, {Name: "z", Off: 40, Type: i32}}}
	un := &Type{Kind: KStruct, Name: "u", Size: 8, Union: true, Fields: []Field{{Name: "i", Off: 0, Type: i32}, {Name: "d", Off: 0, Type: &Type{Kind: KFloat, Size: 8}}}}
	str := &Type{Kind: KString, Name: "const char *", Size: 8}
	f32f := &Type{Kind: KFloat, Name: "float", Size: 4}
	vec3 := &Type{Kind: KStruct, Name: "vec3", Size: 12, Fields: []Field{{Name: "x", Type: f32f}, {Name: "y", Off: 4, Type: f32f}, {Name: "z", Off: 8, Type: f32f}}}
	f64, f32 := math.Float64bits, math.Float32bits
	tests := []struct {
		name string
		a    Arg
		v    Value
		want string
	}{
		{"int negative", Arg{Type: i32, Size: 4}, Value{Words: []uint64{0xdeadbeef_fffffffb}}, "-5"},
		{"long", Arg{Type: &Type{Kind: KInt, Size: 8}, Size: 8}, Value{Words: []uint64{1 << 40}}, "1099511627776"},
		{"unsigned char", Arg{Type: u8, Size: 1}, Value{Words: []uint64{0x1c8}}, "200"},
		{"bool", Arg{Type: &Type{Kind: KBool, Size: 1}, Size: 1}, Value{Words: []uint64{0x100}}, "false"},
		{"bool true", Arg{Type: &Type{Kind: KBool, Size: 1}, Size: 1}, Value{Words: []uint64{1}}, "true"},
		{"char", Arg{Type: &Type{Kind: KChar, Size: 1}, Size: 1}, Value{Words: []uint64{'q'}}, "'q'"},
		{"char quote", Arg{Type: &Type{Kind: KChar, Size: 1}, Size: 1}, Value{Words: []uint64{'\''}}, `'\''`},
		{"char nul", Arg{Type: &Type{Kind: KChar, Size: 1}, Size: 1}, Value{Words: []uint64{0}}, `'\x00'`},
		{"double", Arg{Type: &Type{Kind: KFloat, Size: 8}, Size: 8}, Value{Words: []uint64{f64(-0.25)}}, "-0.25"},
		{"float", Arg{Type: &Type{Kind: KFloat, Size: 4}, Size: 4}, Value{Words: []uint64{0xffffffff_00000000 | uint64(math.Float32bits(1.1))}}, "1.1"},
		{"long double", Arg{Type: &Type{Kind: KFloat, Name: "long double", Size: 16}, Size: 16}, Value{Words: []uint64{0xc000000000000000, 0xbfff}}, "-1.5"},
		{"long double 2^-3", Arg{Type: &Type{Kind: KFloat, Name: "long double", Size: 16}, Size: 16}, Value{Words: []uint64{1 << 63, 0x3ffc}}, "0.125"},
		{"long double inf", Arg{Type: &Type{Kind: KFloat, Name: "long double", Size: 16}, Size: 16}, Value{Words: []uint64{1 << 63, 0x7fff}}, "+Inf"},
		{"_Float128: low half only", Arg{Type: &Type{Kind: KFloat, Name: "_Float128", Size: 16}, Size: 16}, Value{Words: []uint64{1}}, "?"},
		{"complex", Arg{Type: &Type{Kind: KComplex, Size: 16}, Size: 16}, Value{Words: []uint64{f64(1), f64(-2)}}, "{1, -2}"},
		{"pointer", Arg{Type: &Type{Kind: KPtr, Size: 8}, Size: 8}, Value{Words: []uint64{0x7ffd1234}}, "0x7ffd1234"},
		{"null", Arg{Type: &Type{Kind: KPtr, Size: 8}, Size: 8}, Value{Words: []uint64{0}}, "NULL"},
		{"reference", Arg{Type: &Type{Kind: KRef, Size: 8}, Size: 8}, Value{Words: []uint64{0x10}}, "0x10"},
		{"enum", Arg{Type: color, Size: 4}, Value{Words: []uint64{0xffffffff}}, "BLUE"},
		{"enum unnamed value", Arg{Type: color, Size: 4}, Value{Words: []uint64{7}}, "7"},
		{"string", Arg{Type: str, Size: 8}, Value{Words: []uint64{0x1000}, Str: []byte("GET /")}, `"GET /"`},
		{"string escapes", Arg{Type: str, Size: 8}, Value{Words: []uint64{0x1000}, Str: []byte("a\"b\\\n\t\x01\xffc\x7f1")}, `"a\"b\\\n\t\x01\xff\x63\x7f\x31"`},
		{"string bad", Arg{Type: str, Size: 8}, Value{Words: []uint64{0x1}, StrBad: true}, "<bad>"},
		{"string null", Arg{Type: str, Size: 8}, Value{Words: []uint64{0}, StrBad: true}, "NULL"},
		{"string truncated", Arg{Type: str, Size: 8}, Value{Words: []uint64{0x1000}, Str: []byte("abc"), StrTrunc: true}, `"abc"...`},
		{"struct in two words", Arg{Type: point, Size: 12}, Value{Words: []uint64{uint64(math.Float32bits(1.5))<<32 | 0xffffffff, uint64(math.Float32bits(-2))}}, "{c=BLUE, xy={1.5, -2}}"},
		{"arm64 floats, a v register each", Arg{Type: vec3, Size: 12, PartSize: 4},
			Value{Words: []uint64{0xdead0000_00000000 | uint64(f32(1.5)), uint64(f32(-2)), uint64(f32(0.25))}}, "{x=1.5, y=-2, z=0.25}"},
		{"arm64 floats, last missing", Arg{Type: vec3, Size: 12, PartSize: 4}, Value{Words: []uint64{uint64(f32(1.5)), uint64(f32(-2))}}, "{x=1.5, y=-2, ...}"},
		{"bit-fields", Arg{Type: flags, Size: 4}, Value{Words: []uint64{0x2a0b}}, "{on=true, mode=-3, n=42}"},
		{"union: every member", Arg{Type: un, Size: 8}, Value{Words: []uint64{0x4014000000000000}}, "{i=0, d=5}"},
		{"anonymous member", Arg{Type: &Type{Kind: KStruct, Size: 12, Fields: []Field{{Name: "n", Type: i32}, {Off: 4, Type: un}}}, Size: 12},
			Value{Words: []uint64{3 | 9<<32, 0}}, "{n=3, {i=9, d=4.4e-323}}"},
		{"big, recorded in part", Arg{Type: big, Size: 48}, Value{Words: []uint64{9, 0, 0, 0}}, "{a=9, ...}"},
		{"indirect", Arg{Type: big, Size: 48, Indirect: true}, Value{Words: []uint64{0x7000}}, "0x7000"},
		{"nothing recorded", Arg{Type: i32, Size: 4}, Value{}, "?"},
		{"spec d32", Arg{Fmt: FInt, Size: 4}, Value{Words: []uint64{0x1_ffffffff}}, "-1"},
		{"spec d64", Arg{Fmt: FInt, Size: 8}, Value{Words: []uint64{0x1_ffffffff}}, "8589934591"},
		{"spec u8", Arg{Fmt: FUint, Size: 1}, Value{Words: []uint64{0x1ff}}, "255"},
		{"spec x", Arg{Fmt: FHex, Size: 8}, Value{Words: []uint64{0xabc}}, "0xabc"},
		{"spec x16", Arg{Fmt: FHex, Size: 2}, Value{Words: []uint64{0x12345}}, "0x2345"},
		{"spec c", Arg{Fmt: FChar, Size: 1}, Value{Words: []uint64{'\n'}}, `'\n'`},
		{"spec f32", Arg{Fmt: FFloat, Size: 4}, Value{Words: []uint64{uint64(math.Float32bits(0.5))}}, "0.5"},
		{"spec f64", Arg{Fmt: FFloat, Size: 8}, Value{Words: []uint64{f64(1e300)}}, "1e+300"},
		{"spec p", Arg{Fmt: FPtr, Size: 8}, Value{Words: []uint64{0xff}}, "0xff"},
		{"spec s", Arg{Fmt: FString, Size: 8}, Value{Words: []uint64{8}, Str: []byte("x")}, `"x"`},
		{"spec s bad", Arg{Fmt: FString, Size: 8}, Value{Words: []uint64{8}, StrBad: true}, "<bad>"},
		{"no type, no format", Arg{}, Value{Words: []uint64{255}}, "0xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatValue(&tt.a, tt.v); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFormatCall(t *testing.T) {
	f := &Func{Name: "parse",
		Args: []*Arg{
			{Name: "buf", Type: &Type{Kind: KString, Size: 8}, Size: 8},
			{Name: "len", Type: &Type{Kind: KUint, Size: 8}, Size: 8},
		},
		Ret: &Arg{Name: "retval", Type: &Type{Kind: KInt, Size: 4}, Size: 4},
	}
	args := []Value{{Words: []uint64{0x1000}, Str: []byte("GET /")}, {Words: []uint64{5}}}
	ret := Value{Words: []uint64{0xffffffff}}
	if got, want := FormatCall(f, args, &ret), `parse(buf="GET /", len=5) = -1`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := FormatCall(f, args[:1], nil), `parse(buf="GET /", len=?)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestSplit(t *testing.T) {
	f := &Func{Name: "f", Args: []*Arg{
		{Name: "s", Type: &Type{Kind: KString, Size: 8}, Size: 8, Parts: []Loc{{Reg: RDI}}},
		{Name: "p", Type: &Type{Kind: KStruct, Size: 16, Fields: []Field{{Name: "a", Type: &Type{Kind: KInt, Size: 8}}, {Name: "b", Off: 8, Type: &Type{Kind: KInt, Size: 8}}}}, Size: 16, Parts: []Loc{{Reg: RSI}, {Reg: RDX}}},
		{Name: "t", Fmt: FString, Size: 8, Parts: []Loc{{Stack: true, Off: 8}}},
	}}
	strs := []Value{{Str: []byte("one")}, {StrBad: true}}
	for _, tt := range []struct {
		words []uint64
		want  string
	}{
		{[]uint64{0x10, 1, 2, 0x20}, `s="one", p={a=1, b=2}, t=<bad>`},
		{[]uint64{0x10, 1}, `s="one", p={a=1, ...}, t=?`},
		{nil, `s=?, p=?, t=?`},
	} {
		if got := FormatArgs(f, Split(f, tt.words, strs)); got != tt.want {
			t.Errorf("%v: got %s, want %s", tt.words, got, tt.want)
		}
	}
}

// FuzzParseSpec: any text is parsed or refused with an error naming it, never a panic,
// and what parses has one location per argument.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"parse@arg1/s,arg2", "f*@fparg2/f32%xmm3,arg9%stack+2", "g@retval/x16", "@", "a@b@arg1/", "x@arg1/d", "x@arg1/%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (*Spec, error){ParseArgSpec, ParseRetSpec} {
			sp, err := parse(s)
			if err != nil {
				continue
			}
			for _, a := range append(sp.Args, sp.Ret) {
				if a != nil && (len(a.Parts) != 1 || a.Size < 1 || a.Size > 8) {
					t.Errorf("%q: %s", s, a)
				}
			}
		}
	})
}
