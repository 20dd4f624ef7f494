package main

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// target is what the compiler builds for: its triple (cc -dumpmachine, with the
// --target/-target of the command line for clang) and the ELF machine of that.
type target struct {
	triple  string // as the compiler says it, "-unknown" dropped: aarch64-linux-gnu
	machine elf.Machine
}

// hostTarget is the machine ftcc runs on, for a compiler that does not answer.
func hostTarget() target {
	if runtime.GOARCH == "arm64" {
		return target{"aarch64-linux-gnu", elf.EM_AARCH64}
	}
	return target{"x86_64-linux-gnu", elf.EM_X86_64}
}

// targetOf asks cc (with the target-selecting arguments of args) what it builds for.
func targetOf(cc string, args []string) target {
	var sel []string
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--target=") || strings.HasPrefix(a, "-target="):
			sel = append(sel, a)
		case (a == "-target" || a == "--target") && i+1 < len(args):
			sel = append(sel, a, args[i+1])
		case a == "-m32" || a == "-m64":
			sel = append(sel, a)
		}
	}
	out, err := exec.Command(cc, append(sel, "-dumpmachine")...).Output()
	triple := strings.Replace(strings.TrimSpace(string(out)), "-unknown-", "-", 1)
	if err != nil || triple == "" || strings.ContainsAny(triple, " \n") {
		return hostTarget() // a compiler that does not say
	}
	switch strings.SplitN(triple, "-", 2)[0] {
	case "aarch64":
		return target{triple, elf.EM_AARCH64}
	case "x86_64":
		if strings.HasSuffix(triple, "x32") {
			return target{triple, elf.EM_NONE}
		}
		return target{triple, elf.EM_X86_64}
	default:
		return target{triple, elf.EM_NONE}
	}
}

// instrument is the flags that make the compiler's functions traceable on t: x86-64
// calls __fentry__ at each entry, aarch64 has two nops there (the kernel's arm64 way).
// With callops, the area before each function that CALL_OPS sites use.
func (t target) instrument(callops bool) ([]string, error) {
	switch t.machine {
	case elf.EM_X86_64:
		if callops {
			return []string{"-pg", "-mfentry", "-fpatchable-function-entry=8,8", "-falign-functions=16"}, nil
		}
		return []string{"-pg", "-mfentry"}, nil
	case elf.EM_AARCH64:
		if callops {
			// clang aligns functions to 4 only: the area must be 8-aligned
			return []string{"-fpatchable-function-entry=4,2", "-falign-functions=8"}, nil
		}
		return []string{"-fpatchable-function-entry=2"}, nil
	}
	return nil, fmt.Errorf("the compiler builds for %s, which ftkit's runtime does not support (x86_64 and aarch64 only)", t.triple)
}

// runtimeLib finds the runtime built for t under prefix: lib/<triple>/libftrt.a (a cross
// build: make runtime-aarch64), else lib/libftrt.a if it is t's.
func (t target) runtimeLib(prefix string) (string, error) {
	cands := []string{filepath.Join(prefix, "lib", t.triple, "libftrt.a"), filepath.Join(prefix, "lib", "libftrt.a")}
	var found []string
	for _, c := range cands {
		if !isFile(c) {
			continue
		}
		m, err := archiveMachine(c)
		if err == nil && m == t.machine || err != nil && t == hostTarget() {
			return c, nil // an archive not read: the linker judges it
		}
		if err == nil {
			found = append(found, fmt.Sprintf("%s (%v)", c, m))
		}
	}
	arch := strings.SplitN(t.triple, "-", 2)[0]
	if len(found) > 0 {
		return "", fmt.Errorf("no ftkit runtime for %s: %s not for it; build one with `make runtime-%s` in ftkit's source (it goes to lib/%s/), or set FTCC_PREFIX",
			t.triple, strings.Join(found, " and "), arch, t.triple)
	}
	if t == hostTarget() {
		return "", fmt.Errorf("the ftkit runtime %s is missing (set FTCC_PREFIX to where ftkit is installed)", cands[1])
	}
	return "", fmt.Errorf("no ftkit runtime for %s: %s is missing (build it with `make runtime-%s` in ftkit's source, or set FTCC_PREFIX)",
		t.triple, cands[0], arch)
}

// archiveMachine is the ELF machine of the first object in the ar archive at path.
func archiveMachine(path string) (elf.Machine, error) {
	f, err := os.Open(path)
	if err != nil {
		return elf.EM_NONE, err
	}
	defer f.Close()
	magic := make([]byte, 8)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "!<arch>\n" {
		return elf.EM_NONE, fmt.Errorf("%s: not an ar archive", path)
	}
	off := int64(8)
	hdr := make([]byte, 60)
	for i := 0; i < 64; i++ {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return elf.EM_NONE, fmt.Errorf("%s: no object in the archive", path)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || size < 0 {
			return elf.EM_NONE, fmt.Errorf("%s: a damaged member header", path)
		}
		name := strings.TrimSpace(string(hdr[:16]))
		if !strings.HasPrefix(name, "/") { // not the symbol or long-name table
			e, err := elf.NewFile(io.NewSectionReader(f, off+60, size))
			if err != nil {
				return elf.EM_NONE, fmt.Errorf("%s: member %s: %w", path, name, err)
			}
			return e.Machine, nil
		}
		off += 60 + size + size%2
	}
	return elf.EM_NONE, fmt.Errorf("%s: no object in the archive", path)
}
