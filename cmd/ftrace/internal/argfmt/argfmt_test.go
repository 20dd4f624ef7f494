package argfmt

import (
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Values recorded by spec print by their own format and size, without names.
func TestSpecValues(t *testing.T) {
	d := func(fmt, log2 int) byte { return byte(fmt | log2<<4) }
	str := d(tracefile.ArgFmtString, 3) | 0x40
	for _, tc := range []struct {
		items []tracefile.Value
		want  string
	}{
		{[]tracefile.Value{{Desc: d(tracefile.ArgFmtInt, 2), Word: 0xfffffff9}, {Desc: d(tracefile.ArgFmtInt, 3), Word: 0xfffffff9}}, "-7, 4294967289"},
		{[]tracefile.Value{{Desc: d(tracefile.ArgFmtHex, 3), Word: 255}, {Desc: d(tracefile.ArgFmtUint, 0), Word: 0x1ff}}, "0xff, 255"},
		{[]tracefile.Value{{Desc: d(tracefile.ArgFmtChar, 0), Word: 'A'}, {Desc: d(tracefile.ArgFmtPtr, 3), Word: 0}}, "'A', NULL"},
		{[]tracefile.Value{{Desc: d(tracefile.ArgFmtFloat, 3), Word: 0x4004000000000000}}, "2.5"},
		{[]tracefile.Value{{Desc: str, Word: 0x1000, Str: []byte("GET /")}, {Desc: str, Word: 16, StrFlags: tracefile.StrBad}}, `"GET /", <bad>`},
		{[]tracefile.Value{{Desc: str, Word: 0x1000, Str: []byte("yy"), StrFlags: tracefile.StrTrunc}, {Desc: str, StrFlags: tracefile.StrBad}}, `"yy"..., NULL`},
		{[]tracefile.Value{{Desc: str, Word: 0x1000, StrFlags: tracefile.StrUnread}}, "<unread>"},
		// a DWARF-formatted value without the DWARF: hex
		{[]tracefile.Value{{Desc: d(tracefile.ArgFmtAuto, 3), Word: 42}}, "0x2a"},
	} {
		var f Formatter
		fn := &symbolize.Func{Name: "f", Unknown: true}
		if got := f.Args(fn, &tracefile.Values{Items: tc.items}); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.items, got, tc.want)
		}
	}
}

// The values replace the parameter list, whatever parentheses it holds (a jsoncpp trial
// showed add(TestCase* (*)(this=..., factory=...) for a function-pointer parameter).
func TestWithArgs(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"parse", "parse(a=1)"},
		{"parse(char const*, int)", "parse(a=1)"},
		{"JsonTest::Runner::add(JsonTest::TestCase* (*)())", "JsonTest::Runner::add(a=1)"},
		{"f(void (*)(int), int (&) [3])", "f(a=1)"},
		{"S::get() const", "S::get(a=1)"},
		{"S::take(std::string&&) &&", "S::take(a=1)"},
		{"S::operator()(int)", "S::operator()(a=1)"},
		{"S::operator()", "S::operator()(a=1)"},
		{"g<(1>0)>(int)", "g<(1>0)>(a=1)"},
		{"S::~S() [deleting]", "S::~S(a=1) [deleting]"},
		{"f(int) [clone .isra.0]", "f(a=1) [clone .isra.0]"},
		{"f[abi:cxx11](int)", "f[abi:cxx11](a=1)"},
		{"h(int [2])", "h(a=1)"},
	} {
		if got := WithArgs(&symbolize.Func{Name: c.name}, "a=1"); got != c.want {
			t.Errorf("%q: %q, want %q", c.name, got, c.want)
		}
	}
}
