package filter

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
)

// Glob is a compiled shell pattern with the syntax of fnmatch(3) without flags, the one
// `ftrace record -F` hands to the runtime: `*` matches any run of characters (`/` and
// `:` included: C++ and file-like names), `?` one character, `[abc]`, `[a-z]`, `[!a]` or
// `[^a]` one of (or none of) a set, and `\` quotes the next character.
type Glob struct {
	src     string
	toks    []token
	matched atomic.Bool // a function of the trace matched (Filter.Unmatched)
}

type tokKind uint8

const (
	tokLit tokKind = iota
	tokAny
	tokStar
	tokClass
)

type token struct {
	kind   tokKind
	r      rune
	neg    bool
	ranges [][2]rune
}

// Compile parses pattern, refusing an empty pattern or a trailing backslash. A '[' that
// opens no class (none of its ']' closes it) is a '[' itself, as fnmatch(3) takes it: a
// C++ name with operator[] pasted from a report.
func Compile(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("pattern %q is not UTF-8", pattern)
	}
	g := &Glob{src: pattern}
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != tokStar { // ** is *
				g.toks = append(g.toks, token{kind: tokStar})
			}
		case '?':
			g.toks = append(g.toks, token{kind: tokAny})
		case '\\':
			if i+1 == len(rs) {
				return nil, fmt.Errorf("pattern %q ends with a lone backslash", pattern)
			}
			i++
			g.toks = append(g.toks, token{kind: tokLit, r: rs[i]})
		case '[':
			t, n, err := class(rs[i+1:])
			if errors.Is(err, errUnterminated) {
				g.toks = append(g.toks, token{kind: tokLit, r: '['})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %w", pattern, err)
			}
			g.toks = append(g.toks, t)
			i += n
		default:
			g.toks = append(g.toks, token{kind: tokLit, r: rs[i]})
		}
	}
	return g, nil
}

// class parses what follows a '[' up to its ']' and says how many runes it took.
func class(rs []rune) (token, int, error) {
	t := token{kind: tokClass}
	i := 0
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		t.neg = true
		i++
	}
	first := i
	for i < len(rs) {
		c := rs[i]
		if c == ']' && i > first { // a ']' first is one of the set
			return t, i + 1, nil
		}
		if c == '\\' && i+1 < len(rs) {
			i++
			c = rs[i]
		}
		lo, hi := c, c
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			hi = rs[i+2]
			if hi == '\\' && i+3 < len(rs) {
				hi = rs[i+3]
				i++
			}
			i += 2
			if hi < lo {
				return t, 0, fmt.Errorf("range %c-%c is backwards", lo, hi)
			}
		}
		t.ranges = append(t.ranges, [2]rune{lo, hi})
		i++
	}
	return t, 0, errUnterminated
}

var errUnterminated = errors.New("unterminated [")

func (t *token) in(r rune) bool {
	for _, x := range t.ranges {
		if r >= x[0] && r <= x[1] {
			return !t.neg
		}
	}
	return t.neg
}

// String is the pattern as written.
func (g *Glob) String() string { return g.src }

// Match reports whether the whole of s matches.
func (g *Glob) Match(s string) bool {
	if s == g.src {
		// the name itself, pasted from a report: its brackets ("f[abi:cxx11](int)",
		// "~S() [deleting]") are no classes then
		return true
	}
	rs := []rune(s)
	// backtracking over the last star only: enough for globs (a later star subsumes
	// what an earlier one would retry)
	ti, si := 0, 0
	star, starS := -1, 0
	for si < len(rs) {
		if ti < len(g.toks) {
			t := &g.toks[ti]
			switch {
			case t.kind == tokStar:
				star, starS = ti, si
				ti++
				continue
			case t.kind == tokAny,
				t.kind == tokLit && t.r == rs[si],
				t.kind == tokClass && t.in(rs[si]):
				ti++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		starS++
		ti, si = star+1, starS
	}
	for ti < len(g.toks) && g.toks[ti].kind == tokStar {
		ti++
	}
	return ti == len(g.toks)
}

// MatchFunc reports whether a function matches by any of its names: the name shown
// (demangled for C++), the symbol as in the symbol table, the shown name without a
// template's return type (`ns::f<int>(int)` for `int ns::f<int>(int)`), and either without
// its parameter list (`ns::f` for `ns::f(int)`), as the runtime matches `record -F`. The
// compiler's clones of a function match as it does (`f` matches `f.constprop.0`,
// `ns::f(int)` matches `ns::f(int) [clone .isra.0]`), as at record time.
func (g *Glob) MatchFunc(fn *symbolize.Func) bool {
	if fn == nil {
		return false
	}
	proper := nameProper(fn.Name)
	for _, s := range []string{fn.Name, fn.Raw, proper, shortName(fn.Name), shortName(proper), untagged(fn.Name),
		noABITags(shortName(proper))} {
		if s != "" && (g.Match(s) || g.matchOriginal(s)) {
			return true
		}
	}
	return false
}

// matchOriginal: s is a compiler's clone ("f.constprop.0", "ns::f(int) [clone .isra.0]",
// "_Z1fi.isra.0") and the glob matches the name of the function it copies.
func (g *Glob) matchOriginal(s string) bool {
	if i := strings.Index(s, " [clone ."); i > 0 {
		return g.Match(s[:i])
	}
	if i := strings.IndexByte(s, '.'); i > 0 && !strings.ContainsAny(s, "( ") {
		return g.Match(s[:i])
	}
	return false
}

// nameProper cuts the return type a demangled template instance starts with ("int
// ns::f<int>(int)"): what follows the last space outside brackets before the parameter
// list (an operator's symbols, "operator<", are no brackets), as the runtime's short name.
func nameProper(name string) string {
	end := symbolize.ParamList(name)
	if end <= 0 {
		return name
	}
	start, depth := 0, 0
	for i := 0; i < end; i++ {
		if strings.HasPrefix(name[i:], "operator") && (i+8 == len(name) || !isIdent(name[i+8])) &&
			(i == 0 || !isIdent(name[i-1])) {
			i += 7 + operatorLen(name[i+8:end])
			if i+2 < end && name[i+1] == ' ' && name[i+2] == '<' {
				i++ // "operator< <int>": the space before template arguments
			}
			continue
		}
		switch c := name[i]; {
		case strings.IndexByte("<[({", c) >= 0:
			depth++
		case strings.IndexByte(">])}", c) >= 0 && depth > 0:
			depth--
		case c == ' ' && depth == 0:
			start = i + 1
		}
	}
	return name[start:]
}

// operatorTokens are C++'s operator symbols of more than one character, longest first: the
// symbol after "operator" is the longest that starts there ("operator+<long, int>" is
// operator+ and its template arguments, not an operator "+<"), as the runtime's
// ftrt_operator_end reads it.
var operatorTokens = []string{"<=>", "<<=", ">>=", "->*", "<<", ">>", "<=", ">=", "==", "!=",
	"&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "->", "()", "[]"}

// operatorLen is the length of the operator symbol s starts with (1: a one-character one).
func operatorLen(s string) int {
	for _, t := range operatorTokens {
		if strings.HasPrefix(s, t) {
			return len(t)
		}
	}
	return 1
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// untagged cuts the tags after a demangled name's parameter list ("S::~S() [deleting]":
// the runtime's demangler names it "S::~S()").
func untagged(name string) string {
	base, _ := symbolize.CutTags(name)
	return base
}

// noABITags is name without its ABI tags ("[abi:cxx11]": a function returning a
// std::string), "" when it has none: `Json::Value::asString` matches
// `Json::Value::asString[abi:cxx11]()`, as at record time.
func noABITags(name string) string {
	if !strings.Contains(name, "[abi:") {
		return ""
	}
	for {
		i := strings.Index(name, "[abi:")
		if i < 0 {
			return name
		}
		j := strings.IndexByte(name[i:], ']')
		if j < 0 {
			return name
		}
		name = name[:i] + name[i+j+1:]
	}
}

// shortName cuts a demangled name's parameter list (and what follows it: const, &&).
func shortName(name string) string {
	if i := symbolize.ParamList(name); i > 0 {
		return name[:i]
	}
	return name
}
