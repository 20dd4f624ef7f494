package tracefile

import (
	"encoding/binary"
	"testing"
)

// payload builds an ARGS/RETVAL payload after the time: ip, descriptors, then the words.
func payload(ip uint32, desc []byte, words ...uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, ip)
	d := make([]byte, (len(desc)+3)&^3)
	copy(d, desc)
	b = append(b, d...)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func TestParseValues(t *testing.T) {
	const i32 = ArgFmtInt | 2<<argSizeShift
	const u64 = ArgFmtUint | 3<<argSizeShift
	const str = ArgFmtString | 3<<argSizeShift | argStr
	for _, tc := range []struct {
		name string
		p    []byte
		n    int
		want []Value // nil: malformed
	}{
		{"int and long", payload(0x1234, []byte{i32, u64}, 0xfffffff9, 5, 1), 2,
			[]Value{{Desc: i32, Word: 0xfffffff9}, {Desc: u64, Word: 1<<32 | 5}}},
		{"string", payload(1, []byte{str}, 0x1000, 0, 3, 'a'|'b'<<8|'c'<<16), 1,
			[]Value{{Desc: str, Word: 0x1000, Str: []byte("abc")}}},
		{"bad string", payload(1, []byte{str}, 16, 0, StrBad), 1,
			[]Value{{Desc: str, Word: 16, Str: []byte{}, StrFlags: StrBad}}},
		{"no values", payload(1, nil), 0, []Value{}},
		{"short word", payload(1, []byte{u64}, 5), 1, nil},
		{"string past the end", payload(1, []byte{str}, 0x1000, 0, 9, 0), 1, nil},
		{"no descriptors", payload(1, nil), 3, nil},
		{"empty", nil, 0, nil},
	} {
		ip, v := parseValues(tc.p, tc.n, false)
		if tc.want == nil {
			if v != nil {
				t.Errorf("%s: parsed %+v, want refused", tc.name, v)
			}
			continue
		}
		if v == nil || len(v.Items) != len(tc.want) {
			t.Errorf("%s: got %+v, want %d values", tc.name, v, len(tc.want))
			continue
		}
		if ip != binary.LittleEndian.Uint32(tc.p) {
			t.Errorf("%s: ip %#x", tc.name, ip)
		}
		for i, w := range tc.want {
			g := v.Items[i]
			if g.Desc != w.Desc || g.Word != w.Word || string(g.Str) != string(w.Str) || g.StrFlags != w.StrFlags {
				t.Errorf("%s: value %d = %+v, want %+v", tc.name, i, g, w)
			}
		}
	}
}

// A record waits for its event: paired by time and address, also after other events;
// the oldest are dropped when too many wait.
func TestValuesPairing(t *testing.T) {
	var n uint64
	vs := &valState{add: func(*Values) uint64 { n++; return n }}
	id := func(x uint64) uint64 { return x }
	a, r := &Values{}, &Values{Ret: true}
	vs.record(0x10, 100, a)
	vs.record(0x10, 120, r)
	if _, ok := vs.take(0x10, 101, false, id); ok {
		t.Error("paired with another time")
	}
	if _, ok := vs.take(0x1_0000_0010, 120, false, id); ok {
		t.Error("args paired with a return")
	}
	if ev, ok := vs.take(0x1_0000_0010, 100, false, id); !ok || ev.Kind != ValuesKind || ev.TS != 100 {
		t.Errorf("args: %+v %v", ev, ok)
	}
	if _, ok := vs.take(0x10, 120, true, id); !ok || len(vs.pend) != 0 {
		t.Errorf("return value not paired (%d waiting)", len(vs.pend))
	}
	for i := 0; i < 3*maxPendVals; i++ {
		vs.record(1, uint64(i), a)
	}
	if len(vs.pend) > maxPendVals {
		t.Errorf("%d records waiting", len(vs.pend))
	}
	if _, ok := vs.take(1, 3*maxPendVals-1, false, id); !ok {
		t.Error("the newest record was dropped")
	}
}

// A short record (ARGS_NEXT, RETVAL_NEXT) belongs to the event right after it: taken by
// that event if of its kind, else dropped, never by a later one.
func TestValuesNext(t *testing.T) {
	var n uint64
	vs := &valState{add: func(*Values) uint64 { n++; return n }}
	id := func(x uint64) uint64 { return x }
	args := parseItems([]byte{0x25, 0, 0, 0, 7, 0, 0, 0}, 1, false) // one 4-byte signed 7
	if args == nil || len(args.Items) != 1 || args.Items[0].Word != 7 || args.Items[0].Size() != 4 {
		t.Fatalf("parseItems: %+v", args)
	}
	vs.next = args
	if ev, ok := vs.takeNext(50, false, id); !ok || ev.Kind != ValuesKind || ev.TS != 50 || vs.next != nil {
		t.Errorf("args before their entry: %+v %v", ev, ok)
	}
	vs.next = args
	if _, ok := vs.takeNext(60, true, id); ok || vs.next != nil {
		t.Error("arguments taken by an exit, or kept after it")
	}
	if _, ok := vs.takeNext(70, false, id); ok {
		t.Error("a short record taken by a later event")
	}
	if parseItems([]byte{0x35, 0, 0, 0, 7, 0, 0, 0}, 1, true) != nil {
		t.Error("an 8-byte value cut short was accepted")
	}
}
