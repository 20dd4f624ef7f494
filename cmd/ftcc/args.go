package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lang is what the compiler makes of an input.
type lang int

const (
	langLinkInput lang = iota // objects, archives, libraries, anything not compiled
	langC
	langCXX
	langAsm
	langOther // headers (precompiled), other languages: compiled, not instrumented
)

func (l lang) instrumentable() bool { return l == langC || l == langCXX }

// byExtension is gcc's choice of language for an input named path.
func byExtension(path string) lang {
	switch filepath.Ext(path) {
	case ".c", ".i":
		return langC
	case ".cc", ".cp", ".cxx", ".cpp", ".CPP", ".c++", ".C", ".ii":
		return langCXX
	case ".s", ".S", ".sx":
		return langAsm
	case ".h", ".hh", ".hpp", ".hxx", ".H", ".m", ".mm", ".f", ".f90", ".go", ".d", ".ads", ".adb":
		return langOther
	}
	return langLinkInput
}

// byX is the language a -x value names (ok false for "none": by extension).
func byX(x string) (lang, bool) {
	switch x {
	case "", "none":
		return 0, false
	case "c", "cpp-output":
		return langC, true
	case "c++", "c++-cpp-output":
		return langCXX, true
	case "assembler", "assembler-with-cpp":
		return langAsm, true
	}
	return langOther, true
}

// source is an input the compiler compiles.
type source struct {
	path  string
	index int    // in invocation.args
	lang  lang   // what it is compiled as
	x     string // the -x value in force for it, "" when chosen by extension
}

// langArgs are the arguments that give a source its language in a command of its own.
func (s source) langArgs() []string {
	if s.x == "" {
		return nil
	}
	return []string{"-x", s.x}
}

// invocation is what one compiler command line does.
type invocation struct {
	args    []string // with response files expanded
	sources []source
	inputs  int // every input, sources and link inputs

	compileOnly, stopEarly        bool // -c; -E, -S, -M/-MM, -fsyntax-only, -###
	shared, relocatable, noStdlib bool
	static                        bool
	// staticCXX: -static-libstdc++, whose copies of the C++ exception entry points
	// collide with the runtime's interposed ones
	staticCXX bool
	out       string
	outIndex  int // index of -o's value, -1 if none
}

// flags whose value is the next argument (gcc and clang)
var withValue = map[string]bool{
	"-o": true, "-x": true, "-I": true, "-L": true, "-D": true, "-U": true, "-include": true,
	"-imacros": true, "-isystem": true, "-iquote": true, "-idirafter": true, "-isysroot": true,
	"-iprefix": true, "-iwithprefix": true, "-iwithprefixbefore": true, "--sysroot": true,
	"-MF": true, "-MT": true, "-MQ": true, "-Xlinker": true, "-Xassembler": true,
	"-Xpreprocessor": true, "-Xclang": true, "-aux-info": true, "-T": true, "-l": true,
	"-u": true, "-z": true, "-e": true, "--param": true, "-target": true, "-arch": true,
	"-gcc-toolchain": true, "-dumpbase": true, "-dumpdir": true, "-B": false,
}

// link-only flags, left out of the compiles of a compile-and-link command
func linkOnly(a string) bool {
	for _, p := range []string{"-l", "-L", "-Wl,", "-static", "-shared", "-rdynamic", "-pie", "-no-pie", "-nostdlib", "-nodefaultlibs", "-nostartfiles", "-T"} {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return a == "-r" || a == "-s"
}

// parse reads a command line; response files (@file) are expanded.
func parse(given []string) (*invocation, error) {
	args, err := expandResponse(given, 0)
	if err != nil {
		return nil, err
	}
	inv := &invocation{args: args, outIndex: -1}
	x := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c":
			inv.compileOnly = true
		case a == "-E", a == "-S", a == "-M", a == "-MM", a == "-fsyntax-only", a == "-###":
			inv.stopEarly = true
		case a == "-shared":
			inv.shared = true
		case a == "-r", a == "-Wl,-r", a == "-Wl,--relocatable":
			inv.relocatable = true
		case a == "-nostdlib", a == "-nostartfiles":
			inv.noStdlib = true
		case a == "-static", a == "-static-pie":
			inv.static = true
		case a == "-static-libstdc++":
			inv.staticCXX = true
		case a == "-x" && i+1 < len(args):
			i++
			x = args[i]
		case strings.HasPrefix(a, "-x") && len(a) > 2:
			x = a[2:]
		case a == "-o" && i+1 < len(args):
			i++
			inv.out, inv.outIndex = args[i], i
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			inv.out, inv.outIndex = a[2:], i
		case withValue[a] && i+1 < len(args):
			i++
		case a == "-":
			inv.inputs++
			if l, ok := byX(x); ok {
				inv.sources = append(inv.sources, source{path: a, index: i, lang: l, x: x})
			}
		case strings.HasPrefix(a, "-"):
			// a flag; its value, if any, is attached
		default:
			inv.inputs++
			l, forced := byX(x)
			if !forced {
				l = byExtension(a)
			}
			if l != langLinkInput {
				s := source{path: a, index: i, lang: l}
				if forced {
					s.x = x
				}
				inv.sources = append(inv.sources, s)
			}
		}
	}
	if inv.compileOnly && inv.outIndex >= 0 && len(inv.sources) > 1 {
		return nil, fmt.Errorf("-o %s with -c and %d sources: the compiler refuses it too", inv.out, len(inv.sources))
	}
	return inv, nil
}

// expandResponse replaces @file arguments by the arguments in the file (gcc's rules:
// white space separates, quotes and backslashes escape); an @name that is not a file
// stays as it is.
func expandResponse(args []string, depth int) ([]string, error) {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "@") || len(a) == 1 {
			out = append(out, a)
			continue
		}
		data, err := os.ReadFile(a[1:])
		if err != nil {
			out = append(out, a)
			continue
		}
		if depth > 10 {
			return nil, fmt.Errorf("response file %s: nested too deep", a[1:])
		}
		words, err := splitResponse(string(data))
		if err != nil {
			return nil, fmt.Errorf("response file %s: %w", a[1:], err)
		}
		sub, err := expandResponse(words, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

func splitResponse(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// passThrough: nothing for ftkit to do (probes such as --version, preprocessing, -S).
func (inv *invocation) passThrough() bool {
	return inv.stopEarly || inv.inputs == 0
}

// program: the link makes a program (not an object, a library or a relocatable).
func (inv *invocation) program() bool {
	return !inv.compileOnly && !inv.shared && !inv.relocatable && !inv.noStdlib
}

// executable: the link makes a program the runtime goes into (see noRuntime).
func (inv *invocation) executable() bool {
	why, _ := inv.noRuntime()
	return inv.program() && why == ""
}

// noRuntime says why a program is linked without the runtime and what to do instead
// ("": it is not, or the link makes no program).
func (inv *invocation) noRuntime() (why, instead string) {
	switch {
	case !inv.program():
		return "", ""
	case inv.static:
		return "-static: the runtime needs the dynamic loader", "link dynamically to trace it"
	case inv.staticCXX:
		return "-static-libstdc++: its C++ exception entry points collide with those the runtime interposes",
			"link libstdc++ dynamically to trace it"
	}
	return "", ""
}

// output is the file a link writes.
func (inv *invocation) output() string {
	if inv.outIndex >= 0 {
		return inv.out
	}
	return "a.out"
}

// objects are the files a -c command writes for srcs.
func (inv *invocation) objects(srcs []source) []string {
	if inv.outIndex >= 0 {
		return []string{inv.out}
	}
	var out []string
	for _, s := range srcs {
		base := filepath.Base(s.path)
		out = append(out, strings.TrimSuffix(base, filepath.Ext(base))+".o")
	}
	return out
}

// without returns the arguments less the given sources.
func (inv *invocation) without(srcs []source) []string {
	drop := map[int]bool{}
	for _, s := range srcs {
		drop[s.index] = true
	}
	var out []string
	for i, a := range inv.args {
		if !drop[i] {
			out = append(out, a)
		}
	}
	return out
}

// compileFlags are the arguments of a compile-and-link command that apply to compiling
// one of its sources on its own: all but the output, the inputs, -x and link-only flags.
func (inv *invocation) compileFlags() []string {
	isInput := map[int]bool{}
	for _, s := range inv.sources {
		isInput[s.index] = true
	}
	var out []string
	for i := 0; i < len(inv.args); i++ {
		a := inv.args[i]
		switch {
		case i == inv.outIndex || isInput[i]:
		case a == "-o" || a == "-x" || a == "-Xlinker" || a == "-T" || a == "-l" || a == "-u" || a == "-z" || a == "-e" || a == "-L":
			i++ // and its value
		case strings.HasPrefix(a, "-x") || strings.HasPrefix(a, "-o") && len(a) > 2 || linkOnly(a):
		case a == "-MD" || a == "-MMD" || a == "-MP":
		case a == "-MF" || a == "-MT" || a == "-MQ":
			i++
		case withValue[a] && i+1 < len(inv.args):
			out = append(out, a, inv.args[i+1])
			i++
		case !strings.HasPrefix(a, "-") && a != "":
			// a link input (object, archive)
		default:
			out = append(out, a)
		}
	}
	return out
}

// linkWith is the link command with some sources replaced by objects: an object takes a
// source's place, between "-x none" and the language in force again.
func (inv *invocation) linkWith(objs map[int]string) []string {
	var out []string
	srcAt := map[int]source{}
	for _, s := range inv.sources {
		srcAt[s.index] = s
	}
	for i, a := range inv.args {
		obj, ok := objs[i]
		if !ok {
			out = append(out, a)
			continue
		}
		if s := srcAt[i]; s.x != "" {
			out = append(out, "-x", "none", obj, "-x", s.x)
		} else {
			out = append(out, obj)
		}
	}
	return out
}
