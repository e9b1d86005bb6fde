package gguf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/gguf/internal/ggufbytes"
)

// olmoeShaped writes to dir a sparse file with OLMoE-1B-7B's tensor table (Q8_0 weights, about
// 7.3 GB of data that occupies no disk) and a 50,304-entry vocabulary with as many merges, and
// returns its path, its size and the end of its header.
func olmoeShaped(t testing.TB, dir string) (string, int64, int64) {
	const (
		layers, hidden, experts, expertWidth, vocab = 16, 2048, 64, 1024, 50304
	)
	type tensor struct {
		name string
		typ  Type
		dims []uint64
	}
	ts := []tensor{{"token_embd.weight", TypeQ8_0, []uint64{hidden, vocab}}}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tensor{p + "attn_norm.weight", TypeF32, []uint64{hidden}},
			tensor{p + "attn_q.weight", TypeQ8_0, []uint64{hidden, hidden}},
			tensor{p + "attn_k.weight", TypeQ8_0, []uint64{hidden, hidden}},
			tensor{p + "attn_v.weight", TypeQ8_0, []uint64{hidden, hidden}},
			tensor{p + "attn_output.weight", TypeQ8_0, []uint64{hidden, hidden}},
			tensor{p + "attn_q_norm.weight", TypeF32, []uint64{hidden}},
			tensor{p + "attn_k_norm.weight", TypeF32, []uint64{hidden}},
			tensor{p + "ffn_norm.weight", TypeF32, []uint64{hidden}},
			tensor{p + "ffn_gate_inp.weight", TypeF32, []uint64{hidden, experts}},
			tensor{p + "ffn_gate_exps.weight", TypeQ8_0, []uint64{hidden, expertWidth, experts}},
			tensor{p + "ffn_up_exps.weight", TypeQ8_0, []uint64{hidden, expertWidth, experts}},
			tensor{p + "ffn_down_exps.weight", TypeQ8_0, []uint64{expertWidth, hidden, experts}},
		)
	}
	ts = append(ts, tensor{"output_norm.weight", TypeF32, []uint64{hidden}}, tensor{"output.weight", TypeQ8_0, []uint64{hidden, vocab}})

	b := ggufbytes.Header(3, uint64(len(ts)), 4)
	b.Key("general.architecture", ggufbytes.String).Str("olmoe")
	b.Key("olmoe.block_count", ggufbytes.Uint32).U32(layers)
	b.Key("tokenizer.ggml.tokens", ggufbytes.Array).ArrayHead(ggufbytes.String, vocab)
	for i := range vocab {
		b.Str(fmt.Sprintf("tok%d", i))
	}
	b.Key("tokenizer.ggml.merges", ggufbytes.Array).ArrayHead(ggufbytes.String, vocab)
	for i := range vocab {
		b.Str(fmt.Sprintf("t%d o%d", i, i))
	}
	var off int64
	for _, tt := range ts {
		rb, _ := tt.typ.RowBytes(int64(tt.dims[0]))
		size := rb
		for _, d := range tt.dims[1:] {
			size *= int64(d)
		}
		b.Tensor(tt.name, tt.dims, uint32(tt.typ), uint64(off))
		off = alignUp(off+size, 32)
	}
	header := int64(b.Len())
	b.Pad(32)
	total := int64(b.Len()) + off

	path := filepath.Join(dir, "olmoe-shaped.gguf")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := fd.Truncate(total); err != nil { // sparse: the data takes no disk
		t.Fatal(err)
	}
	return path, total, header
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestOpenReadsOnlyHeader opens a 7 GB file and checks only its header was read (the byte count
// is the proof that it is quick; the time is only logged).
func TestOpenReadsOnlyHeader(t *testing.T) {
	path, size, header := olmoeShaped(t, t.TempDir())
	start := time.Now()
	f, err := Open(path)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != size || len(f.Tensors) != 195 || f.DataOffset != alignUp(header, 32) {
		t.Fatalf("size %d, %d tensors, data at %d", f.Size(), len(f.Tensors), f.DataOffset)
	}
	last := f.Tensors[len(f.Tensors)-1]
	if last.Offset+last.Size != size {
		t.Errorf("last tensor ends at %d, file at %d", last.Offset+last.Size, size)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 50304 || tokens[50303] != "tok50303" {
		t.Fatalf("tokens: %d, %v", len(tokens), err)
	}

	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	cr := &countingReaderAt{r: fd}
	if _, err := Read(cr, size); err != nil {
		t.Fatal(err)
	}
	// The header is read through a 1 MiB buffer: at most one buffer past its end.
	if got := cr.n.Load(); got > header+headerBufSize {
		t.Errorf("read %d bytes of a %d-byte header", got, header)
	}
	t.Logf("file %.2f GB, header %d bytes (%d tensors, %d keys): Open took %v, read %d bytes",
		float64(size)/1e9, header, len(f.Tensors), len(f.KVs), took, cr.n.Load())
}

// BenchmarkOpen opens files with many tensors: the OLMoE-shaped one (195 tensors, 100,608
// vocabulary strings, 7 GB of sparse data) and one of 10,000 small tensors.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	olmoe, _, _ := olmoeShaped(b, dir)

	w := NewWriter()
	w.Set("general.architecture", String("many"))
	row := make([]byte, 8*4)
	for i := range 10000 {
		if err := w.AddTensor(fmt.Sprintf("blk.%d.tensor_%d.weight", i/100, i%100), TypeF32, []uint64{8}, row); err != nil {
			b.Fatal(err)
		}
	}
	many := filepath.Join(dir, "many.gguf")
	if err := w.WriteFile(many); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{{"olmoe-shaped", olmoe}, {"10000-tensors", many}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := Open(bc.path)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
