package testenv

// Report is the part of `ftrace report --format json` that the tests check: whether the
// trace is complete, what was lost, and the calls per function.
type Report struct {
	Tracer                string
	Complete              bool
	Lost                  uint64
	LostNoBuf             uint64 `json:"lost_nobuf"`
	LostDepth             uint64 `json:"lost_depth"`
	Unmatched, Unfinished uint64
	Functions             []struct {
		Name           string
		Calls, Partial uint64
	}
}

// TraceFlush is the function the graph tracer records its own buffer writes as (a call of
// the runtime's ftkit_trace_flush, docs/trace-format.md): not a call of the program, so
// the tests comparing the calls seen by the two tracers leave it out.
const TraceFlush = "ftkit_trace_flush"

// FuzzInput is the input of a fuzz target whose arguments are (seed, off, patch, cut): the
// seed file files[seed] with patch written at off (modulo its size) and cut to cut bytes
// when 0 < cut < size; or patch itself when seed names no file. The result is a copy.
func FuzzInput(files [][]byte, seed uint8, off uint32, patch []byte, cut uint32) []byte {
	if int(seed) >= len(files) {
		return append([]byte(nil), patch...)
	}
	in := append([]byte(nil), files[seed]...)
	if len(patch) > 0 && len(in) > 0 {
		copy(in[int(off)%len(in):], patch)
	}
	if cut > 0 && int(cut) < len(in) {
		in = in[:cut]
	}
	return in
}
