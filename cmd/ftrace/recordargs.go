package main

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/ftkit/ftkit/internal/fnargs"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/urfave/cli/v2"
)

// maxEnvSpec is the longest spec list passed in the environment itself; a longer one
// (--auto-args on a big program) goes through a private file named as @FILE (one
// environment string may not exceed 128 KiB).
const maxEnvSpec = 32 << 10

// argsEnv is FTRACE_ARGS / FTRACE_RETVAL for record's -A, -R and --auto-args, checked
// here so that a bad spec is an error before the program runs; cleanup removes the
// files it wrote.
func argsEnv(c *cli.Context, prog string) (env []string, cleanup func(), err error) {
	var args, rets []string
	var files []string
	cleanup = func() {
		for _, f := range files {
			os.Remove(f)
		}
	}
	if c.Bool("auto-args") {
		path, err := exec.LookPath(prog)
		if err != nil {
			return nil, cleanup, fmt.Errorf("record: --auto-args: %w", err)
		}
		if !isELF(path) {
			return nil, cleanup, fmt.Errorf("record: --auto-args: %s is not an ELF program (a script? give -a the program it runs: ftrace record -a -- PROG)", path)
		}
		if !hasDWARF(path) {
			return nil, cleanup, fmt.Errorf("record: --auto-args: %s has no DWARF (built without -g?) to say what its functions take: "+
				"if it runs the traced program (make, a script's interpreter), give -a that program (ftrace record -a -- PROG), "+
				"or pass that program's specs to -A/-R as files (ftrace args --spec args PROG > a.spec; -A @a.spec)", path)
		}
		tab, err := fnargs.Load(path)
		if err != nil {
			return nil, cleanup, fmt.Errorf("record: --auto-args: %w", err)
		}
		a, r, _ := tab.RuntimeSpecs(tracedEntries(path))
		if a == "" && r == "" {
			return nil, cleanup, fmt.Errorf("record: --auto-args: %s: no function with arguments or a return value in its DWARF", path)
		}
		args = append(args, strings.TrimSuffix(a, "\n"))
		rets = append(rets, strings.TrimSuffix(r, "\n"))
	}
	for _, l := range []struct {
		flag  string
		parse func(string) error
		to    *[]string
	}{
		{"argument", func(s string) error { _, err := fnargs.ParseArgSpec(s); return err }, &args},
		{"retval", func(s string) error { _, err := fnargs.ParseRetSpec(s); return err }, &rets},
	} {
		for _, s := range c.Generic(l.flag).(*specList).v {
			specs, err := specsOf(s, l.parse)
			if err != nil {
				return nil, cleanup, fmt.Errorf("record: -%s: %w", strings.ToUpper(l.flag[:1]), err)
			}
			// C++ names as the readers show them (as -F takes them)
			*l.to = append(*l.to, runtimeSpecs(prog, specs)...)
		}
	}
	for _, l := range []struct {
		name  string
		specs []string
	}{{"FTRACE_ARGS", args}, {"FTRACE_RETVAL", rets}} {
		text := strings.Join(nonEmpty(l.specs), "\n")
		if text == "" {
			continue
		}
		if len(text) <= maxEnvSpec {
			env = append(env, l.name+"="+strings.ReplaceAll(text, "\n", ";"))
			continue
		}
		name, err := specFile(text + "\n")
		if name != "" {
			files = append(files, name)
		}
		if err != nil {
			return nil, cleanup, fmt.Errorf("record: %w", err)
		}
		env = append(env, l.name+"=@"+name)
	}
	return env, cleanup, nil
}

// tracedEntries says which function entries of the program at path have a call site in
// its table (nil: all may, when the table cannot be read): a static function of the
// runtime's or of an uninstrumented file does not take a traced function's name.
func tracedEntries(path string) func(uint64) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	l, err := mcountloc.OpenLinked(data, nil)
	if err != nil {
		return nil
	}
	at := map[uint64]bool{}
	for _, s := range l.Sites {
		if s.FuncAt != 0 {
			at[s.FuncAt] = true
		}
	}
	return func(entry uint64) bool { return at[entry] }
}

// specFile writes a spec list to a new private file (os.CreateTemp: O_EXCL, mode 0600)
// for the runtime's @FILE; its name is returned, also on a write error (to remove it).
func specFile(text string) (string, error) {
	f, err := os.CreateTemp("", "ftrace-args-*")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return f.Name(), fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// liveArgSpec checks the spec of a live `args` or `retval` (each of its ;-separated
// entries as -A or -R would), or for "auto" writes the plans of the process's program
// (/proc/PID/exe) to a private file and names it (@FILE), removed by cleanup.
func liveArgSpec(pid int, cmd, spec string) (string, func(), error) {
	cleanup := func() {}
	if spec == "off" {
		return spec, cleanup, nil
	}
	exe := fmt.Sprintf("/proc/%d/exe", pid)
	if guest := procGuest(pid); guest != "" {
		exe = guest // under qemu-user: the guest's DWARF, not qemu's
	}
	if spec != "auto" {
		specs := strings.Split(spec, ";")
		for _, s := range specs {
			var err error
			if cmd == "args" {
				_, err = fnargs.ParseArgSpec(s)
			} else {
				_, err = fnargs.ParseRetSpec(s)
			}
			if err != nil {
				return "", cleanup, fmt.Errorf("live: %s: %w", cmd, err)
			}
		}
		// C++ names as the readers show them, as record's -A/-R take them
		return strings.Join(runtimeSpecs(exe, specs), ";"), cleanup, nil
	}
	tab, err := fnargs.Load(exe)
	if err != nil {
		return "", cleanup, fmt.Errorf("live: %s auto: %w", cmd, err)
	}
	a, r, _ := tab.RuntimeSpecs(tracedEntries(exe))
	text := a
	if cmd == "retval" {
		text = r
	}
	if text == "" {
		return "", cleanup, fmt.Errorf("live: %s auto: process %d's program has no function with one in its DWARF", cmd, pid)
	}
	name, err := specFile(text)
	if name != "" {
		cleanup = func() { os.Remove(name) }
	}
	if err != nil {
		return "", cleanup, fmt.Errorf("live: %w", err)
	}
	return "@" + name, cleanup, nil
}

// specsOf is one -A/-R value: a spec (checked with parse), or @FILE holding one per line
// (blank lines and "#" comments skipped) as FTRACE_ARGS=@FILE takes them: `ftrace args
// --spec` writes the runtime's own form, which the runtime checks (it says once what it
// cannot use).
func specsOf(v string, parse func(string) error) ([]string, error) {
	if !strings.HasPrefix(v, "@") {
		return []string{v}, parse(v)
	}
	data, err := os.ReadFile(v[1:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// isELF: does the file at path start with the ELF magic?
// hasDWARF reports whether the ELF file at path has debugging information (.debug_info,
// compressed or not).
func hasDWARF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil
}

func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var m [4]byte
	_, err = io.ReadFull(f, m[:])
	return err == nil && string(m[:]) == "\x7fELF"
}
