package mcountloc_test

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

func TestX86CheckEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []byte
		want   error
		shows  string
	}{
		{"first instruction", nil, nil, ""},
		{"after endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa}, nil, ""},
		{"mcount after frame setup", []byte{0x55, 0x48, 0x89, 0xe5}, mcountloc.ErrMcountSite, "push %rbp; mov %rsp,%rbp"},
		{"mcount, endbr64 first", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5}, mcountloc.ErrMcountSite, "mov %rsp,%rbp"},
		{"nested function", []byte{0x41, 0x52}, mcountloc.ErrNotAtEntry, "push %r10"},
		{"nested function, endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x52}, mcountloc.ErrNotAtEntry, "push %r10"},
		{"undecodable", []byte{0x0f}, mcountloc.ErrNotAtEntry, ".byte 0f"},
		{"long", make([]byte, 4096), mcountloc.ErrNotAtEntry, "... (4096 bytes in all)"},
		{"mcount after a whole prologue", []byte{0x55, 0x48, 0x89, 0xe5, 0x41, 0x54, 0x53, 0x48, 0x83, 0xec, 0x10},
			mcountloc.ErrMcountSite, "push %r12; push %rbx; sub $0x10,%rsp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mcountloc.X86CheckEntry(tc.before)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.shows) {
				t.Errorf("error %v, want %v showing %q", err, tc.want, tc.shows)
			}
		})
	}
}

func TestX86PrologueBefore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []byte
		want   error
		shows  string
	}{
		{"after ret", []byte{0x5d, 0xc3}, nil, ""},
		{"after nop padding", []byte{0xc3, 0x0f, 0x1f, 0x44, 0x00, 0x00}, nil, ""},
		{"after endbr64", []byte{0xc3, 0xf3, 0x0f, 0x1e, 0xfa}, nil, ""},
		{"after int3", []byte{0xcc, 0xcc}, nil, ""},
		{"first byte of the section", nil, nil, ""},
		{"nested function", []byte{0xc3, 0x41, 0x52}, mcountloc.ErrNotAtEntry, "push %r10"},
		{"frame setup", []byte{0x55, 0x48, 0x89, 0xe5}, mcountloc.ErrMcountSite, "mov %rsp,%rbp"},
		{"sub imm8", []byte{0x53, 0x48, 0x83, 0xec, 0x28}, mcountloc.ErrMcountSite, "sub $0x28,%rsp"},
		{"sub imm32", []byte{0x48, 0x81, 0xec, 0x88, 0x20, 0x00, 0x00}, mcountloc.ErrMcountSite, "sub $0x2088,%rsp"},
		{"push rbx", []byte{0x41, 0x54, 0x53}, mcountloc.ErrMcountSite, "push %rbx"},
		{"push r14", []byte{0x41, 0x56}, mcountloc.ErrMcountSite, "push %r14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mcountloc.X86PrologueBefore(tc.before)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.shows) {
				t.Errorf("error %v, want %v showing %q", err, tc.want, tc.shows)
			}
		})
	}
}

// TestX86PrologueBeforeReal checks the stripped-file rule on real gcc and g++ output: every
// site of gcc's own table (-mrecord-mcount, absolute addresses in a non-PIE program) follows
// a prologue with plain -pg and never does with -pg -mfentry.
func TestX86PrologueBeforeReal(t *testing.T) {
	testenv.Need(t, "gcc", "g++")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC, "stub.c": hookStub, "x.cc": prologueCXX})
	testenv.Run(t, dir, "gcc", "-O2", "-fno-pie", "-c", "stub.c", "-o", "stub.o")
	n := 0
	for _, mode := range []string{"-pg -mfentry", "-pg"} {
		for _, opt := range []string{"-O0", "-O2", "-Os", "-O2 -fcf-protection"} {
			for _, lang := range []string{"c", "c++"} {
				n++
				flags := strings.Fields(mode + " " + opt + " -fno-pie -mrecord-mcount")
				prog := filepath.Join(dir, fmt.Sprintf("p%d", n))
				objs := []string{"stub.o"}
				srcs, cc := []string{"t.c"}, "gcc"
				if lang == "c++" {
					srcs, cc = []string{"x.cc"}, "g++" // one unit: gcc's tables cannot link COMDAT
				}
				for i, src := range srcs {
					obj := fmt.Sprintf("p%d-%d.o", n, i)
					testenv.Run(t, dir, cc, append(flags, "-c", src, "-o", obj)...)
					objs = append(objs, obj)
				}
				testenv.Run(t, dir, cc, append([]string{"-no-pie", "-o", prog}, objs...)...)
				checkPrologueRule(t, prog, mode == "-pg", strings.Join(flags, " ")+" "+lang)
			}
		}
	}
}

// prologueCXX has functions with big frames and many saved registers (long prologues).
const prologueCXX = `
#include <cstdio>
#include <map>
#include <string>
#include <vector>
std::map<std::string, int> m;
int work(int n) {
	std::vector<std::string> v;
	for (int i = 0; i < n; i++) v.push_back(std::to_string(i));
	for (auto &s : v) m[s]++;
	char buf[8192];
	snprintf(buf, sizeof buf, "%d", n);
	return (int)m.size() + buf[0];
}
template <int N> int fact() { return N * fact<N - 1>(); }
template <> int fact<0>() { return 1; }
int main() { std::printf("%d %d\n", work(10), fact<5>()); }
`

func checkPrologueRule(t *testing.T, prog string, mcount bool, what string) {
	t.Helper()
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab := f.Section(mcountloc.TableSection)
	if tab == nil {
		t.Fatalf("%s: no table", what)
	}
	data, err := tab.Data()
	if err != nil {
		t.Fatal(err)
	}
	sites := 0
	for off := 0; off+8 <= len(data); off += 8 {
		addr := binary.LittleEndian.Uint64(data[off:])
		if addr == 0 {
			continue
		}
		var before []byte
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && addr >= s.Addr && addr < s.Addr+s.Size {
				code, err := s.Data()
				if err != nil {
					t.Fatal(err)
				}
				at := addr - s.Addr
				before = code[max(int(at)-7, 0):at]
			}
		}
		sites++
		err := mcountloc.X86PrologueBefore(before)
		if mcount && !errors.Is(err, mcountloc.ErrMcountSite) {
			t.Errorf("%s: mcount site %#x (bytes before % x): %v, want ErrMcountSite", what, addr, before, err)
		}
		if !mcount && err != nil {
			t.Errorf("%s: __fentry__ site %#x (bytes before % x) taken for a prologue: %v", what, addr, before, err)
		}
	}
	if sites < 5 {
		t.Errorf("%s: only %d sites", what, sites)
	}
}
