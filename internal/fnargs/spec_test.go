package fnargs

import (
	"strings"
	"testing"
)

func TestParseSpecs(t *testing.T) {
	tests := []struct {
		spec string
		ret  bool
		want string // Func.String of Plan(pattern) or the error's text
	}{
		{"parse@arg1/s,arg2", false, "parse(arg1/s64=%rdi, arg2/d64=%rsi)"},
		{"f*@arg1/x32,fparg2,arg7,arg3/c", false, "f*(arg1/x32=%rdi, fparg2/f64=%xmm1, arg7/d64=stack+8, arg3/c8=%rdx)"},
		{"g@fparg1/f32,arg2/u16%rcx,arg9%stack+2", false, "g(fparg1/f32=%xmm0, arg2/u16=%rcx, arg9/d64=stack+16)"},
		{"h@arg1/p, arg2/i8", false, "h(arg1/p64=%rdi, arg2/d8=%rsi)"},
		{"ns::Cls::get@retval/x", true, "ns::Cls::get() = retval/x64=%rax"},
		{"sqrt@retval/f", true, "sqrt() = retval/f64=%xmm0"},
		{"sqrtf@retval/f32", true, "sqrtf() = retval/f32=%xmm0"},
		{"name@retval/s", true, "name() = retval/s64=%rax"},
		{"words@arg1/S,arg2", false, "words(arg1/S64=%rdi, arg2/d64=%rsi)"},
		{"label@retval/S", true, "label() = retval/S64=%rax"},
		{"pair@retval%rdx", true, "pair() = retval/d64=%rdx"},
		{"main", false, `want FUNC@LIST`},
		{"@arg1", false, `want FUNC@LIST`},
		{"f@", false, `want FUNC@LIST`},
		{"[@arg1", false, `bad pattern "["`},
		{"f@arg0", false, `"arg0": want arg1 to arg64`},
		{"f@fparg9", false, `want fparg1 to fparg8`},
		{"f@len", false, `"len": want argN, fpargN or retval`},
		{"f@arg1/q", false, `unknown format "q"`},
		{"f@arg1/d12", false, `bad size "12"`},
		{"f@arg1/s32", false, `bad size "32"`},
		{"f@arg1/S64", false, `bad size "64"`},
		{"f@fparg1/f16", false, `bad size "16"`},
		{"f@arg1/f", false, `a floating argument is fpargN`},
		{"f@fparg1/x", false, `fpargN takes /f only`},
		{"f@arg1%rbx", false, `unknown register %rbx`},
		{"f@arg1%stack+0", false, `bad %stack+0`},
		{"f@arg1,arg1/x", false, `arg1 given twice`},
		{"f@arg1", true, `"arg1": want retval`},
		{"f@retval%rdi", true, `unknown register %rdi`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			parse := ParseArgSpec
			if tt.ret {
				parse = ParseRetSpec
			}
			s, err := parse(tt.spec)
			got := ""
			if err != nil {
				got = err.Error()
				if !strings.Contains(got, tt.spec) {
					t.Errorf("error %q does not name the spec", got)
				}
			} else {
				got = Plan(s.Pattern, []*Spec{s}).String()
			}
			if !strings.Contains(got, tt.want) || err == nil && got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPlanMerge(t *testing.T) {
	var specs []*Spec
	for _, s := range []string{"p*@arg1,arg2", "parse@arg2/x,arg3/s", "other@arg1"} {
		sp, err := ParseArgSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	for _, s := range []string{"*@retval", "parse@retval/x32"} {
		sp, err := ParseRetSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp)
	}
	for _, tt := range []struct{ name, want string }{
		{"parse", "parse(arg1/d64=%rdi, arg2/x64=%rsi, arg3/s64=%rdx) = retval/x32=%rax"},
		{"print", "print(arg1/d64=%rdi, arg2/d64=%rsi) = retval/d64=%rax"},
		{"main", "main() = retval/d64=%rax"},
	} {
		if got := Plan(tt.name, specs).String(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if f := Plan("x", specs[:3]); f != nil {
		t.Errorf("no spec matches x, got %v", f)
	}
	f := Plan("parse", specs)
	if e, x := f.Words(); e != 3 || x != 1 || len(f.Strings()) != 1 || f.Strings()[0].Name != "arg3" {
		t.Errorf("words %d/%d, strings %v", e, x, f.Strings())
	}
}
