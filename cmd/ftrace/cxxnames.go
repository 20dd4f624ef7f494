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
	var out []string
	for _, e := range expandGlobs(prog, globs) {
		out = append(out, e...)
	}
	return out
}

// expandGlobs is runtimeGlobs glob by glob: what each becomes.
func expandGlobs(prog string, globs []string) [][]string {
	var syms []string
	loaded := false
	out := make([][]string, len(globs))
	for i, g := range globs {
		neg := strings.HasPrefix(g, "!")
		pat := strings.TrimPrefix(g, "!")
		gl, err := filter.Compile(pat)
		if err != nil || !strings.Contains(pat, "::") {
			out[i] = []string{g}
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
			out[i] = []string{g}
			continue
		}
		if len(unread) < len(matched) {
			out[i] = append(out[i], g) // the runtime reads the others
		}
		for _, raw := range unread {
			if neg {
				raw = "!" + raw
			}
			out[i] = append(out[i], raw)
		}
	}
	return out
}

// runtimeSpecs is runtimeGlobs for -A/-R specs (PATTERN@LIST): a pattern naming C++
// functions the runtime reads otherwise becomes one spec per glob or symbol it gives,
// with the same list, in the place of the spec (a later spec still overrides it).
func runtimeSpecs(prog string, specs []string) []string {
	var pats []string
	for _, s := range specs {
		pat, _, _ := cutSpec(s)
		pats = append(pats, pat)
	}
	var out []string
	for i, e := range expandGlobs(prog, pats) {
		_, list, ok := cutSpec(specs[i])
		if !ok {
			out = append(out, specs[i])
			continue
		}
		for _, p := range e {
			out = append(out, p+"@"+list)
		}
	}
	return out
}

// cutSpec splits a spec at its last '@' (a C++ name holds none).
func cutSpec(s string) (pat, list string, ok bool) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
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
