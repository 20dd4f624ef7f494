package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/internal/fnargs"
	"github.com/urfave/cli/v2"
)

// argsCommand is `ftrace args`: what recording a program's arguments and return values
// would take (issue 16), from its DWARF or from uftrace-style specs.
func argsCommand() *cli.Command {
	return &cli.Command{
		Name:      "args",
		Usage:     "show where each function's arguments and return value are at entry/exit (x86-64 System V, arm64 AAPCS64), from DWARF or -A/-R specs",
		ArgsUsage: "PROG [FUNC-GLOB...]",
		Flags: []cli.Flag{
			specFlag("argument", "A", "argument spec FUNC@arg1,arg2/s,fparg1 (uftrace syntax; repeatable)"),
			specFlag("retval", "R", "return value spec FUNC@retval[/FMT] (repeatable)"),
			&cli.StringFlag{Name: "spec", Usage: "print the plans as the runtime takes them (`args` or `retval`): what record --auto-args passes, for FTRACE_ARGS=@FILE / FTRACE_RETVAL=@FILE, ftrace_trace_set_args(\"@FILE\") or live args @FILE"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return fmt.Errorf("args: want a program (ELF file with DWARF)")
			}
			prog, globs := c.Args().First(), c.Args().Tail()
			if sp := c.String("spec"); sp != "" {
				return printRuntimeSpecs(c, prog, sp, globs)
			}
			for _, g := range globs {
				if _, err := filter.Compile(g); err != nil {
					return fmt.Errorf("args: bad pattern: %w", err)
				}
			}
			var specs []*fnargs.Spec
			for _, s := range c.Generic("argument").(*specList).v {
				sp, err := fnargs.ParseArgSpec(s)
				if err != nil {
					return fmt.Errorf("args: %w", err)
				}
				specs = append(specs, sp)
			}
			for _, s := range c.Generic("retval").(*specList).v {
				sp, err := fnargs.ParseRetSpec(s)
				if err != nil {
					return fmt.Errorf("args: %w", err)
				}
				specs = append(specs, sp)
			}
			tab, err := fnargs.Load(prog)
			if err != nil {
				return fmt.Errorf("args: %w", err)
			}
			if tab.ARM64 {
				for _, sp := range specs {
					sp.ToAAPCS64()
				}
			}
			w := c.App.Writer
			// only the functions with a call site (record can trace those): not the
			// runtime's own, nor others built without -pg
			keep := tracedEntries(prog)
			for _, fn := range tab.Funcs {
				if !matchFunc(fn, globs) || (keep != nil && !keep(fn.Entry)) {
					continue
				}
				clone := ""
				if fn.Clone {
					clone = fn.CloneSym
				}
				note := ""
				if len(specs) > 0 {
					p := fnargs.PlanBy(fn.Name, specs, func(s *fnargs.Spec) bool { return matchFunc(fn, []string{s.Pattern}) })
					if p == nil {
						continue
					}
					note = hiddenResultNote(fn, p)
					p.Entry = fn.Entry
					fn = p
				}
				fmt.Fprintf(w, "%#x  %s\n", fn.Entry, cloneDescribe(fn, clone))
				if fn.Unsure != "" {
					fmt.Fprintf(w, "    unsure: %s\n", fn.Unsure)
				}
				if note != "" {
					fmt.Fprintf(w, "    note: %s\n", note)
				}
			}
			return nil
		},
	}
}

// hiddenResultNote says when a spec's arg1 is not the function's first parameter: on
// x86-64 a value returned in memory (a std::string, a large struct) has its address
// passed first, in %rdi (uftrace's argN counts registers too), as DWARF shows (fn).
func hiddenResultNote(fn, p *fnargs.Func) string {
	if fn.Ret == nil || !fn.Ret.Indirect || len(fn.Ret.Parts) == 0 || fn.Ret.Parts[0].Reg != fnargs.RAX {
		return ""
	}
	for _, a := range p.Args {
		if a.Name == "arg1" && len(a.Parts) == 1 && a.Parts[0].Reg == fnargs.RDI {
			return "it returns its value in memory: arg1 (%rdi) is the address of the result, its first parameter is arg2"
		}
	}
	return ""
}

// printRuntimeSpecs writes prog's DWARF plans in the runtime's syntax, one function per
// line (those matching a glob, if any are given).
func printRuntimeSpecs(c *cli.Context, prog, which string, globs []string) error {
	if which != "args" && which != "retval" {
		return fmt.Errorf("args: --spec %q: want args or retval", which)
	}
	tab, err := fnargs.Load(prog)
	if err != nil {
		return fmt.Errorf("args: %w", err)
	}
	keep := tracedEntries(prog)
	a, r, _ := tab.RuntimeSpecs(func(e uint64) bool {
		if keep != nil && !keep(e) {
			return false
		}
		f := tab.ByEntry(e)
		return f != nil && matchFunc(f, globs)
	})
	text := a
	if which == "retval" {
		text = r
	}
	_, err = fmt.Fprint(c.App.Writer, text)
	return err
}

// matchFunc: does one of globs (none: all) match fn as the readers' and record's filters
// match a function: its DWARF name, its symbol, and a C++ function's demangled name with
// or without its parameters.
func matchFunc(fn *fnargs.Func, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	sf := &symbolize.Func{Name: fn.Name}
	if fn.Linkage != "" {
		sf = &symbolize.Func{Name: symbolize.FuncName(fn.Linkage), Raw: fn.Linkage}
	}
	for _, g := range globs {
		gl, err := filter.Compile(g)
		if err == nil && (gl.MatchFunc(sf) || gl.Match(fn.Name)) {
			return true
		}
	}
	return false
}

// specFlag is a repeatable flag of a long name and a short one, each value kept whole in a
// specList. Both forms may be given in one command (-R a --retval b): urfave/cli refuses
// a flag's alias used beside its name ("Cannot use two forms of the same flag").
func specFlag(name, short, usage string) cli.Flag {
	return &twoNameFlag{cli.GenericFlag{Name: name, Aliases: []string{short}, Value: &specList{}, Usage: usage}}
}

// twoNameFlag registers both its names for one value but tells cli of its first only, so
// that cli's check of a flag's forms passes; its help line shows both.
type twoNameFlag struct{ cli.GenericFlag }

func (f *twoNameFlag) Names() []string { return []string{f.Name} }

// AllNames are both (cliargs.FlagsFirst must know -F takes a value).
func (f *twoNameFlag) AllNames() []string { return f.GenericFlag.Names() }

func (f *twoNameFlag) Apply(set *flag.FlagSet) error {
	for _, n := range f.GenericFlag.Names() {
		set.Var(f.Value, n, f.Usage)
	}
	return nil
}

func (f *twoNameFlag) String() string { return cli.FlagStringer(&f.GenericFlag) }

// specList collects a repeated flag's values whole: a spec's argument list has commas,
// which a string-slice flag would split on.
type specList struct{ v []string }

func (l *specList) Set(s string) error {
	// urfave/cli copies a flag's value to its aliases with Set(String()): the same list
	// must not be appended to itself
	if len(l.v) > 0 && s == l.String() {
		return nil
	}
	l.v = append(l.v, s)
	return nil
}
func (l *specList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.v, " ")
}

// cloneDescribe is fn.Describe() for a function that exists only as the gcc clone clone
// (a symbol; "" for other functions), named as the readers name its calls:
// memcached's "process_command_ascii.part.0(conn *c @rdi, …)", a C++ clone's
// "pick(Big b @…, int x @…) [clone .isra.0]", a deleting destructor's "S::~S(S *const this
// @rdi) [deleting]" (without the tag, it read as the complete destructor's line: the
// leveldb trial).
func cloneDescribe(fn *fnargs.Func, clone string) string {
	desc := fn.Describe()
	sym := clone
	if sym == "" {
		sym = fn.Linkage
	}
	if sym == "" {
		return desc
	}
	base, tags := symbolize.CutTags(symbolize.FuncName(sym))
	if clone != "" && !strings.Contains(base, "(") { // C: the symbol is the name
		desc = base + strings.TrimPrefix(desc, fn.Name)
	}
	return desc + tags
}
