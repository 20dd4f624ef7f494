package fnargs

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A std::string's text is copied where a recorded word is its address (letter T in the
// runtime's specs), only for libstdc++'s C++11 string, whose layout the runtime reads:
// not for the old copy-on-write string (-D_GLIBCXX_USE_CXX11_ABI=0), not for a pointer
// to a pointer, nor for a class holding one; on arm64 a result returned in memory is read
// at the address the caller passed in x8 (%x8: the entry's). A std::string_view by value or returned is its two words, the second
// copied as many bytes as the first says (V); by reference or pointer, its address, whose
// two words the runtime reads before its bytes (W).
func TestStdString(t *testing.T) {
	cases := []struct {
		compiler string
		opts     []string
		// the runtime item of each function's first argument, and of its return value
		arg, ret map[string]string
	}{
		{"g++", nil,
			map[string]string{"by_ref": "arg1/T%rdi", "by_val": "arg1/T%rdi", "by_ptr": "arg1/T%rdi",
				"by_rref": "arg1/T%rdi", "by_pptr": "arg1/a%rdi", "in_box": "arg1/a%rdi", "Box::len": "arg1/a%rdi",
				"view": "arg1/a%rdi,arg1/V%rsi", "view_ref": "arg1/W%rdi", "view_ptr": "arg1/W%rdi"},
			map[string]string{"made": "retval/T%rax", "by_ref": "retval/a%rax", "view_of": "retval/a%rax,retval/V%rdx"}},
		{"g++", []string{"-D_GLIBCXX_USE_CXX11_ABI=0"},
			map[string]string{"by_ref": "arg1/a%rdi", "by_val": "arg1/a%rdi", "by_ptr": "arg1/a%rdi"},
			map[string]string{"made": "retval/a%rax"}},
		{"aarch64-linux-gnu-g++", nil,
			map[string]string{"by_ref": "arg1/T%x0", "by_val": "arg1/T%x0", "by_ptr": "arg1/T%x0", "by_pptr": "arg1/a%x0",
				"view": "arg1/a%x0,arg1/V%x1", "view_ref": "arg1/W%x0"},
			map[string]string{"made": "retval/T%x8", "by_ref": "retval/a%x0", "view_of": "retval/a%x0,retval/V%x1"}},
	}
	src, _ := filepath.Abs(filepath.Join("testdata", "stdstring.cc"))
	for _, c := range cases {
		name := c.compiler + strings.Join(c.opts, "")
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(c.compiler); err != nil {
				t.Skipf("needs %s", c.compiler)
			}
			prog := filepath.Join(t.TempDir(), "prog")
			args := append([]string{"-O2", "-g", "-o", prog, src}, c.opts...)
			if out, err := exec.Command(c.compiler, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", c.compiler, args, err, out)
			}
			tab, err := Load(prog)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				items map[string]string
				ret   bool
			}{{c.arg, false}, {c.ret, true}} {
				for fn, item := range want.items {
					f := planNamed(t, tab, fn)
					args, ret := runtimeItems(f)
					// the first argument's items (a string_view has two)
					var first []string
					for _, it := range strings.Split(args, ",") {
						if strings.HasPrefix(it, "arg1/") {
							first = append(first, it)
						}
					}
					got := strings.Join(first, ",")
					if want.ret {
						got = ret
					}
					if got != item {
						t.Errorf("%s: %s's item %q, want %q (plan %s)", name, fn, got, item, f.Describe())
					}
				}
			}
		})
	}
}

// planNamed is the plan of the one function called name (its demangled name without
// parameters).
func planNamed(t *testing.T, tab *Table, name string) *Func {
	t.Helper()
	var found *Func
	for _, f := range tab.Funcs {
		if f.Name == name || strings.HasSuffix(f.Name, " "+name) || strings.HasPrefix(f.Name, name+"[") {
			if found != nil {
				t.Fatalf("two functions called %s: %s, %s", name, found.Name, f.Name)
			}
			found = f
		}
	}
	if found == nil {
		t.Fatalf("no function %s", name)
	}
	return found
}
