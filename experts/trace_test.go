package experts

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomTrace returns a trace of passes over layers × experts (used per token): prompt passes of
// 2 to 9 tokens and decode passes of one, each token's ids distinct and increasing (as the
// engine's router gives them), drawn from a skewed popularity so that some units recur.
func randomTrace(rng *rand.Rand, layers, experts, used, passes int) *Trace {
	tr := &Trace{TraceHeader: TraceHeader{Model: "random", Layers: layers, Experts: experts, Used: used}}
	for l := range layers {
		tr.UnitBytes = append(tr.UnitBytes, uint64(1000+l))
	}
	for range passes {
		p := TracePass{Tokens: 1}
		if rng.IntN(4) == 0 {
			p.Prompt, p.Tokens = true, 2+rng.IntN(8)
		}
		for range layers * p.Tokens {
			picked := make([]bool, experts)
			for n := 0; n < used; {
				e := min(int(rng.ExpFloat64()*float64(experts)/3), experts-1)
				if rng.IntN(3) == 0 {
					e = rng.IntN(experts)
				}
				if !picked[e] {
					picked[e], n = true, n+1
				}
			}
			for e, ok := range picked {
				if ok {
					p.IDs = append(p.IDs, uint16(e))
				}
			}
		}
		tr.Passes = append(tr.Passes, p)
	}
	return tr
}

func TestTraceRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range []struct{ layers, experts, used int }{{4, 16, 4}, {3, 300, 8}, {1, 1, 1}} {
		tr := randomTrace(rng, shape.layers, shape.experts, shape.used, 30)
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			t.Fatal(err)
		}
		got, err := ReadTrace(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%+v: %v", shape, err)
		}
		if !reflect.DeepEqual(got, tr) {
			t.Fatalf("%+v: read back %+v, wrote %+v", shape, got.TraceHeader, tr.TraceHeader)
		}
		// The format's size: 12 header bytes, 8 per layer, the name, then per pass a kind, a
		// varint and one byte per id (two above 256 experts).
		width := 1
		if shape.experts > 256 {
			width = 2
		}
		want := 12 + 8*shape.layers + 2 + len("random")
		for _, p := range tr.Passes {
			want += 2 + width*len(p.IDs)
		}
		if buf.Len() != want {
			t.Errorf("%+v: %d bytes, want %d", shape, buf.Len(), want)
		}
	}
}

func TestTraceWriterRefuses(t *testing.T) {
	h := TraceHeader{Layers: 2, Experts: 4, Used: 2, UnitBytes: []uint64{1, 2}}
	for _, bad := range []TraceHeader{{Layers: 0, Experts: 4, Used: 2}, {Layers: 2, Experts: 4, Used: 5, UnitBytes: []uint64{1, 2}},
		{Layers: 2, Experts: 4, Used: 2, UnitBytes: []uint64{1}}, {Layers: 1, Experts: 1, Used: 1, UnitBytes: []uint64{1}, Model: strings.Repeat("x", 1025)}} {
		if _, err := NewTraceWriter(io.Discard, bad); err == nil {
			t.Errorf("header %+v accepted", bad)
		}
	}
	w, err := NewTraceWriter(io.Discard, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Pass(false, 1, []int{0, 1, 2}); err == nil {
		t.Error("a pass with the wrong number of ids accepted")
	}
	if err := w.Pass(false, 1, []int{0, 1, 2, 3}); err == nil {
		t.Error("a pass after an error accepted")
	}
	w, _ = NewTraceWriter(io.Discard, h)
	if err := w.Pass(true, 1, []int{0, 1, 2, 4}); err == nil || w.Close() == nil {
		t.Errorf("expert 4 of 4 accepted (%v), or its error not kept", err)
	}
	w, _ = NewTraceWriter(io.Discard, h)
	if err := errors.Join(w.Pass(true, 1, []int{0, 1, 2, 3}), w.Close()); err != nil {
		t.Fatal(err)
	}
	if err := w.Pass(true, 1, []int{0, 1, 2, 3}); err == nil {
		t.Error("a pass after Close accepted")
	}
}

// validTrace returns the bytes of a small trace.
func validTrace(t testing.TB) []byte {
	var buf bytes.Buffer
	if err := randomTrace(rand.New(rand.NewPCG(5, 6)), 2, 6, 2, 5).Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadTraceRefuses(t *testing.T) {
	good := validTrace(t)
	if _, err := ReadTrace(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	header := 12 + 8*2 + 2 + len("random")
	edit := func(at int, b ...byte) []byte {
		c := bytes.Clone(good)
		copy(c[at:], b)
		return c
	}
	for name, data := range map[string][]byte{
		"empty":               nil,
		"magic":               edit(0, 'X'),
		"version 2":           edit(4, 2),
		"no layers":           edit(6, 0, 0),
		"no experts":          edit(8, 0, 0),
		"used above experts":  edit(10, 7, 0),
		"name too long":       edit(12+16, 0xff, 0xff),
		"kind 2":              edit(header, 2),
		"tokens 65537":        append(bytes.Clone(good[:header]), 1, 0x80, 0x80, 0x04),
		"truncated pass":      good[:len(good)-1],
		"truncated header":    good[:header-1],
		"expert 6 of 6":       append(bytes.Clone(good[:header]), 1, 0, 6, 0, 0, 1),
		"one token twice":     append(bytes.Clone(good[:header]), 1, 0, 3, 3, 0, 1),
		"unterminated varint": append(bytes.Clone(good[:header]), 1, 0x80),
	} {
		if tr, err := ReadTrace(bytes.NewReader(data)); err == nil {
			t.Errorf("%s: read %d passes, want an error", name, len(tr.Passes))
		}
	}
	// The same expert for two tokens of a pass is a routing, not an error.
	data := append(bytes.Clone(good[:header]), 0, 1, 3, 4, 3, 4, 0, 1, 0, 1)
	tr, err := ReadTrace(bytes.NewReader(data))
	if err != nil || len(tr.Passes) != 1 || !tr.Passes[0].Prompt || tr.Passes[0].Tokens != 2 ||
		!reflect.DeepEqual(tr.Passes[0].IDs, []uint16{3, 4, 3, 4, 0, 1, 0, 1}) {
		t.Fatalf("read %+v, %v", tr, err)
	}
	calls := tr.Calls()
	want := []Call{{Layer: 0, IDs: []int{3, 4}, Counts: []int{2, 2}, Tokens: 2, Prompt: true},
		{Layer: 1, IDs: []int{0, 1}, Counts: []int{2, 2}, Tokens: 2, Prompt: true}}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %+v, want %+v", calls, want)
	}
}

// FuzzReadTrace: whatever the bytes, ReadTrace returns a trace or an error, never panics; a
// trace it reads writes back to the same bytes, and replays under every policy.
func FuzzReadTrace(f *testing.F) {
	good := validTrace(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("TRRT\x01\x00\x01\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTrace(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf); err != nil {
			t.Fatalf("a trace read does not write: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("read and written back, %d bytes became %d", len(data), buf.Len())
		}
		if len(tr.Passes) > 200 || tr.Layers*tr.Experts > 1<<12 {
			return // replaying is linear in both: keep the fuzzer fast
		}
		for _, p := range Policies {
			for _, s := range []int{1, tr.Experts + tr.Used, tr.Layers * tr.Experts} {
				if _, err := Replay(tr, p, s); err != nil {
					t.Fatalf("%s at %d slots: %v", p, s, err)
				}
			}
		}
	})
}
