package fnargs

import (
	"strconv"
	"strings"
	"testing"
)

// Specs are parsed with x86-64's locations; on an arm64 program they name AAPCS64's, as
// the arm64 runtime reads them (args_arm64.c): argN x0-x7 then the stack, fpargN d0-d7,
// the result x0 or d0; a register given with %REG stays.
func TestSpecToAAPCS64(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"f@arg1,arg2/s,arg8,arg9,arg12", "x0 x1 x7 stack+8 stack+32"},
		{"f@fparg1,fparg8", "d0 d7"},
		{"f@arg1%x3,arg2%stack+2", "x3 stack+16"},
		{"f@retval", "x0"},
		{"f@retval/f", "d0"},
		{"f@retval%x8", "x8"},
	} {
		var sp *Spec
		var err error
		if strings.Contains(c.spec, "retval") {
			sp, err = ParseRetSpec(c.spec)
		} else {
			sp, err = ParseArgSpec(c.spec)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		sp.ToAAPCS64()
		var got []string
		for _, a := range append(append([]*Arg(nil), sp.Args...), sp.Ret) {
			if a == nil {
				continue
			}
			if l := a.Parts[0]; l.Stack {
				got = append(got, "stack+"+strconv.Itoa(l.Off))
			} else {
				got = append(got, l.Reg.String())
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: %s, want %s", c.spec, strings.Join(got, " "), c.want)
		}
	}
}
