package fnargs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Spec is one uftrace-style argument or return-value spec:
//
//	-A 'PATTERN@ARG[,ARG...]'   ARG: argN | fpargN, then [/FMT[BITS]] [%REG | %stack+N]
//	-R 'PATTERN@retval[/FMT[BITS]]'
//
// PATTERN is a glob on function names. argN is the N-th integer argument (%rdi, %rsi,
// %rdx, %rcx, %r8, %r9, then stack word N-6), fpargN the N-th floating one (%xmm0 ...
// %xmm7). FMT: d or i signed, u unsigned, x hex, s string, c char, f float, p pointer;
// BITS 8, 16, 32 or 64 (f: 32 or 64); the default is d64 (f64 for fpargN and /f).
// %REG names the register instead (rdi ... r9, rax, rdx, xmm0 ... xmm7; on arm64 x0 ...
// x8, d0 ... d7, and for retval x8: the address a result returned in memory was written
// to, as the caller passed it); %stack+N the N-th stack word above the return address.
// The names of both architectures are taken: the runtime refuses the other's.
type Spec struct {
	Pattern string
	Args    []*Arg // from -A
	Ret     *Arg   // from -R
}

var specRegs = map[string]Reg{"rdi": RDI, "rsi": RSI, "rdx": RDX, "rcx": RCX, "r8": R8, "r9": R9, "rax": RAX}

func init() {
	for i := 0; i < 8; i++ {
		specRegs[fmt.Sprintf("xmm%d", i)] = XMM0 + Reg(i)
		for _, v := range []string{"d", "q", "v"} { // as the arm64 runtime reads them
			specRegs[fmt.Sprintf("%s%d", v, i)] = A64V0 + Reg(i)
		}
	}
	for i := 0; i <= 8; i++ {
		specRegs[fmt.Sprintf("x%d", i)] = A64X0 + Reg(i)
	}
}

// retReg reports whether a result may be read from r: x86-64's %rax, %rdx, %xmm0 and
// %xmm1; arm64's x0-x7, v0-v7 and x8 (the entry's: a result returned in memory).
func retReg(r Reg) bool {
	return r == RAX || r == RDX || r == XMM0 || r == XMM0+1 ||
		r >= A64X0 && r <= A64X0+8 || r >= A64V0 && r <= A64V0+7
}

// ParseArgSpec parses an -A spec.
func ParseArgSpec(s string) (*Spec, error) {
	pat, list, err := splitSpec(s)
	if err != nil {
		return nil, err
	}
	sp := &Spec{Pattern: pat}
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		a, err := parseItem(item, false)
		if err != nil {
			return nil, fmt.Errorf("argument spec %q: %w", s, err)
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("argument spec %q: %s given twice", s, a.Name)
		}
		seen[a.Name] = true
		sp.Args = append(sp.Args, a)
	}
	return sp, nil
}

// ParseRetSpec parses an -R spec.
func ParseRetSpec(s string) (*Spec, error) {
	pat, item, err := splitSpec(s)
	if err != nil {
		return nil, err
	}
	a, err := parseItem(item, true)
	if err != nil {
		return nil, fmt.Errorf("return value spec %q: %w", s, err)
	}
	return &Spec{Pattern: pat, Ret: a}, nil
}

func splitSpec(s string) (pat, rest string, err error) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 || i == len(s)-1 {
		return "", "", fmt.Errorf("spec %q: want FUNC@LIST", s)
	}
	pat, rest = s[:i], s[i+1:]
	if _, err := path.Match(pat, ""); err != nil {
		return "", "", fmt.Errorf("spec %q: bad pattern %q: %w", s, pat, err)
	}
	return pat, rest, nil
}

func parseItem(item string, ret bool) (*Arg, error) {
	item = strings.TrimSpace(item)
	var loc string
	if i := strings.IndexByte(item, '%'); i >= 0 {
		item, loc = item[:i], item[i+1:]
	}
	var fmtPart string
	if i := strings.IndexByte(item, '/'); i >= 0 {
		item, fmtPart = item[:i], item[i+1:]
	}
	a := &Arg{Name: item, Fmt: FInt, Size: 8}
	float := false
	switch {
	case ret:
		if item != "retval" {
			return nil, fmt.Errorf("%q: want retval", item)
		}
		a.Parts = []Loc{{Reg: RAX}}
	case strings.HasPrefix(item, "fparg"):
		n, err := strconv.Atoi(item[5:])
		if err != nil || n < 1 || n > 8 {
			return nil, fmt.Errorf("%q: want fparg1 to fparg8", item)
		}
		float = true
		a.Fmt = FFloat
		a.Parts = []Loc{{Reg: XMM0 + Reg(n-1)}}
	case strings.HasPrefix(item, "arg"):
		n, err := strconv.Atoi(item[3:])
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("%q: want arg1 to arg64", item)
		}
		if n <= len(IntArgRegs) {
			a.Parts = []Loc{{Reg: IntArgRegs[n-1]}}
		} else {
			a.Parts = []Loc{{Stack: true, Off: 8 * (n - len(IntArgRegs))}}
		}
	default:
		return nil, fmt.Errorf("%q: want argN, fpargN or retval", item)
	}
	if fmtPart != "" {
		c := fmtPart[0]
		switch c {
		case 'd', 'i':
			a.Fmt = FInt
		case 'u', 'x', 's', 'S', 'c', 'f', 'p':
			a.Fmt = Format(c)
		default:
			return nil, fmt.Errorf("%s: unknown format %q (want d, i, u, x, s, S, c, f or p)", item, fmtPart)
		}
		if c == 'c' {
			a.Size = 1
		}
		if bits := fmtPart[1:]; bits != "" {
			n, err := strconv.Atoi(bits)
			ok := err == nil && (n == 8 || n == 16 || n == 32 || n == 64)
			if c == 'f' {
				ok = err == nil && (n == 32 || n == 64)
			}
			if !ok || c == 's' || c == 'S' || c == 'p' || c == 'c' && n != 8 {
				return nil, fmt.Errorf("%s: bad size %q in /%s", item, bits, fmtPart)
			}
			a.Size = n / 8
		}
	}
	if a.Fmt == FFloat && !float {
		if ret {
			a.Parts = []Loc{{Reg: XMM0}} // a float result comes back in %xmm0
		} else if loc == "" {
			return nil, fmt.Errorf("%s/f: a floating argument is fpargN (or give %%xmmN)", item)
		}
	}
	if float && a.Fmt != FFloat && loc == "" {
		return nil, fmt.Errorf("%s: fpargN takes /f only", item)
	}
	if loc != "" {
		switch {
		case strings.HasPrefix(loc, "stack+"):
			n, err := strconv.Atoi(loc[6:])
			if err != nil || n < 1 || n > 64 {
				return nil, fmt.Errorf("%s: bad %%%s (want stack+1 to stack+64)", item, loc)
			}
			a.Parts = []Loc{{Stack: true, Off: 8 * n}}
		default:
			r, ok := specRegs[loc]
			if !ok || ret && !retReg(r) {
				return nil, fmt.Errorf("%s: unknown register %%%s", item, loc)
			}
			a.Parts = []Loc{{Reg: r}}
		}
	}
	return a, nil
}

// Match reports whether the spec applies to the function called name.
func (s *Spec) Match(name string) bool {
	ok, _ := path.Match(s.Pattern, name)
	return ok
}

// Plan is the recording plan specs make for the function called name: the arguments of
// every matching -A spec in order (a name given twice: the later spec wins), the
// return value of the last matching -R spec. nil when no spec matches.
func Plan(name string, specs []*Spec) *Func {
	return PlanBy(name, specs, func(s *Spec) bool { return s.Match(name) })
}

// PlanBy is Plan with the specs that apply to the function chosen by applies (ftrace
// matches C++ names as its filters do: with or without parameters, or mangled).
func PlanBy(name string, specs []*Spec, applies func(*Spec) bool) *Func {
	var f *Func
	idx := map[string]int{}
	for _, s := range specs {
		if !applies(s) {
			continue
		}
		if f == nil {
			f = &Func{Name: name}
		}
		for _, a := range s.Args {
			c := *a
			if i, ok := idx[a.Name]; ok {
				f.Args[i] = &c
				continue
			}
			idx[a.Name] = len(f.Args)
			f.Args = append(f.Args, &c)
		}
		if s.Ret != nil {
			c := *s.Ret
			f.Ret = &c
		}
	}
	return f
}

// ToAAPCS64 gives the spec the locations the arm64 runtime reads its items at (specs are
// parsed with x86-64's): argN in x0-x7 then the stack words from the entry sp, fpargN in
// d0-d7, a result in x0 (x1) or d0 (d1). A register named with %REG stays as given.
func (s *Spec) ToAAPCS64() {
	for _, a := range append(append([]*Arg(nil), s.Args...), s.Ret) {
		if a == nil || len(a.Parts) != 1 {
			continue
		}
		r := a.Parts[0].Reg
		var n int
		switch {
		case strings.HasPrefix(a.Name, "fparg") && r >= XMM0 && r <= XMM0+7:
			a.Parts[0].Reg = A64V0 + (r - XMM0)
		case strings.HasPrefix(a.Name, "arg"):
			if _, err := fmt.Sscanf(a.Name, "arg%d", &n); err != nil || n < 1 {
				continue
			}
			if isIntArgLoc(a.Parts[0], n) {
				if n <= 8 {
					a.Parts[0] = Loc{Reg: A64X0 + Reg(n-1)}
				} else {
					a.Parts[0] = Loc{Stack: true, Off: 8 * (n - 8)}
				}
			}
		case a.Name == "retval":
			switch r {
			case RAX, RDX:
				a.Parts[0].Reg = A64X0 + map[Reg]Reg{RAX: 0, RDX: 1}[r]
			case XMM0, XMM0 + 1:
				a.Parts[0].Reg = A64V0 + (r - XMM0)
			}
		}
	}
}

// isIntArgLoc: is l where x86-64 has the n-th integer argument (no %REG given)?
func isIntArgLoc(l Loc, n int) bool {
	if n <= len(IntArgRegs) {
		return !l.Stack && l.Reg == IntArgRegs[n-1]
	}
	return l.Stack && l.Off == 8*(n-len(IntArgRegs))
}
