package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/chrome"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ftrace": func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar. Extra commands:
//
//	mktrace [-elf PROG] [-bias N] [-partial] IN.txt OUT.dat
//	    writes the trace described by IN.txt (tracetest language) in the real file
//	    format; with -elf, names are PROG's symbols (site = symbol + 4 after an endbr64)
//	    and PROG is mapped at bias N (default 0x555555554000) with its build-id.
//	chromeok FILE
//	    FILE is valid Chrome trace-event JSON.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mktrace":  cmdMktrace,
			"chromeok": cmdChromeOK,
		},
	})
}

func cmdChromeOK(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: chromeok FILE")
	}
	c, err := chrome.Validate([]byte(ts.ReadFile(args[0])))
	if neg {
		if err == nil {
			ts.Fatalf("%s is valid", args[0])
		}
		return
	}
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	ts.Logf("events per phase: %v", c)
}

func cmdMktrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mktrace")
	}
	fs := flag.NewFlagSet("mktrace", flag.ContinueOnError)
	elfPath := fs.String("elf", "", "program whose symbols name the functions")
	biasStr := fs.String("bias", "0x555555554000", "load bias of the program")
	partial := fs.Bool("partial", false, "leave the trace not finalised")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		ts.Fatalf("usage: mktrace [-elf PROG] [-bias N] [-partial] IN.txt OUT.dat")
	}
	bias, err := strconv.ParseUint(*biasStr, 0, 64)
	ts.Check(err)
	var resolve tracetest.Resolver
	var maps []tracefile.Mapping
	if *elfPath != "" {
		var m tracefile.Mapping
		resolve, m, err = elfResolver(ts.MkAbs(*elfPath), bias)
		ts.Check(err)
		maps = append(maps, m)
	} else {
		resolve = tracetest.NewNames().Resolve
	}
	tr, err := tracetest.Parse(ts.ReadFile(fs.Arg(0)), resolve)
	ts.Check(err)
	tr.Maps = append(maps, tr.Maps...)
	if !*partial {
		tr.Header.Flags |= tracefile.FlagComplete
	}
	f, err := os.Create(ts.MkAbs(fs.Arg(1)))
	ts.Check(err)
	ts.Check(tracefile.Write(f, tr))
	ts.Check(f.Close())
}

// elfResolver maps function names of prog to run-time call-site addresses at bias.
func elfResolver(prog string, bias uint64) (tracetest.Resolver, tracefile.Mapping, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return nil, tracefile.Mapping{}, err
	}
	defer f.Close()
	id, err := symbolize.BuildID(f)
	if err != nil {
		return nil, tracefile.Mapping{}, err
	}
	m := tracefile.Mapping{Path: prog, Bias: bias, BuildID: id, Start: ^uint64(0), Flags: tracefile.MapMain}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.Start = min(m.Start, bias+p.Vaddr)
			m.End = max(m.End, bias+p.Vaddr+p.Memsz)
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, m, err
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			site := s.Value
			if b := readAt(f, s.Value, 4); len(b) == 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa {
				site += 4
			}
			addr[s.Name] = bias + site
		}
	}
	return func(name string) (uint64, error) {
		if a, ok := addr[name]; ok {
			return a, nil
		}
		return 0, fmt.Errorf("%s: no function %s", prog, name)
	}, m, nil
}

func readAt(f *elf.File, vaddr uint64, n int) []byte {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr+uint64(n) <= p.Vaddr+p.Filesz {
			b := make([]byte, n)
			if _, err := p.ReadAt(b, int64(vaddr-p.Vaddr)); err == nil {
				return b
			}
		}
	}
	return nil
}
