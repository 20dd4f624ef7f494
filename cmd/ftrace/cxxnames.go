package main

import (
	"bytes"
	"debug/elf"
	"os/exec"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
)

// maxExpansion bounds the mangled names added for one glob (they go in an environment
// variable).
const maxExpansion = 2000

// runtimeGlobs returns the globs of a record-time list as the runtime can match them.
// The runtime demangles C++ symbols with the process's libstdc++, which cannot read some
// that the readers (and users copying names from them) see, such as gtest's decltype
// templates, and reads others differently (std::call_once's lambda helpers, std::ostream
// spelt out), and names deleting destructors without the readers' " [deleting]": a glob
// naming C++ functions ("::") gets the mangled symbols of the functions it matches as the
// readers name them but not as GNU's demangler (c++filt: the same libiberty code) does,
// in the program and in the traced libraries it needs (libgtest.so); it is replaced by
// them when it matches nothing else.
// Without c++filt, or a readable program, the globs are given as they are.
func runtimeGlobs(prog string, globs []string) []string {
	var syms []string
	loaded := false
	out := make([]string, 0, len(globs))
	for _, g := range globs {
		neg := strings.HasPrefix(g, "!")
		pat := strings.TrimPrefix(g, "!")
		gl, err := filter.Compile(pat)
		if err != nil || !strings.Contains(pat, "::") {
			out = append(out, g)
			continue
		}
		if !loaded {
			syms, loaded = cxxFuncSymbols(append([]string{prog}, tracedLibraries(prog)...)), true
		}
		var matched []string
		for _, raw := range syms {
			if gl.MatchFunc(&symbolize.Func{Name: symbolize.FuncName(raw), Raw: raw}) {
				matched = append(matched, raw)
			}
		}
		unread := gnuOtherwise(gl, matched)
		if len(unread) == 0 || len(unread) > maxExpansion {
			out = append(out, g)
			continue
		}
		if len(unread) < len(matched) {
			out = append(out, g) // the runtime reads the others
		}
		for _, raw := range unread {
			if neg {
				raw = "!" + raw
			}
			out = append(out, raw)
		}
	}
	return out
}

// cxxFuncSymbols lists the C++ function symbols (mangled) of the files.
func cxxFuncSymbols(files []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, file := range files {
		f, err := elf.Open(file)
		if err != nil {
			continue
		}
		syms, _ := f.Symbols()
		dyn, _ := f.DynamicSymbols()
		f.Close()
		for _, s := range append(syms, dyn...) {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && strings.HasPrefix(s.Name, "_Z") && !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s.Name)
			}
		}
	}
	return out
}

// gnuOtherwise returns the symbols of raws that gl does not match by the name c++filt
// gives them (the runtime's), or that c++filt leaves mangled.
func gnuOtherwise(gl *filter.Glob, raws []string) []string {
	if len(raws) == 0 {
		return nil
	}
	cmd := exec.Command("c++filt")
	cmd.Stdin = strings.NewReader(strings.Join(raws, "\n") + "\n")
	b, err := cmd.Output()
	if err != nil {
		return nil
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != len(raws) {
		return nil
	}
	var out []string
	for i, l := range lines {
		if string(l) == raws[i] || !gl.MatchFunc(&symbolize.Func{Name: string(l), Raw: raws[i]}) {
			out = append(out, raws[i])
		}
	}
	return out
}
