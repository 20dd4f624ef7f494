// Package tracetest builds traces from a small text language, for the tests of the
// ftrace command's packages:
//
//	tracer function_graph        # or function
//	pid 42
//	cmd ./prog arg
//	start 1000                   # header start timestamp (ns)
//	lostnobuf 4                  # events lost for want of a buffer (header)
//	map 0x400000 0x401000 0 /path/to/elf [buildid-hex] [main]   # main: the executable
//	thread 101 main              # following events belong to thread 101, named main
//	lost 3                       # events lost by the current thread
//	lostdepth 2                  # graph frames not recorded by the current thread
//	> 1000 main                  # entry of main at t=1000 ns
//	> 1000 main d=0              # … with the depth the runtime recorded (default: unknown)
//	< 2000 main                  # exit
//	< 2000 main 1000 unwound     # exit with its entry time, unwound flag
//	c 1500 foo main              # function-tracer call of foo from main
//
// Functions are names: Parse asks a resolver for their address, or, without one, gives
// each name a made-up address that Lookup maps back. A name written as 0x... is used as
// an address directly.
package tracetest

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Resolver maps a function name to a runtime address.
type Resolver func(name string) (uint64, error)

// Names assigns made-up addresses to names and resolves them back.
type Names struct {
	addr  map[string]uint64
	funcs map[uint64]*symbolize.Func
}

// NewNames returns an empty table.
func NewNames() *Names {
	return &Names{addr: map[string]uint64{}, funcs: map[uint64]*symbolize.Func{}}
}

const fakeBase = 0x7f0000001000

// Resolve gives name an address (stable for the table's lifetime).
func (n *Names) Resolve(name string) (uint64, error) {
	if a, ok := n.addr[name]; ok {
		return a, nil
	}
	a := fakeBase + uint64(len(n.addr))*0x100
	n.addr[name] = a
	n.funcs[a] = &symbolize.Func{Name: name, Raw: name, Module: "test", Addr: a, Size: 0x100}
	return a, nil
}

// Lookup maps an address back to its Func (addresses inside a name's 0x100 bytes count).
func (n *Names) Lookup(addr uint64) *symbolize.Func {
	if f, ok := n.funcs[addr&^0xff]; ok {
		return f
	}
	f := &symbolize.Func{Name: fmt.Sprintf("0x%x", addr), Addr: addr, Unknown: true}
	n.funcs[addr] = f
	return f
}

// Parse builds a trace from text.
func Parse(text string, resolve Resolver) (*tracefile.Trace, error) {
	tr := &tracefile.Trace{Header: tracefile.Header{Version: 1, Tracer: tracefile.TracerFunctionGraph}}
	var cur *tracefile.Thread
	addr := func(name string) (uint64, error) {
		if strings.HasPrefix(name, "0x") {
			return strconv.ParseUint(name[2:], 16, 64)
		}
		if resolve == nil {
			return 0, fmt.Errorf("no resolver for %q", name)
		}
		return resolve(name)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(err error) error { return fmt.Errorf("line %d %q: %w", lineNo, sc.Text(), err) }
		need := func(n int) error {
			if len(f) < n {
				return bad(fmt.Errorf("want %d fields", n))
			}
			return nil
		}
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 0, 64)
			if err != nil {
				panic(bad(err))
			}
			return v
		}
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = r.(error)
				}
			}()
			switch f[0] {
			case "tracer":
				if err = need(2); err == nil {
					tr.Header.Tracer = f[1]
				}
			case "pid":
				if err = need(2); err == nil {
					tr.Header.PID = int(num(f[1]))
				}
			case "cmd":
				tr.Header.Command = f[1:]
			case "lostnobuf":
				if err = need(2); err == nil {
					tr.Header.LostNoBuf = num(f[1])
				}
			case "start":
				if err = need(2); err == nil {
					tr.Header.StartNS = num(f[1])
				}
			case "map":
				if err = need(5); err == nil {
					m := tracefile.Mapping{Start: num(f[1]), End: num(f[2]), Bias: num(f[3]), Path: f[4]}
					for _, x := range f[5:] {
						if x == "main" {
							m.Flags |= tracefile.MapMain
						} else if _, e := fmt.Sscanf(x, "%x", &m.BuildID); e != nil {
							panic(bad(e))
						}
					}
					tr.Maps = append(tr.Maps, m)
				}
			case "thread":
				if err = need(2); err == nil {
					cur = &tracefile.Thread{TID: int(num(f[1]))}
					if len(f) > 2 {
						cur.Name = strings.Join(f[2:], " ")
					}
					tr.Threads = append(tr.Threads, cur)
				}
			case "lost", "lostdepth", ">", "<", "c":
				if cur == nil {
					err = bad(fmt.Errorf("no thread yet"))
					return
				}
				switch f[0] {
				case "lost":
					if err = need(2); err == nil {
						cur.Lost = num(f[1])
					}
				case "lostdepth":
					if err = need(2); err == nil {
						cur.LostDepth = num(f[1])
					}
				default:
					if err = need(3); err != nil {
						return
					}
					ev := tracefile.Event{TS: num(f[1]), Depth: -1}
					if ev.IP, err = addr(f[2]); err != nil {
						err = bad(err)
						return
					}
					switch f[0] {
					case ">":
						ev.Kind = tracefile.Entry
						if len(f) > 3 && strings.HasPrefix(f[3], "d=") {
							ev.Depth = int32(num(f[3][2:]))
						}
					case "<":
						ev.Kind = tracefile.Exit
						if len(f) > 3 {
							ev.Parent = num(f[3])
						}
						if len(f) > 4 && f[4] == "unwound" {
							ev.Flags = tracefile.FlagUnwound
						}
					case "c":
						ev.Kind = tracefile.Call
						if len(f) > 3 {
							if ev.Parent, err = addr(f[3]); err != nil {
								err = bad(err)
								return
							}
							ev.Parent += 0x10 // a return address, inside the caller
						}
					}
					cur.Events = append(cur.Events, ev)
				}
			default:
				err = bad(fmt.Errorf("unknown directive"))
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	return tr, sc.Err()
}

// RandomThread makes a stream with everything Build has rules for: recursion, entries
// whose recorded depth closes open calls, exits that skip frames, exits with and without
// their entry's time, exits whose entry is not in the stream (before it, or between
// earlier calls), unwound frames and function-tracer calls. A clean stream has only what
// format version 2 can hold: exits of the innermost open call.
func RandomThread(rng *rand.Rand, tid int, ips []uint64, n int, clean bool) *tracefile.Thread {
	th := &tracefile.Thread{TID: tid, Lost: uint64(rng.Intn(3))}
	between := rng.Intn(2) == 0
	pre := uint64(900)
	type open struct {
		ip, ts uint64
		depth  int32
	}
	var stack []open
	var seen []uint64 // some earlier timestamps
	ts := uint64(1000 + rng.Intn(1000))
	for len(th.Events) < n {
		ts += uint64(rng.Intn(50))
		ip := ips[rng.Intn(len(ips))]
		switch r := rng.Intn(100); {
		case r < 40 && len(stack) < 40:
			// the runtime records the depth (format version 1 always has it)
			d := int32(len(stack))
			if rng.Intn(15) == 0 && len(stack) > 0 && !clean {
				d = int32(rng.Intn(len(stack))) // frames whose exits were not recorded
			}
			for d >= 0 && len(stack) > 0 && stack[len(stack)-1].depth >= d {
				stack = stack[:len(stack)-1] // Build's rule: they ended
			}
			th.Events = append(th.Events, tracefile.Event{Kind: tracefile.Entry, TS: ts, IP: ip, Depth: d, Parent: ip + 7})
			stack = append(stack, open{ip, ts, d})
			seen = append(seen, ts)
		case r < 78 && len(stack) > 0:
			k := len(stack) - 1
			if rng.Intn(12) == 0 && !clean {
				k = rng.Intn(len(stack)) // longjmp past frames
			}
			ev := tracefile.Event{Kind: tracefile.Exit, TS: ts, IP: stack[k].ip, Depth: int32(k)}
			if !between || rng.Intn(3) > 0 { // without it, the exit may close another call of ip
				ev.Parent = stack[k].ts
			}
			if rng.Intn(20) == 0 {
				ev.Flags = tracefile.FlagUnwound
			}
			th.Events = append(th.Events, ev)
			stack = stack[:k]
		case r < 84 && !clean:
			// an exit whose entry is not in the stream: it began before the stream
			// (the caller of everything so far when no call is open), or after the
			// open calls began, or (rarely) between earlier calls
			ev := tracefile.Event{Kind: tracefile.Exit, TS: ts, IP: ips[len(ips)-1] + 0x1000, Depth: -1}
			switch {
			case between && rng.Intn(25) == 0 && len(seen) > 0:
				ev.Parent = seen[rng.Intn(len(seen))]
			case len(stack) == 0 && pre > 10:
				pre -= uint64(1 + rng.Intn(10)) // the outer a call, the earlier it began
				ev.Parent = pre
			default:
				ev.Parent = ts // entered after the open calls, its entry lost
			}
			th.Events = append(th.Events, ev)
		default:
			th.Events = append(th.Events, tracefile.Event{Kind: tracefile.Call, TS: ts, IP: ip, Parent: ips[rng.Intn(len(ips))] + 3})
		}
	}
	return th
}

// Funcs names count functions prefix0, prefix1, … and returns their addresses.
func (n *Names) Funcs(prefix string, count int) []uint64 {
	ips := make([]uint64, count)
	for i := range ips {
		ips[i], _ = n.Resolve(fmt.Sprintf("%s%d", prefix, i))
	}
	return ips
}

// Locked is Lookup made safe for concurrent use (streamed readers walk threads in
// parallel).
func (n *Names) Locked() func(addr uint64) *symbolize.Func {
	var mu sync.Mutex
	return func(addr uint64) *symbolize.Func {
		mu.Lock()
		defer mu.Unlock()
		return n.Lookup(addr)
	}
}

// RandomTrace is a complete function_graph trace of 1 to maxThreads RandomThreads of up
// to maxEvents events each (at least minEvents).
func RandomTrace(rng *rand.Rand, ips []uint64, maxThreads, minEvents, maxEvents int, clean bool) *tracefile.Trace {
	tr := &tracefile.Trace{Header: tracefile.Header{Tracer: tracefile.TracerFunctionGraph, Flags: tracefile.FlagComplete, StartNS: 500}}
	for k := 0; k < 1+rng.Intn(maxThreads); k++ {
		tr.Threads = append(tr.Threads, RandomThread(rng, 100+k, ips, minEvents+rng.Intn(maxEvents-minEvents), clean))
	}
	return tr
}

// WriteFile writes tr to path in format "v1", "v2" (blocks of blockEvents), "v2ring"
// (the same, as a flight recorder whose first two blocks were overwritten, each block
// also written PARTIAL first), "v3more" (blocks in three pieces) or "v2dropped" (blocks
// 2 and 3 dropped, a full disk's loss, and 3 events lost before each block).
func WriteFile(path string, tr *tracefile.Trace, format string, blockEvents int) error {
	var buf bytes.Buffer
	var err error
	switch format {
	case "v1":
		err = tracefile.Write(&buf, tr)
	case "v2":
		err = tracefile.WriteV2(&buf, tr, tracefile.WriteOptions{BlockEvents: blockEvents})
	case "v2ring":
		err = tracefile.WriteV2(&buf, tr, tracefile.WriteOptions{BlockEvents: blockEvents, DropFirst: 2, Partial: true})
	case "v3more":
		err = tracefile.WriteV2(&buf, tr, tracefile.WriteOptions{BlockEvents: blockEvents, More: true})
	case "v2dropped":
		err = tracefile.WriteV2(&buf, tr, tracefile.WriteOptions{BlockEvents: blockEvents, DropFrom: 2, Drop: 2, BlockLost: 3})
	default:
		err = fmt.Errorf("unknown format %q", format)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}
