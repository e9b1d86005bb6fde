package experts

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A route trace records, for each forward pass of a model, the (layer, expert) units each
// token's router named, in pass order: the input of the eviction replay (replay.go), so that
// the store's rule is chosen on evidence. Format, version 1, little-endian:
//
//	header  "TRRT" · u16 version (1) · u16 layers · u16 experts · u16 used (experts a token
//	        names per layer) · layers × u64 unit bytes (the file bytes of one unit of that
//	        layer: its parts' sizes summed) · u16 name length · the model's name (UTF-8, at
//	        most 1024 bytes)
//	passes  one after another until the end of the file, each: u8 kind (0: a prompt pass,
//	        1: a decode or verify pass) · uvarint tokens (1 to 65536) · layers × tokens ×
//	        used expert ids, layer-major (layer l, token t, then that token's ids), each one
//	        byte when experts ≤ 256, else a u16
//
// A token's ids are distinct and below experts. A file that ends inside a pass is an error.
const (
	traceMagic   = "TRRT"
	traceVersion = 1

	traceMaxName   = 1024
	traceMaxTokens = 1 << 16
	// traceMaxIDs bounds one pass's ids (layers × tokens × used), so that a hostile header
	// cannot make a reader plan gigabytes: the full-size shapes' longest passes take 200 K.
	traceMaxIDs = 1 << 26
)

// TraceHeader is a route trace's model shape.
type TraceHeader struct {
	Model                 string   // the model's name (its file's, say)
	Layers, Experts, Used int      // layers, experts per layer, experts each token names per layer
	UnitBytes             []uint64 // per layer: the file bytes of one (layer, expert) unit
}

// units returns the number of (layer, expert) units.
func (h *TraceHeader) units() int { return h.Layers * h.Experts }

// idBytes returns the bytes one expert id takes in a pass record.
func (h *TraceHeader) idBytes() int {
	if h.Experts <= 256 {
		return 1
	}
	return 2
}

func (h *TraceHeader) check() error {
	if h.Layers < 1 || h.Layers > 0xffff || h.Experts < 1 || h.Experts > 0xffff || h.Used < 1 || h.Used > h.Experts {
		return fmt.Errorf("experts: trace of %d layers, %d experts, %d used per token", h.Layers, h.Experts, h.Used)
	}
	if len(h.UnitBytes) != h.Layers {
		return fmt.Errorf("experts: trace of %d layers has %d unit sizes", h.Layers, len(h.UnitBytes))
	}
	if len(h.Model) > traceMaxName {
		return fmt.Errorf("experts: trace's model name of %d bytes (at most %d)", len(h.Model), traceMaxName)
	}
	return nil
}

// TracePass is one forward pass of a trace.
type TracePass struct {
	Prompt bool // a prompt pass; false: a decode or verify pass
	Tokens int
	// IDs are the experts the tokens' routers named: IDs[(l·Tokens + t)·Used + j] is the
	// j-th of token t at layer l.
	IDs []uint16
}

// Trace is a route trace read whole.
type Trace struct {
	TraceHeader
	Passes []TracePass
}

// TraceWriter writes a route trace. Its methods may be called from several goroutines; passes
// are written in the order Pass is called.
type TraceWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	h      TraceHeader
	buf    []byte // one pass's record, kept between passes
	err    error  // the first error: later passes are dropped, Flush and Close return it
	closed bool
}

// NewTraceWriter writes h to w and returns the writer of its passes.
func NewTraceWriter(w io.Writer, h TraceHeader) (*TraceWriter, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	h.UnitBytes = append([]uint64(nil), h.UnitBytes...)
	b := append([]byte(traceMagic), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(b[4:], traceVersion)
	binary.LittleEndian.PutUint16(b[6:], uint16(h.Layers))
	binary.LittleEndian.PutUint16(b[8:], uint16(h.Experts))
	binary.LittleEndian.PutUint16(b[10:], uint16(h.Used))
	for _, n := range h.UnitBytes {
		b = binary.LittleEndian.AppendUint64(b, n)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h.Model)))
	b = append(b, h.Model...)
	t := &TraceWriter{w: bufio.NewWriterSize(w, 1<<16), h: h}
	if _, err := t.w.Write(b); err != nil {
		return nil, fmt.Errorf("experts: writing a trace's header: %w", err)
	}
	return t, nil
}

// Header returns the trace's model shape.
func (t *TraceWriter) Header() TraceHeader { return t.h }

// Pass appends a pass of tokens: ids[(l·tokens + t)·Used + j] is the j-th expert token t's
// router named at layer l. An error (of the ids, or of the writer) drops the pass and every
// later one, and Flush and Close return it.
func (t *TraceWriter) Pass(prompt bool, tokens int, ids []int) error {
	h := &t.h
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("experts: a pass written to a closed trace")
	}
	if t.err != nil {
		return t.err
	}
	if tokens < 1 || tokens > traceMaxTokens || len(ids) != h.Layers*tokens*h.Used {
		t.err = fmt.Errorf("experts: a traced pass of %d tokens with %d ids (%d layers, %d used)", tokens, len(ids), h.Layers, h.Used)
		return t.err
	}
	b := append(t.buf[:0], 1)
	if prompt {
		b[0] = 0
	}
	b = binary.AppendUvarint(b, uint64(tokens-1))
	wide := h.idBytes() == 2
	for i, e := range ids {
		if e < 0 || e >= h.Experts {
			t.err = fmt.Errorf("experts: a traced pass names expert %d (of %d) at layer %d", e, h.Experts, i/(tokens*h.Used))
			return t.err
		}
		if wide {
			b = binary.LittleEndian.AppendUint16(b, uint16(e))
		} else {
			b = append(b, byte(e))
		}
	}
	t.buf = b
	if _, err := t.w.Write(b); err != nil {
		t.err = fmt.Errorf("experts: writing a trace: %w", err)
	}
	return t.err
}

// Flush writes what is buffered and returns the first error met so far.
func (t *TraceWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		if err := t.w.Flush(); err != nil {
			t.err = fmt.Errorf("experts: writing a trace: %w", err)
		}
	}
	return t.err
}

// Close flushes the trace; later passes are refused. It does not close the underlying writer.
func (t *TraceWriter) Close() error {
	err := t.Flush()
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return err
}

// ReadTrace reads a whole route trace. Whatever the bytes, it returns an error rather than
// panicking, and it allocates no more than the bytes it has read justify (and a bounded
// header).
func ReadTrace(r io.Reader) (*Trace, error) {
	br := bufio.NewReader(r)
	var fixed [12]byte
	if _, err := io.ReadFull(br, fixed[:]); err != nil {
		return nil, fmt.Errorf("experts: reading a trace's header: %w", err)
	}
	if string(fixed[:4]) != traceMagic {
		return nil, fmt.Errorf("experts: not a route trace (magic %q)", fixed[:4])
	}
	if v := binary.LittleEndian.Uint16(fixed[4:]); v != traceVersion {
		return nil, fmt.Errorf("experts: route trace version %d (this reader knows %d)", v, traceVersion)
	}
	tr := &Trace{TraceHeader: TraceHeader{Layers: int(binary.LittleEndian.Uint16(fixed[6:])),
		Experts: int(binary.LittleEndian.Uint16(fixed[8:])), Used: int(binary.LittleEndian.Uint16(fixed[10:]))}}
	h := &tr.TraceHeader
	h.UnitBytes = []uint64{} // checked below against layers (at most 65535 of 8 bytes)
	if h.Layers < 1 {
		return nil, fmt.Errorf("experts: trace of %d layers", h.Layers)
	}
	units := make([]byte, 8*h.Layers+2)
	if _, err := io.ReadFull(br, units); err != nil {
		return nil, fmt.Errorf("experts: reading a trace's unit sizes: %w", err)
	}
	for l := range h.Layers {
		h.UnitBytes = append(h.UnitBytes, binary.LittleEndian.Uint64(units[8*l:]))
	}
	name := make([]byte, binary.LittleEndian.Uint16(units[8*h.Layers:]))
	if len(name) > traceMaxName {
		return nil, fmt.Errorf("experts: trace's model name of %d bytes (at most %d)", len(name), traceMaxName)
	}
	if _, err := io.ReadFull(br, name); err != nil {
		return nil, fmt.Errorf("experts: reading a trace's model name: %w", err)
	}
	h.Model = string(name)
	if err := h.check(); err != nil {
		return nil, err
	}
	seen := make([]int, h.Experts) // expert → 1 + the last id index of a token naming it
	var chunk []byte
	for p := 0; ; p++ {
		kind, err := br.ReadByte()
		if err == io.EOF {
			return tr, nil
		}
		if err != nil {
			return nil, fmt.Errorf("experts: trace pass %d: %w", p, err)
		}
		if kind > 1 {
			return nil, fmt.Errorf("experts: trace pass %d has kind %d", p, kind)
		}
		n, err := readUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("experts: trace pass %d's tokens: %w", p, noEOF(err))
		}
		if n >= traceMaxTokens {
			return nil, fmt.Errorf("experts: trace pass %d has %d tokens (at most %d)", p, n+1, traceMaxTokens)
		}
		pass := TracePass{Prompt: kind == 0, Tokens: int(n) + 1}
		total := h.Layers * pass.Tokens * h.Used
		if total > traceMaxIDs {
			return nil, fmt.Errorf("experts: trace pass %d has %d ids (at most %d)", p, total, traceMaxIDs)
		}
		// Read in pieces of at most 1 MiB, so that a truncated file allocates only what it
		// holds.
		width := h.idBytes()
		for len(pass.IDs) < total {
			k := min(total-len(pass.IDs), 1<<20/width)
			if cap(chunk) < k*width {
				chunk = make([]byte, k*width)
			}
			c := chunk[:k*width]
			if _, err := io.ReadFull(br, c); err != nil {
				return nil, fmt.Errorf("experts: trace pass %d's ids: %w", p, noEOF(err))
			}
			for i := range k {
				e := int(c[i])
				if width == 2 {
					e = int(binary.LittleEndian.Uint16(c[2*i:]))
				}
				at := len(pass.IDs)
				if e >= h.Experts {
					return nil, fmt.Errorf("experts: trace pass %d names expert %d of %d", p, e, h.Experts)
				}
				// A token's ids are distinct: ids at or after the token's first index that
				// already named e are this token's.
				if first := at - at%h.Used; seen[e] > first {
					return nil, fmt.Errorf("experts: trace pass %d names expert %d twice for one token", p, e)
				}
				seen[e] = at + 1
				pass.IDs = append(pass.IDs, uint16(e))
			}
		}
		clear(seen)
		tr.Passes = append(tr.Passes, pass)
	}
}

// readUvarint reads a uvarint of at most three bytes (a pass's tokens) in its shortest form,
// so that every trace has one encoding.
func readUvarint(br *bufio.Reader) (uint64, error) {
	var n uint64
	for i := 0; i < 3; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if i > 0 && b == 0 {
			return 0, errors.New("a varint not in its shortest form")
		}
		n |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return n, nil
		}
	}
	return 0, errors.New("a varint of more than three bytes")
}

// noEOF turns an end of file inside a record into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Write writes the whole trace to w in the format ReadTrace reads.
func (tr *Trace) Write(w io.Writer) error {
	t, err := NewTraceWriter(w, tr.TraceHeader)
	if err != nil {
		return err
	}
	var ids []int
	for _, p := range tr.Passes {
		ids = ids[:0]
		for _, e := range p.IDs {
			ids = append(ids, int(e))
		}
		if err := t.Pass(p.Prompt, p.Tokens, ids); err != nil {
			return err
		}
	}
	return t.Close()
}

// Call is one call the engine makes to the store (Store.Acquire): the experts a pass names at
// a layer, in increasing id order, the tokens routed to each, and the pass's tokens.
type Call struct {
	Layer       int
	IDs, Counts []int
	Tokens      int
	Prompt      bool
	Pass        int // the pass's index in the trace
}

// Calls returns the store calls the trace's passes make, in order: one per pass and layer,
// naming what the engine's moeRunner names (every expert a token of the pass routed to, in
// increasing id order, with its count).
func (tr *Trace) Calls() []Call {
	h := &tr.TraceHeader
	var calls []Call
	count := make([]int, h.Experts)
	for p, pass := range tr.Passes {
		for l := range h.Layers {
			ids := pass.IDs[l*pass.Tokens*h.Used : (l+1)*pass.Tokens*h.Used]
			for _, e := range ids {
				count[e]++
			}
			c := Call{Layer: l, Tokens: pass.Tokens, Prompt: pass.Prompt, Pass: p}
			for e, n := range count {
				if n > 0 {
					c.IDs, c.Counts = append(c.IDs, e), append(c.Counts, n)
				}
			}
			clear(count)
			calls = append(calls, c)
		}
	}
	return calls
}
