package tracefile

import "sync"

// Argument and return-value records (EXT ARGS and RETVAL, docs/trace-format.md).
const (
	extArgs   = 7
	extRetval = 8
	// extArgsNext, extRetvalNext: the same without time and address, for the event that
	// follows at once (the graph tracer's usual call).
	extArgsNext   = 9
	extRetvalNext = 10

	// ArgFmt* are a Value's format (Desc & ArgFmtMask).
	ArgFmtAuto   = 0 // formatted from the program's DWARF
	ArgFmtInt    = 1
	ArgFmtUint   = 2
	ArgFmtHex    = 3
	ArgFmtString = 4
	ArgFmtChar   = 5
	ArgFmtFloat  = 6
	ArgFmtPtr    = 7
	// ArgFmtCounted: a std::string_view's bytes (by value: the word before is its
	// length; with desc bit 0x80, the word is its address); DWARF plans only.
	ArgFmtCounted = 8
	ArgFmtMask    = 0x0f
	argSizeShift  = 4
	argStr        = 0x40

	// StrBad etc. are a string Value's StrFlags.
	StrBad    = 0x10000 // the pointer could not be read (or was NULL)
	StrTrunc  = 0x20000 // no NUL within the bytes copied
	StrUnread = 0x40000 // not read (no fault-safe read in the traced process)
	strLen    = 0xffff
)

// Value is one recorded argument or return-value word.
type Value struct {
	Desc     byte   // format (ArgFmt*), log2 size in bits 4-5, 0x40: a string was copied
	Word     uint64 // the register or stack word
	Str      []byte // for strings: the bytes copied (no NUL)
	StrFlags uint32 // StrBad, StrTrunc, StrUnread
}

// Fmt is the value's format (ArgFmt*).
func (v Value) Fmt() int { return int(v.Desc & ArgFmtMask) }

// Size is the value's size in bytes (1, 2, 4 or 8).
func (v Value) Size() int { return 1 << (v.Desc >> argSizeShift & 3) }

// IsString reports whether the recorder copied the string the word points to.
func (v Value) IsString() bool { return v.Desc&argStr != 0 }

// Values are the values recorded with one call: its arguments (at entry) or its return
// value (at exit). A Values event (Kind Values) comes just before the Call, Entry or Exit
// it belongs to; its IP numbers the record in the Stream (Stream.TakeValues).
type Values struct {
	Ret   bool
	Items []Value
	// Auto: some value is to be formatted from the program's DWARF (ftrace record
	// --auto-args): readers use the function's DWARF plan when its words match.
	Auto bool
}

// valState pairs a thread's value records with their events: a record carries the time
// and address of its event, which may come later (a time filter writes an entry when
// the call has lasted long enough) or after a signal handler's events.
type valState struct {
	pend []pendVal
	add  func(*Values) uint64
	next *Values // a short record: the values of the event right after it
}

type pendVal struct {
	ip32 uint32
	ts   uint64
	v    *Values
}

const maxPendVals = 256

// parse decodes a record's payload after its time; nil when malformed.
func parseValues(p []byte, n int, ret bool) (uint32, *Values) {
	if len(p) < 4 {
		return 0, nil
	}
	v := parseItems(p[4:], n, ret)
	if v == nil {
		return 0, nil
	}
	return le.Uint32(p), v
}

// parseItems decodes the descriptors and values of a record; nil when malformed.
func parseItems(p []byte, n int, ret bool) *Values {
	dlen := (n + 3) &^ 3
	if len(p) < dlen {
		return nil
	}
	desc := p[:n]
	p = p[dlen:]
	v := &Values{Ret: ret, Items: make([]Value, n)}
	for i := range v.Items {
		it := Value{Desc: desc[i]}
		n := 4 // a value of 4 bytes or less is one word
		if it.Size() == 8 {
			n = 8
		}
		if len(p) < n {
			return nil
		}
		if n == 8 {
			it.Word = le.Uint64(p)
		} else {
			it.Word = uint64(le.Uint32(p))
		}
		p = p[n:]
		if it.Fmt() == ArgFmtAuto || it.Fmt() == ArgFmtCounted {
			v.Auto = true
		}
		if it.IsString() {
			if len(p) < 4 {
				return nil
			}
			h := le.Uint32(p)
			p = p[4:]
			l := int(h & strLen)
			if len(p) < (l+3)&^3 {
				return nil
			}
			it.StrFlags = h &^ strLen
			it.Str = append([]byte(nil), p[:l]...)
			p = p[(l+3)&^3:]
		}
		v.Items[i] = it
	}
	return v
}

// record keeps a decoded record until its event comes.
func (vs *valState) record(ip32 uint32, ts uint64, v *Values) {
	if len(vs.pend) == maxPendVals { // records whose event never came (a call dropped)
		vs.pend = append(vs.pend[:0], vs.pend[maxPendVals/2:]...)
	}
	vs.pend = append(vs.pend, pendVal{ip32: ip32, ts: ts, v: v})
}

// takeNext returns the event for a short record before this event of kind ret, if any:
// a short record belongs to the event right after it, or to none.
func (vs *valState) takeNext(ts uint64, ret bool, conv func(uint64) uint64) (Event, bool) {
	v := vs.next
	vs.next = nil
	if v == nil || v.Ret != ret {
		return Event{}, false
	}
	return Event{Kind: ValuesKind, TS: conv(ts), IP: vs.add(v), Depth: -1}, true
}

// before appends to evs the values of the event at (ip, ts) of kind ret: a short record
// right before it, a long one recorded for it, or both; vs may be nil (values not read).
func (vs *valState) before(evs []Event, ip, ts uint64, ret bool, conv func(uint64) uint64) []Event {
	if vs == nil {
		return evs
	}
	if vs.next != nil {
		if v, ok := vs.takeNext(ts, ret, conv); ok {
			evs = append(evs, v)
		}
	}
	if len(vs.pend) > 0 {
		if v, ok := vs.take(ip, ts, ret, conv); ok {
			evs = append(evs, v)
		}
	}
	return evs
}

// take returns the event for the record of the event at (ip, ts) of kind ret, if any.
func (vs *valState) take(ip uint64, ts uint64, ret bool, conv func(uint64) uint64) (Event, bool) {
	for k := len(vs.pend) - 1; k >= 0; k-- {
		p := vs.pend[k]
		if p.ts == ts && p.ip32 == uint32(ip) && p.v.Ret == ret {
			vs.pend = append(vs.pend[:k], vs.pend[k+1:]...)
			return Event{Kind: ValuesKind, TS: conv(ts), IP: vs.add(p.v), Depth: -1}, true
		}
	}
	return Event{}, false
}

// valueTable holds the records a Stream decoded until a reader takes them.
type valueTable struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]*Values
}

func (t *valueTable) add(v *Values) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]*Values{}
	}
	t.next++
	t.m[t.next] = v
	return t.next
}

// TakeValues returns the record a Values event numbers and forgets it (nil if unknown).
func (s *Stream) TakeValues(ev *Event) *Values {
	s.vals.mu.Lock()
	defer s.vals.mu.Unlock()
	v := s.vals.m[ev.IP]
	delete(s.vals.m, ev.IP)
	return v
}
