// Package chrome writes a trace in the Chrome trace-event JSON format (the "JSON Object
// Format" that chrome://tracing and ui.perfetto.dev open): one complete ("X") event per
// function-graph call, one instant ("i") event per function-tracer call, and
// process_name/thread_name metadata ("M") events. Timestamps are in microseconds since
// the start of the trace.
package chrome

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
)

// Event is one trace event.
type Event struct {
	Name string            `json:"name"`
	Cat  string            `json:"cat,omitempty"`
	Ph   string            `json:"ph"`
	TS   float64           `json:"ts"`
	Dur  *float64          `json:"dur,omitempty"`
	PID  int               `json:"pid"`
	TID  int               `json:"tid"`
	S    string            `json:"s,omitempty"`
	Args map[string]string `json:"args,omitempty"`
}

// File is the top-level JSON object.
type File struct {
	TraceEvents     []Event           `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData,omitempty"`
}

// Write streams the trace-event JSON of the forest to w (events are written one by one,
// so big traces need no second copy in memory).
func Write(w io.Writer, f *calltree.Forest) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	pid := f.Header.PID
	if pid == 0 {
		pid = 1
	}
	other := map[string]string{"tracer": f.Header.Tracer, "producer": "ftkit ftrace"}
	if len(f.Header.Command) > 0 {
		other["command"] = strings.Join(f.Header.Command, " ")
	}
	ob, err := json.Marshal(other)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[\n", ob)
	n := 0
	emit := func(e Event) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteString(",\n")
		}
		n++
		_, err = bw.Write(b)
		return err
	}
	us := func(ts uint64) float64 {
		if ts < f.Start {
			return 0
		}
		return float64(ts-f.Start) / 1e3
	}
	pname := "traced process"
	if len(f.Header.Command) > 0 {
		pname = filepath.Base(f.Header.Command[0])
	}
	if err := emit(Event{Name: "process_name", Ph: "M", PID: pid, Args: map[string]string{"name": pname}}); err != nil {
		return err
	}
	for _, t := range f.Threads {
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("thread %d", t.TID)
		}
		if err := emit(Event{Name: "thread_name", Ph: "M", PID: pid, TID: t.TID, Args: map[string]string{"name": name}}); err != nil {
			return err
		}
		for _, c := range t.Calls {
			args := map[string]string{}
			if c.Caller != nil {
				args["caller"] = c.Caller.Name
			}
			if err := emit(Event{Name: c.Func.Name, Cat: "function", Ph: "i", S: "t", TS: us(c.TS), PID: pid, TID: t.TID, Args: args}); err != nil {
				return err
			}
		}
		var werr error
		t.Walk(func(nd *calltree.Node) bool {
			if werr != nil {
				return false
			}
			d := float64(nd.Duration()) / 1e3
			e := Event{Name: nd.Func.Name, Cat: "function", Ph: "X", TS: us(nd.Start), Dur: &d, PID: pid, TID: t.TID}
			if nd.Func.File != "" || nd.Partial {
				e.Args = map[string]string{}
				if nd.Func.File != "" {
					e.Args["source"] = fmt.Sprintf("%s:%d", nd.Func.File, nd.Func.Line)
				}
				if nd.Partial {
					e.Args["unfinished"] = "true"
				}
			}
			werr = emit(e)
			return werr == nil
		})
		if werr != nil {
			return werr
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}
