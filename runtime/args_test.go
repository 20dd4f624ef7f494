package ftrt_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// The calls ftrace graph printed (graph tracer: the text after "|  ", function tracer:
// the call before " <- "), main's and closing lines left out.
func argsCalls(t *testing.T, g, tracer string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(g, "\n") {
		var c string
		if tracer == "function" {
			f := strings.Fields(l)
			if len(f) < 2 || strings.HasPrefix(l, "#") {
				continue
			}
			c, _, _ = strings.Cut(strings.Join(f[1:], " "), " <- ")
		} else {
			_, after, ok := strings.Cut(l, "|  ")
			if !ok || strings.HasPrefix(l, "#") {
				continue
			}
			c = strings.TrimSuffix(strings.TrimSpace(after), ";")
		}
		if c == "" || strings.HasPrefix(c, "main") || strings.HasPrefix(c, "}") {
			continue
		}
		out = append(out, c)
	}
	return out
}

// libstdcxxString matches the members of std::string that trace_args_cxx.cc instantiates
// (_M_construct, a constructor), which are not the program's calls the test compares, but
// not the functions taking a std::string.
const libstdcxxString = "*basic_string<*>::*"

// --auto-args: every call's arguments and return value as ftrace graph prints them are
// what the program says it was called with and returned (each function prints itself in
// the same form), for C and C++ (templates, classes by reference and by value, members,
// enums, strings near unmapped memory and bad pointers, std::string's text), with both tracers and under a
// time filter, and through read-time filters; the program's output is the same traced
// and untraced.
func TestTracerArgsAuto(t *testing.T) {
	dir := t.TempDir()
	ftrace := testenv.Tool(t, "ftrace")
	for _, src := range []string{"trace_args.c", "trace_args_cxx.cc"} {
		prog := trBuild(t, dir, src)
		plain, _ := trRun(t, dir, prog, nil)
		// under a time filter of 1ns every call is kept, its entry written at its exit,
		// long after its arguments
		for _, variant := range []string{"function_graph", "function", "function_graph+time-filter"} {
			tracer, filtered := strings.CutSuffix(variant, "+time-filter")
			dat := filepath.Join(dir, src+"."+variant+".dat")
			flags := []string{"record", "-q", "-a", "-t", tracer, "-o", dat}
			if strings.HasSuffix(src, ".cc") {
				flags = append(flags, "-N", libstdcxxString) // the program's calls only
			}
			if filtered {
				flags = append(flags, "--time-filter", "1ns")
			}
			out := testenv.Run(t, dir, ftrace, append(flags, "--", prog)...)
			// the values of this run (stack addresses differ from run to run)
			want := strings.Split(strings.TrimSpace(out), "\n")
			if hexAddr.ReplaceAllString(out, "0x?") != hexAddr.ReplaceAllString(plain, "0x?") {
				t.Errorf("%s %s: output traced\n%s\nuntraced\n%s", src, tracer, out, plain)
			}
			got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", dat), tracer)
			if len(got) != len(want) {
				t.Errorf("%s %s: %d calls shown, the program made %d:\n%s", src, tracer, len(got), len(want), strings.Join(got, "\n"))
				continue
			}
			for i, w := range want {
				if tracer == "function" { // no return values
					w = w[:strings.LastIndex(w, " = ")]
				}
				// a template instance's name starts with its return type
				if !strings.HasSuffix(got[i], w) || len(got[i]) > len(w) && got[i][len(got[i])-len(w)-1] != ' ' {
					t.Errorf("%s %s: call %d shown as %q, the program says %q", src, tracer, i, got[i], w)
				}
			}
			if t.Failed() {
				return
			}
			checkArgRows(t, dir, ftrace, dat, src+" "+variant, got, tracer)
			// read-time filters that keep every call show the same values (a filter
			// holds them back until it knows whether their call is shown: -t decides
			// at the call's end)
			filters := []string{"--until", "1h"}
			if tracer != "function" {
				filters = append(filters, "-t", "1ns")
			}
			fgot := argsCalls(t, testenv.Run(t, dir, ftrace, append(append([]string{"graph"}, filters...), dat)...), tracer)
			if strings.Join(fgot, "\n") != strings.Join(got, "\n") {
				t.Errorf("%s %s: graph %v shows\n%s\nwithout filters\n%s", src, tracer, filters, strings.Join(fgot, "\n"), strings.Join(got, "\n"))
			}
			// dump's raw records and the Chrome JSON carry them too (the first call's)
			name, rest, _ := strings.Cut(want[0], "(")
			args, ret, _ := strings.Cut(rest, ") = ")
			d := testenv.Run(t, dir, ftrace, "dump", dat)
			withArgs, withRet := false, tracer == "function"
			for _, l := range strings.Split(d, "\n") {
				withArgs = withArgs || strings.Contains(l, name) && strings.Contains(l, " ("+args+")")
				withRet = withRet || strings.Contains(l, name) && strings.HasSuffix(l, " = "+ret)
			}
			if !withArgs || !withRet {
				t.Errorf("%s %s: dump shows no %s(%s) = %s:\n%s", src, tracer, name, args, ret, d)
			}
			for _, flt := range [][]string{nil, filters} {
				var js struct {
					TraceEvents []struct {
						Name string
						Args map[string]string
					}
				}
				argv := append(append([]string{"dump", "--chrome"}, flt...), dat)
				if err := json.Unmarshal([]byte(testenv.Run(t, dir, ftrace, argv...)), &js); err != nil {
					t.Fatalf("%s %s: chrome JSON: %v", src, tracer, err)
				}
				found := false
				for _, e := range js.TraceEvents {
					found = found || strings.Contains(e.Name, name) && e.Args["args"] == args
				}
				if !found {
					t.Errorf("%s %s: no chrome event %s with args %q (filters %v)", src, tracer, name, args, flt)
				}
			}
		}
	}
}

// checkArgRows: report --args has one row per function and argument values with as many
// calls as graph showed (got: its calls), and flame --args a frame for each.
func checkArgRows(t *testing.T, dir, ftrace, dat, what string, got []string, tracer string) {
	t.Helper()
	want := map[string]int{}
	for _, g := range got {
		if i := strings.LastIndex(g, ") = "); i >= 0 && tracer != "function" {
			g = g[:i+1]
		}
		want[g]++
	}
	var rep struct {
		Functions []struct {
			Name  string
			Calls int
		}
	}
	if err := json.Unmarshal([]byte(testenv.Run(t, dir, ftrace, "report", "--args", "-f", "json", dat)), &rep); err != nil {
		t.Fatalf("%s: report --args: %v", what, err)
	}
	rows := map[string]int{}
	for _, f := range rep.Functions {
		if !strings.HasPrefix(f.Name, "main") {
			rows[f.Name] += f.Calls
		}
	}
	if !maps.Equal(rows, want) {
		t.Errorf("%s: report --args rows\n%v\ngraph's calls\n%v", what, rows, want)
	}
	folded := testenv.Run(t, dir, ftrace, "flame", "--args", "--folded", dat)
	for call := range want {
		if !strings.Contains(folded, ";"+call+" ") && !strings.Contains(folded, ";"+call+";") {
			t.Errorf("%s: flame --args has no frame %q:\n%s", what, call, folded)
		}
	}
}

var (
	argName = regexp.MustCompile(`\b[a-z_]+=`)
	hexAddr = regexp.MustCompile(`0x[0-9a-f]+`)
	cString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"(?:\.\.\.)?|<bad>`)
)

// The specs TestTracerArgsSpecs and TestArm64Args record trace_args.c with.
const (
	specArgs = "add@arg1/i32,arg2/i32;slen@arg1/s;peek@arg1/s,arg2/d32;scale@fparg1,fparg2/f32"
	specRets = "add@retval/i32;greet@retval/s;neg@retval"
)

// checkSpecCalls compares the calls graph shows for specArgs/specRets with the program's
// output (each function prints its call with parameter names): the values asked for,
// formatted as asked, without names; no values for the others. unread: strings are not
// copied where the runtime runs (no process_vm_readv: qemu-user), they show <unread>.
func checkSpecCalls(t *testing.T, got []string, plain string, unread bool) {
	t.Helper()
	want := strings.Split(strings.TrimSpace(plain), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d calls shown, %d made:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		name, _, _ := strings.Cut(w, "(")
		call, ret, _ := strings.Cut(w, ") = ")
		call = argName.ReplaceAllString(call, "") + ")"
		switch name {
		case "add":
			w = call + " = " + ret
		case "scale", "slen", "peek":
			w = call
		case "greet", "neg":
			w = name + "() = " + ret
		default:
			w = name + "()"
		}
		if unread {
			w = cString.ReplaceAllString(w, "<unread>")
		}
		if got[i] != w {
			t.Errorf("call %d shown as %q, want %q", i, got[i], w)
		}
	}
}

// -A / -R specs (FTRACE_ARGS, FTRACE_RETVAL): only the functions and values asked for,
// formatted as asked, no names; a malformed list is refused with a message and the
// program runs as it would.
func TestTracerArgsSpecs(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_args.c")
	plain, _ := trRun(t, dir, prog, nil)
	ftrace := testenv.Tool(t, "ftrace")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_ARGS=" + specArgs, "FTRACE_RETVAL=" + specRets})
	if out != plain || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v, untraced %q", out, ws, plain)
	}
	checkSpecCalls(t, argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "ftrace.dat"), "function_graph"), plain, false)
	want := strings.Split(strings.TrimSpace(plain), "\n")
	// ftrace args lists the functions record can trace: the program's, not the runtime's
	// (built with -g, without call sites; the less trial)
	if list := testenv.Run(t, dir, ftrace, "args", prog); !strings.Contains(list, "  add(") ||
		strings.Contains(list, "trace_func") || strings.Contains(list, "ftrt_") {
		t.Errorf("ftrace args lists:\n%s", list)
	}
	// ftrace args --spec: the plans --auto-args passes, in files for FTRACE_ARGS=@FILE (a
	// file others may write is refused)
	for _, which := range []string{"args", "retval"} {
		spec := testenv.Run(t, dir, ftrace, "args", "--spec", which, prog, "add")
		if err := os.WriteFile(filepath.Join(dir, which+".spec"), []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, ws = trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=file.dat",
		"FTRACE_ARGS=@" + filepath.Join(dir, "args.spec"), "FTRACE_RETVAL=@" + filepath.Join(dir, "retval.spec")})
	if out != plain || ws.ExitStatus() != 0 {
		t.Fatalf("@FILE: output %q status %v", out, ws)
	}
	got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "file.dat"), "function_graph")
	if len(got) != len(want) || got[0] != want[0] || !strings.HasPrefix(got[2], "neg()") {
		t.Errorf("@FILE: calls %q, want %q first and neg() without values", got, want[0])
	}
	// a spec list too long for the environment goes through a private file, removed after
	tmp := t.TempDir()
	flags := []string{"record", "-q", "-o", "long.dat", "-A", "add@arg1/i32,arg2/i32"}
	for i := 0; len(strings.Join(flags, ";")) < 40<<10; i++ {
		flags = append(flags, "-A", fmt.Sprintf("no_such_function_%d@arg1", i))
	}
	cmd0 := exec.Command(ftrace, append(flags, "--", prog)...)
	cmd0.Dir, cmd0.Env = dir, append(trCleanEnv(), "TMPDIR="+tmp)
	if b, err := cmd0.Output(); err != nil || string(b) != plain {
		t.Fatalf("record with %d specs: %v, output %q", len(flags)/2, err, b)
	}
	if got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "long.dat"), "function_graph"); len(got) == 0 || got[0] != "add(2, 3)" {
		t.Errorf("long spec list: calls %q, want add(2, 3) first", got)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("spec files left in TMPDIR: %v", left)
	}
	os.Chmod(filepath.Join(dir, "args.spec"), 0o620)
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=file.dat", "FTRACE_ARGS=@"+filepath.Join(dir, "args.spec"))
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "ignoring FTRACE_ARGS=@") {
		t.Errorf("group-writable spec file: %v, %q", err, b)
	}
	// /S: a std::string's text, as uftrace's (NULL, and a text pointer that cannot be read)
	// (label: label[abi:cxx11](int), named without its ABI tag by the spec and the filter)
	cxx := trBuild(t, dir, "trace_args_cxx.cc")
	cplain, _ := trRun(t, dir, cxx, nil)
	out, ws = trRun(t, dir, cxx, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=cxx.dat",
		"FTRACE_ARGS=words@arg1/S;sized@arg1/S", "FTRACE_RETVAL=label@retval/S", "FTRACE_NOTRACE=" + libstdcxxString,
		"FTRACE_FILTER=words,sized,label"})
	if hexAddr.ReplaceAllString(out, "0x?") != hexAddr.ReplaceAllString(cplain, "0x?") || ws.ExitStatus() != 0 {
		t.Fatalf("/S: output %q status %v, untraced %q", out, ws, cplain)
	}
	var wantS []string
	for _, l := range strings.Split(strings.TrimSpace(cplain), "\n") {
		name, _, _ := strings.Cut(l, "(")
		call, ret, _ := strings.Cut(l, ") = ")
		switch name {
		case "words", "sized":
			wantS = append(wantS, argName.ReplaceAllString(call, "")+")")
		case "label[abi:cxx11]": // no arguments recorded: its name keeps its parameters
			wantS = append(wantS, name+"(int) = "+ret)
		}
	}
	var gotS []string
	for _, c := range argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "cxx.dat"), "function_graph") {
		if strings.HasPrefix(c, "words") || strings.HasPrefix(c, "sized") || strings.HasPrefix(c, "label") {
			gotS = append(gotS, c)
		} else {
			t.Errorf("/S: %s recorded: the filter words,sized,label was refused?", c)
		}
	}
	if strings.Join(gotS, "\n") != strings.Join(wantS, "\n") || len(wantS) != 5 {
		t.Errorf("/S: calls\n%s\nwant\n%s", strings.Join(gotS, "\n"), strings.Join(wantS, "\n"))
	}
	for _, bad := range []string{"add@arg99", "add", "add@arg1/q", "@arg1", "add@retval", "add@arg1/S32"} {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_ARGS="+bad, "FTRACE_OUTPUT=bad.dat")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil || o.String() != plain {
			t.Errorf("FTRACE_ARGS=%s: %v, output %q", bad, err, o.String())
		}
		if !strings.Contains(e.String(), "ignoring FTRACE_ARGS="+bad) {
			t.Errorf("FTRACE_ARGS=%s: no message (stderr %q)", bad, e.String())
		}
	}
}

// -A / -R specs naming functions of a library the program loads later (dlopen) take them
// from its load on, as -F does; both tracers.
func TestTracerDlopenArgs(t *testing.T) {
	dir := t.TempDir()
	prog := buildDlfilter(t, dir)
	plain, _ := trRun(t, dir, prog, nil, "./libext.so")
	ftrace := testenv.Tool(t, "ftrace")
	env := []string{"FTRACE_ARGS=ext_fn@arg1/i32;lib_local@arg1/i32", "FTRACE_RETVAL=lib_ext@retval/i32"}
	for _, c := range []struct {
		tracer string
		want   []string
	}{
		{"function_graph", []string{"lib_local(0)", "lib_local(1)", "lib_local(2)", "lib_local(3)",
			"ext_fn(0)", "ext_fn(1)", "ext_fn(2)", "lib_ext() = 0", "lib_ext() = 2"}},
		// the function tracer records no return values
		{"function", []string{"lib_local(0)", "lib_local(1)", "lib_local(2)", "lib_local(3)",
			"ext_fn(0)", "ext_fn(1)", "ext_fn(2)", "lib_ext", "lib_ext"}},
	} {
		trace := c.tracer + ".dat"
		out, ws := trRun(t, dir, prog, append(env, "FTRACE_TRACER="+c.tracer, "FTRACE_OUTPUT="+trace), "./libext.so")
		if out != plain || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q (%v), untraced %q", c.tracer, out, ws, plain)
		}
		got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", trace), c.tracer)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: calls %q, want %q", c.tracer, got, c.want)
		}
	}
}

// The graph tracer's fused call and return record arguments and return values as its
// generic paths do (FTRT_GRAPH_FUSED=0), and the short records (ARGS_NEXT, RETVAL_NEXT)
// read as the long ones (FTRT_ARGS_SHORT=0): the same calls with the same values, with
// specs of every kind, and on fib with a 64 KiB buffer (every event kept), where values
// start blocks.
func TestTracerGraphFusedArgs(t *testing.T) {
	dir := t.TempDir()
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct {
		src  string
		env  []string
		args []string
	}{
		{"trace_args.c", []string{"FTRACE_ARGS=" + specArgs, "FTRACE_RETVAL=" + specRets}, nil},
		{"trace_fib.c", []string{"FTRACE_ARGS=fib@arg1/i32", "FTRACE_RETVAL=fib@retval/i32", "FTRACE_BUFFER_KB=64", "FTRACE_NO_LOSS=1"}, []string{"18"}},
	} {
		prog := trBuild(t, dir, c.src)
		var got [3][]string
		var size [3]int64
		for i, env := range [][]string{nil, {"FTRT_GRAPH_FUSED=0"}, {"FTRT_ARGS_SHORT=0"}} {
			trace := fmt.Sprintf("%s.%d.dat", c.src, i)
			out, ws := trRun(t, dir, prog, append(append(env, c.env...), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+trace), c.args...)
			if ws.ExitStatus() != 0 {
				t.Fatalf("%s: %v %q", c.src, ws, out)
			}
			got[i] = argsCalls(t, testenv.Run(t, dir, ftrace, "graph", trace), "function_graph")
			fi, err := os.Stat(filepath.Join(dir, trace))
			if err != nil {
				t.Fatal(err)
			}
			size[i] = fi.Size()
		}
		for i, name := range []string{"generic", "long records"} {
			if len(got[0]) < 10 || fmt.Sprint(got[0]) != fmt.Sprint(got[i+1]) {
				n := min(len(got[0]), 20)
				t.Errorf("%s: fused %d calls, %s %d; fused begins %q", c.src, len(got[0]), name, len(got[i+1]), got[0][:n])
			}
		}
		if c.src == "trace_fib.c" && size[0] >= size[2] {
			t.Errorf("%s: %d bytes with the short records, %d without", c.src, size[0], size[2])
		}
		for _, call := range got[0] {
			if strings.HasSuffix(call, "()") && c.src == "trace_fib.c" {
				t.Errorf("%s: a call without its argument: %q", c.src, call)
				break
			}
		}
	}
}

// The live `args` and `retval` commands: a malformed spec is refused and nothing changes;
// values are recorded from the change on and no more after `args off`.
func TestTracerArgsLive(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	p := trLive(t, dir, prog, "FTRACE_TRACER=function_graph")
	for _, bad := range []string{"args tick@arg0", "args tick", "args tick@arg1/q", "retval tick@arg1", "args tick@arg1%rbx"} {
		if r := p.ask(bad); !strings.HasPrefix(r, "error ") || !strings.Contains(r, "(nothing changed)") {
			t.Errorf("%q: %q", bad, r)
		}
	}
	if r := p.ask("status"); strings.Contains(r, " args=") {
		t.Errorf("status %q: args after refused specs", r)
	}
	fmt.Fprintf(p.stdin, "call 2\n")
	p.expect("done")
	if r := p.ask("args tick@arg1/d;calls@arg1"); r != "ok" {
		t.Fatalf("args: %q", r)
	}
	if r := p.ask("status"); !strings.Contains(r, " args=2") {
		t.Errorf("status %q, want args=2", r)
	}
	fmt.Fprintf(p.stdin, "call 3\n")
	p.expect("done")
	if r := p.ask("args off"); r != "ok" {
		t.Fatalf("args off: %q", r)
	}
	fmt.Fprintf(p.stdin, "call 2\n")
	p.expect("done")
	// ftrace live: a spec checked before it is sent; auto from the program's DWARF
	p.conn.Close()
	ftrace := testenv.Tool(t, "ftrace")
	pid := fmt.Sprint(p.cmd.Process.Pid)
	if r := testenv.Exec(t, dir, ftrace, "live", "--socket", p.sock, pid, "args", "tick@arg0"); r.Code == 0 || !strings.Contains(r.Stderr, "arg0") {
		t.Errorf("live args tick@arg0: exit %d, %q", r.Code, r.Stderr)
	}
	testenv.Run(t, dir, ftrace, "live", "--socket", p.sock, pid, "args", "auto")
	testenv.Run(t, dir, ftrace, "live", "--socket", p.sock, pid, "retval", "auto")
	fmt.Fprintf(p.stdin, "call 2\nquit\n")
	p.expect("done")
	p.cmd.Wait()
	got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "ftrace.dat"), "function_graph")
	want := []string{"calls()", "tick()", "tick()", "calls(3)", "tick(0)", "tick(1)", "tick(2)", "calls()", "tick()", "tick()",
		"calls(n=2)", "tick(i=0)", "tick(i=1)"}
	var calls []string
	for _, c := range got {
		calls = append(calls, strings.TrimSuffix(c, " {"))
	}
	if strings.Join(calls, " ") != strings.Join(want, " ") {
		t.Errorf("calls\n got %q\nwant %q", calls, want)
	}
}

// Under a time filter the arguments of a call are written only with the call: those of
// the calls it drops are not in the file (they were, in a file with a value record for
// every call made). A trace of fib with --auto-args and a filter that drops most calls
// costs, per event it keeps, what the unfiltered trace costs per event.
func TestTracerArgsTimeFilterDropped(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	ftrace := testenv.Tool(t, "ftrace")
	perEvent := func(name string, flags ...string) (float64, int) {
		dat := filepath.Join(dir, name)
		testenv.Run(t, dir, ftrace, append(append([]string{"record", "-q", "-a", "-o", dat}, flags...), "--", prog, "18")...)
		tr := trRead(t, dat)
		n := trCount(tr)
		fi, err := os.Stat(dat)
		if err != nil || n == 0 {
			t.Fatalf("%s: %v, %d events", name, err, n)
		}
		return float64(fi.Size()) / float64(n), n
	}
	full, all := perEvent("full.dat")
	for _, thresh := range []string{"200ns", "500ns", "1us", "2us"} {
		filtered, kept := perEvent("tf.dat", "--time-filter", thresh)
		if kept*3 > all*2 || kept < 200 {
			continue // too few calls dropped, or too few kept, to tell
		}
		t.Logf("--time-filter %s: %d of %d events kept, %.1f bytes each; %.1f without the filter", thresh, kept, all, filtered, full)
		if filtered > full*1.25 {
			t.Errorf("--time-filter %s: %.1f bytes per event kept (%d of %d), %.1f without the filter: the dropped calls' arguments are in the file",
				thresh, filtered, kept, all, full)
		}
		return
	}
	t.Skip("no threshold dropped a third of the calls and kept 200 on this machine")
}

// A fork child's string arguments are read from its own memory: the runtime keeps the
// process id it copies them with, and a child must not use its parent's (it would see the
// parent's copy of the string).
func TestTracerArgsFork(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_args_fork.c")
	ftrace := testenv.Tool(t, "ftrace")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=fork.dat", "FTRACE_ARGS=slen@arg1/s"})
	if out != "parent 12\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	if got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "fork.dat"), "function_graph"); fmt.Sprint(got) != `[slen("parent") slen("parent")]` {
		t.Errorf("parent: calls %q", got)
	}
	kids, _ := filepath.Glob(filepath.Join(dir, "fork.dat.*"))
	if len(kids) != 1 {
		t.Fatalf("child traces %q, want one", kids)
	}
	if got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", kids[0]), "function_graph"); fmt.Sprint(got) != `[slen("child")]` {
		t.Errorf("child: calls %q", got)
	}
}

// TestTracerArgsAliases: a spec names a function by any of its symbols. Two names at one
// address (an alias attribute, gcc's identical code folding) give one function, named by
// one of them; a spec naming the other matched nothing ("matches no function") before.
func TestTracerArgsAliases(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_alias.c")
	nm := testenv.Run(t, dir, "nm", prog)
	addr := map[string]string{}
	for _, l := range strings.Split(nm, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			addr[f[2]] = f[0]
		}
	}
	if addr["scale"] == "" || addr["scale"] != addr["scale_alias"] {
		t.Fatalf("scale and scale_alias at %q and %q, want one address", addr["scale"], addr["scale_alias"])
	}
	folded := addr["fold_a"] != "" && addr["fold_a"] == addr["fold_b"]
	if !folded {
		t.Logf("gcc did not fold fold_a and fold_b (%q, %q): the alias attribute alone is tested", addr["fold_a"], addr["fold_b"])
	}
	plain, _ := trRun(t, dir, prog, nil, "11")
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(plain), "\n") {
		var x, r int
		if _, err := fmt.Sscanf(l, "%d %d", &x, &r); err != nil {
			t.Fatalf("untraced output %q: %v", plain, err)
		}
		want = append(want, fmt.Sprintf("(%d) = %d", x, r))
	}
	// each name of a pair in turn: whichever the runtime names the function by, one run
	// names it by the other
	for _, names := range [][2]string{{"scale", "fold_a"}, {"scale_alias", "fold_b"}} {
		spec := func(what string) string {
			return names[0] + "@" + what + ";" + names[1] + "@" + what
		}
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=a.dat",
			"FTRACE_ARGS=" + spec("arg1/i32"),
			"FTRACE_RETVAL=" + spec("retval/i32")}, "11")
		if out != plain || ws.ExitStatus() != 0 {
			t.Fatalf("%v: output %q status %v, untraced %q", names, out, ws, plain)
		}
		got := argsCalls(t, testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "graph", "a.dat"), "function_graph")
		if len(got) != len(want) {
			t.Fatalf("%v: calls %q, want %d", names, got, len(want))
		}
		for i, c := range got {
			if i >= 2 && !folded {
				break
			}
			// named by the first of equal names, as the runtime names it
			if shown := []string{"scale(", "scale(", "fold_a(", "fold_a("}[i]; !strings.HasPrefix(c, shown) || !strings.HasSuffix(c, want[i]) {
				t.Errorf("%v: call %d is %q, want %s…%s", names, i, c, shown, want[i])
			}
		}
	}
}

// TestTracerArgsFullName: a spec may name a C++ function in full, as the readers show it:
// a template's instance with its return type ("int twice<int>(int)"), as filters take it
// (it matched nothing: the yaml-cpp trial's "int YAML::Node::as<int>() const").
func TestTracerArgsFullName(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_args_cxx.cc")
	plain, _ := trRun(t, dir, prog, nil)
	var want []string
	for _, l := range strings.Split(plain, "\n") {
		if strings.HasPrefix(l, "twice<int>(") {
			want = append(want, argName.ReplaceAllString(l, ""))
		}
	}
	const full = "int twice<int>(int)"
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=full.dat",
		"FTRACE_ARGS=" + full + "@arg1/d32", "FTRACE_RETVAL=" + full + "@retval/d32", "FTRACE_FILTER=twice*"})
	if hexAddr.ReplaceAllString(out, "0x?") != hexAddr.ReplaceAllString(plain, "0x?") || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v, untraced %q", out, ws, plain)
	}
	var got []string
	for _, c := range argsCalls(t, testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "graph", "full.dat"), "function_graph") {
		if strings.HasPrefix(c, "int twice<int>") || strings.HasPrefix(c, "twice<int>") {
			got = append(got, strings.TrimPrefix(c, "int "))
		}
	}
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls %q, want %q", got, want)
	}
}
