// Command recordmcount adds __mcount_loc call-site tables (docs/table-format.md) to ELF
// relocatable objects compiled with gcc -pg [-mfentry], in place.
//
//	recordmcount [flags] FILE.o...
//
// Files are processed in parallel. Exit status 0 when every file was fine, 1 when any
// failed (the others are still processed); a failed file is left untouched.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/ftkit/ftkit/internal/version"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/cliargs"
	"github.com/ftkit/ftkit/mcountloc"
)

func init() { cli.VersionFlag = version.Flag() }

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	code := 0
	app := &cli.App{
		Name:      "recordmcount",
		Version:   version.Version,
		Usage:     "add __mcount_loc call-site tables to relocatable objects, in place",
		ArgsUsage: "FILE.o...",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "find and print the sites; do not change any file"},
			&cli.BoolFlag{Name: "list", Aliases: []string{"l"}, Usage: "print every site (section, offset, length, kind, function)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say what is done to each file"},
			&cli.BoolFlag{Name: "warn", Aliases: []string{"w"}, Usage: "list calls in executable sections that are not recorded (.init and .fini: the C runtime's glue)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.GOMAXPROCS(0), Usage: "files processed at once"},
		},
		HideHelpCommand: true,
		// Return exit errors to run instead of letting cli call os.Exit, so run reports
		// the status itself (and works in-process, as the tests use it).
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("recordmcount: no input files (usage: recordmcount [flags] FILE.o...)", 2)
			}
			code = process(c, c.Args().Slice(), stdout, stderr)
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
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			fmt.Fprintln(stderr, err)
			return ec.ExitCode()
		}
		fmt.Fprintln(stderr, "recordmcount:", err)
		return 2
	}
	return code
}

type opts struct {
	dryRun, list, verbose, warn bool
}

func process(c *cli.Context, files []string, stdout, stderr io.Writer) int {
	o := opts{dryRun: c.Bool("dry-run"), list: c.Bool("list") || c.Bool("dry-run"), verbose: c.Bool("verbose"), warn: c.Bool("warn")}
	jobs := c.Int("jobs")
	if jobs < 1 {
		jobs = 1
	}
	type out struct {
		stdout, stderr string
		failed         bool
	}
	outs := make([]out, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, jobs)
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var so, se strings.Builder
			outs[i].failed = one(f, o, &so, &se)
			outs[i].stdout, outs[i].stderr = so.String(), se.String()
		}()
	}
	wg.Wait()
	code := 0
	// Output in argument order, so it does not depend on scheduling.
	for _, r := range outs {
		io.WriteString(stdout, r.stdout)
		io.WriteString(stderr, r.stderr)
		if r.failed {
			code = 1
		}
	}
	return code
}

// one processes a file and reports whether it failed.
func one(path string, o opts, stdout, stderr io.Writer) bool {
	fail := func(err error) bool {
		fmt.Fprintf(stderr, "recordmcount: %s: %v\n", path, err)
		return true
	}
	st, err := os.Stat(path)
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(errors.New("not a regular file"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	res, err := mcountloc.Record(data)
	if err != nil {
		return fail(err)
	}
	for _, p := range res.Problems {
		fmt.Fprintf(stderr, "recordmcount: %s: warning: %s (not recorded)\n", path, p)
	}
	if o.warn {
		for _, s := range res.Unrecorded {
			what := "call to " + s.Callee
			if s.Callee == "" {
				what = "patchable entry" // -fpatchable-function-entry: no call
			}
			fmt.Fprintf(stderr, "recordmcount: %s: warning: %s in unrecorded section %s+%#x (%s)\n", path, what, s.Section, s.Offset, s.Func)
		}
	}
	if o.list {
		for _, s := range res.Sites {
			kind := s.Kind.String()
			if s.Pad {
				kind += "+pad"
			}
			if s.PreBytes > 0 {
				kind += fmt.Sprintf("+pre%d", s.PreBytes)
			}
			fmt.Fprintf(stdout, "%s\t%s\t%#x\t%d\t%s\t%s\n", path, s.Section, s.Offset, s.Len, kind, s.Func)
		}
	}
	if res.Out == nil {
		if o.verbose || strings.HasPrefix(res.Note, "already") {
			fmt.Fprintf(stderr, "recordmcount: %s: %s\n", path, res.Note)
		}
		return false
	}
	if o.dryRun {
		if o.verbose {
			fmt.Fprintf(stderr, "recordmcount: %s: %d sites (dry run: not written)\n", path, len(res.Sites))
		}
		return false
	}
	// Refuse read-only files (even for root, who could replace them: the file's owner
	// asked for it not to change) and directories we cannot create the new file in.
	if st.Mode().Perm()&0o222 == 0 || unix.Access(path, unix.W_OK) != nil {
		return fail(errors.New("file is read-only"))
	}
	if err := unix.Access(filepath.Dir(path), unix.W_OK); err != nil {
		return fail(fmt.Errorf("directory %s is not writable (the file is replaced through a temporary file): %w", filepath.Dir(path), err))
	}
	links := elfrw.HardLinks(path)
	if err := elfrw.WriteFileAtomic(path, res.Out); err != nil {
		return fail(err)
	}
	if links > 1 {
		fmt.Fprintf(stderr, "recordmcount: %s: warning: the file had %d hard links; only this name has the table now (the file is replaced, not rewritten in place)\n", path, links)
	}
	if o.verbose {
		fmt.Fprintf(stderr, "recordmcount: %s: recorded %d sites in %d sections\n", path, len(res.Sites), countSections(res.Sites))
	}
	return false
}

func countSections(s []mcountloc.ObjSite) int {
	n, last := 0, -1
	for _, x := range s {
		if x.SecIndex != last {
			n++
			last = x.SecIndex
		}
	}
	return n
}
