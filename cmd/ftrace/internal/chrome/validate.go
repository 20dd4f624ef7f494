package chrome

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Validate checks a trace-event JSON document as the viewers need it: the object form
// with a traceEvents array; every event has ph, pid and tid, and all but "E" a name;
// "X", "B", "E" and "i" events a non-negative ts, "X" events a non-negative dur and, per
// thread, proper nesting (in file order each lies inside the enclosing open one); per
// thread, each "E" ends the innermost open "B" (of the same name, if it has one) no
// earlier than it began, and every "B" is ended; metadata events an args.name; and every
// thread with events a thread_name. It returns the number of events per phase.
func Validate(data []byte) (map[string]int, error) {
	var doc struct {
		TraceEvents     []map[string]any `json:"traceEvents"`
		DisplayTimeUnit string           `json:"displayTimeUnit"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if doc.TraceEvents == nil {
		return nil, fmt.Errorf("no traceEvents array")
	}
	if doc.DisplayTimeUnit != "" && doc.DisplayTimeUnit != "ns" && doc.DisplayTimeUnit != "ms" {
		return nil, fmt.Errorf("displayTimeUnit %q", doc.DisplayTimeUnit)
	}
	num := func(e map[string]any, k string) (float64, error) {
		n, ok := e[k].(json.Number)
		if !ok {
			return 0, fmt.Errorf("event %v: %s is not a number", e, k)
		}
		return n.Float64()
	}
	eventTS := func(e map[string]any) (float64, error) {
		ts, err := num(e, "ts")
		if err == nil && ts < 0 {
			err = fmt.Errorf("negative ts: %v", e)
		}
		return ts, err
	}
	counts := map[string]int{}
	named := map[float64]bool{}
	used := map[float64]bool{}
	type span struct{ start, end float64 }
	open := map[float64][]span{}
	type begin struct {
		name string
		ts   float64
	}
	begun := map[float64][]begin{}
	for _, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		name, _ := e["name"].(string)
		if (name == "" && ph != "E") || ph == "" {
			return nil, fmt.Errorf("event without name or ph: %v", e)
		}
		if _, err := num(e, "pid"); err != nil {
			return nil, err
		}
		tid, err := num(e, "tid")
		if err != nil {
			return nil, err
		}
		counts[ph]++
		switch ph {
		case "M":
			if name == "thread_name" {
				named[tid] = true
			}
			args, _ := e["args"].(map[string]any)
			if s, _ := args["name"].(string); s == "" {
				return nil, fmt.Errorf("metadata event without args.name: %v", e)
			}
		case "X":
			ts, err := num(e, "ts")
			if err != nil {
				return nil, err
			}
			dur, err := num(e, "dur")
			if err != nil {
				return nil, err
			}
			if ts < 0 || dur < 0 {
				return nil, fmt.Errorf("negative ts or dur: %v", e)
			}
			used[tid] = true
			st := open[tid]
			// Times are µs with ns resolution: compare with a tolerance far below that
			// to absorb float rounding of ts+dur.
			const eps = 1e-4
			for len(st) > 0 && ts+eps >= st[len(st)-1].end && (dur > 0 || ts > st[len(st)-1].end+eps) {
				st = st[:len(st)-1]
			}
			if len(st) > 0 && (ts < st[len(st)-1].start-eps || ts+dur > st[len(st)-1].end+eps) {
				return nil, fmt.Errorf("event %v is not inside its enclosing event [%v, %v]", e, st[len(st)-1].start, st[len(st)-1].end)
			}
			open[tid] = append(st, span{ts, ts + dur})
		case "B", "E":
			ts, err := eventTS(e)
			if err != nil {
				return nil, err
			}
			used[tid] = true
			st := begun[tid]
			if ph == "B" {
				if len(st) > 0 && ts < st[len(st)-1].ts {
					return nil, fmt.Errorf("event %v begins before its enclosing %q (%v)", e, st[len(st)-1].name, st[len(st)-1].ts)
				}
				begun[tid] = append(st, begin{name, ts})
				break
			}
			if len(st) == 0 {
				return nil, fmt.Errorf("end event %v without a begin", e)
			}
			if b := st[len(st)-1]; (name != "" && b.name != name) || ts < b.ts {
				return nil, fmt.Errorf("end event %v does not end %q begun at %v", e, b.name, b.ts)
			}
			begun[tid] = st[:len(st)-1]
		case "i", "I":
			if _, err := eventTS(e); err != nil {
				return nil, err
			}
			used[tid] = true
			if s, _ := e["s"].(string); s != "" && s != "t" && s != "p" && s != "g" {
				return nil, fmt.Errorf("instant event scope %q", s)
			}
		default:
			return nil, fmt.Errorf("unexpected phase %q", ph)
		}
	}
	for tid, st := range begun {
		if len(st) > 0 {
			return nil, fmt.Errorf("thread %v: %q begun at %v never ends", tid, st[len(st)-1].name, st[len(st)-1].ts)
		}
	}
	for tid := range used {
		if !named[tid] {
			return nil, fmt.Errorf("thread %v has no thread_name", tid)
		}
	}
	return counts, nil
}
