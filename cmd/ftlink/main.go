// Command ftlink prepares a linked program or shared library for ftkit: it verifies every
// call site recorded in the __mcount_loc table, replaces each verified call to
// __fentry__/mcount with a nop of the same length, and rewrites the table sorted, unique
// and marked as processed (docs/table-format.md, docs/ftlink.md).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/cliargs"
	"github.com/ftkit/ftkit/internal/version"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/ianlancetaylor/demangle"
	"github.com/urfave/cli/v2"
)

func init() { cli.VersionFlag = version.Flag() }

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	code := 0
	app := &cli.App{
		Name:      "ftlink",
		Version:   version.Version,
		Usage:     "verify, nop and sort the __fentry__/mcount call sites of linked programs and shared libraries",
		UsageText: "ftlink [flags] FILE...",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "check", Usage: "verify without writing; exit 1 if anything is wrong"},
			&cli.BoolFlag{Name: "list", Usage: "print every site (address, length, state, function, file:line) without writing; exit 1 if an entry is bad or duplicated"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON (implies listing the sites)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print a summary line per file"},
		},
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				cli.ShowAppHelp(c)
				code = 2
				return nil
			}
			o := opts{check: c.Bool("check"), list: c.Bool("list"), json: c.Bool("json"), verbose: c.Bool("verbose"),
				stdout: stdout, stderr: stderr}
			var reports []*fileReport
			for _, path := range c.Args().Slice() {
				rep, err := processFile(path, o)
				if err != nil {
					fmt.Fprintf(stderr, "ftlink: %s: %v\n", path, err)
					code = 1
					if o.json {
						reports = append(reports, &fileReport{File: path, Error: err.Error()})
					}
					continue
				}
				if !rep.OK {
					code = 1
				}
				reports = append(reports, rep)
			}
			if o.json {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(reports); err != nil {
					return err
				}
			}
			return nil
		},
	}
	if done, code := cliargs.Man(app, args, stdout, stderr); done {
		return code
	}
	if len(args) > 1 { // flags may follow the files
		args = append(args[:1:1], cliargs.FlagsFirst(app.Flags, args[1:])...)
	}
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "ftlink: %v\n", err)
		return 2
	}
	return code
}

type opts struct {
	check, list, json, verbose bool
	stdout, stderr             io.Writer
}

type siteReport struct {
	Addr     string `json:"addr"`
	Len      int    `json:"len"`
	Kind     string `json:"kind,omitempty"`
	State    string `json:"state"` // call, nop, bad, duplicate
	Format   string `json:"format"`
	Func     string `json:"func,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Problem  string `json:"problem,omitempty"`
	addr     uint64
	funcDisp string
}

type fileReport struct {
	File      string       `json:"file"`
	Type      string       `json:"type,omitempty"`
	Processed bool         `json:"processed"` // state before this run
	Written   bool         `json:"written"`
	Good      int          `json:"good"`
	Bad       int          `json:"bad"`
	Dups      int          `json:"duplicates"`
	Problems  []string     `json:"problems,omitempty"`
	OK        bool         `json:"ok"`
	Error     string       `json:"error,omitempty"`
	Sites     []siteReport `json:"sites,omitempty"`
}

// explain turns library errors into messages with advice.
func explain(err error) error {
	switch {
	case errors.Is(err, mcountloc.ErrNotELF):
		return errors.New("not an ELF file")
	case errors.Is(err, mcountloc.ErrRelocatable):
		return errors.New("relocatable object (ET_REL): ftlink works on linked programs and shared libraries; " +
			"run recordmcount on object files, then link, then run ftlink")
	case errors.Is(err, mcountloc.ErrNoTable):
		return errors.New("no __mcount_loc section: compile with gcc -pg -mfentry (x86-64, i386 with -fno-pie, s390x; " +
			"link without -pg), -pg -mprofile-kernel (ppc64le) or -fpatchable-function-entry=2 (aarch64, arm, riscv64: =4; " +
			"x86-64, i386: =5) and run recordmcount on the objects before linking (or, x86-64, compile with -mrecord-mcount)")
	}
	return err
}

func processFile(path string, o opts) (*fileReport, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	// Reading a FIFO or a device would block or never end.
	if st, err := os.Stat(real); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, err
	}
	prog := newProgress(o.stderr, path)
	l, err := mcountloc.OpenLinked(data, prog.update)
	prog.done()
	if err != nil {
		return nil, explain(err)
	}
	rep := &fileReport{File: path, Type: l.Type.String(), Processed: l.Processed}
	rep.Bad, rep.Dups = l.Problems()
	rep.Good = len(l.Sites) - rep.Bad - rep.Dups
	for _, s := range l.Sites {
		if s.Err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("dropped entry %d for %s: %v", s.Slot, funcName(s), s.Err))
		}
	}
	if rep.Dups > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d duplicate entries", rep.Dups))
	}
	switch {
	case o.check && l.Processed:
		rep.Problems = append(rep.Problems, l.CheckProcessed()...)
		rep.OK = len(rep.Problems) == 0
	case o.check || o.list:
		rep.OK = len(rep.Problems) == 0
	default:
		// The file is read into memory once and rewritten there (it can be large).
		changed, err := l.RewriteInPlace()
		if err != nil {
			return nil, err
		}
		if changed {
			links := elfrw.HardLinks(real)
			if err := elfrw.WriteFileAtomic(real, data); err != nil {
				return nil, fmt.Errorf("writing: %w", err)
			}
			rep.Written = true
			if links > 1 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("warning: the file had %d hard links; only this name is processed now (the file is replaced, not rewritten in place)", links))
			}
		}
		// Dropped entries are reported but do not fail the run: they are not patched.
		rep.OK = true
	}
	if o.list || o.json {
		rep.Sites = listSites(l, data, rep.Written)
	}
	if !o.json {
		for _, p := range rep.Problems {
			fmt.Fprintf(o.stderr, "ftlink: %s: %s\n", path, p)
		}
		if o.list {
			for _, s := range rep.Sites {
				loc := ""
				if s.File != "" {
					loc = fmt.Sprintf("  %s:%d", s.File, s.Line)
				}
				fmt.Fprintf(o.stdout, "%#010x %d %-9s %s%s\n", s.addr, s.Len, s.State, s.funcDisp, loc)
			}
		}
		if o.check {
			state := "not yet processed"
			if l.Processed {
				state = "processed"
			}
			verdict := "ok"
			if !rep.OK {
				verdict = "FAILED"
			}
			fmt.Fprintf(o.stdout, "%s: %s: %d sites good, %d bad, %d duplicates (%s)\n", path, verdict, rep.Good, rep.Bad, rep.Dups, state)
		} else if o.verbose && l.Processed && !rep.Written {
			fmt.Fprintf(o.stdout, "%s: already processed by ftlink: %d sites, left unchanged\n", path, rep.Good)
		} else if o.verbose {
			what := "unchanged"
			if rep.Written {
				what = "written"
			}
			fmt.Fprintf(o.stdout, "%s: %d sites nop'ed, %d bad and %d duplicate entries dropped (%s)\n", path, rep.Good, rep.Bad, rep.Dups, what)
		}
	}
	return rep, nil
}

// funcName names a site's function for messages: the (demangled) name, else the nearest
// symbol and offset, else the address.
func funcName(s mcountloc.LinkedSite) string {
	switch {
	case s.Func != "":
		return demangle.Filter(s.Func)
	case s.Near != "":
		return fmt.Sprintf("%#x (%s)", s.Addr, demangle.Filter(s.Near))
	}
	return fmt.Sprintf("%#x", s.Addr)
}

// listSites describes every site. afterWrite: the file was just rewritten, so every good
// site is now a nop.
func listSites(l *mcountloc.Linked, data []byte, afterWrite bool) []siteReport {
	lines := newLineTable(data)
	out := make([]siteReport, 0, len(l.Sites))
	for _, s := range l.Sites {
		r := siteReport{Addr: fmt.Sprintf("%#x", s.Addr), addr: s.Addr, Len: s.Len, Format: s.Format.String(), Func: s.Func}
		if s.Kind != 0 {
			r.Kind = s.Kind.String()
		}
		switch {
		case s.Err != nil:
			r.State, r.Problem = "bad", s.Err.Error()
		case s.Dup:
			r.State = "duplicate"
		case s.Nop || afterWrite:
			r.State = "nop"
		default:
			r.State = "call"
		}
		if s.Func != "" {
			r.Func = demangle.Filter(s.Func)
		}
		r.funcDisp = funcName(s)
		if s.Err != nil {
			r.funcDisp += " (" + s.Err.Error() + ")"
		}
		r.File, r.Line = lines.lookup(s.Addr)
		out = append(out, r)
	}
	return out
}
