package modelgen

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
)

// Version is the generator's version, written into general.description. It changes whenever
// the bytes written for a Config change.
const Version = 1

// chunkBytes is the most bytes one chunk of a tensor holds. It fixes where chunks start, and so
// the random streams; changing it changes every file (bump Version).
const chunkBytes = 1 << 20

// Write writes the model cfg describes to path (by way of a temporary file, renamed when
// complete). Tensors are made on every CPU the process may use.
func Write(ctx context.Context, path string, cfg Config) error {
	w, err := newWriter(ctx, &cfg)
	if err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("modelgen: %s: %w", path, ctx.Err())
		}
		return fmt.Errorf("modelgen: %w", err)
	}
	return nil
}

// WriteTo writes the model cfg describes to dst and returns the bytes written.
func WriteTo(ctx context.Context, dst io.Writer, cfg Config) (int64, error) {
	w, err := newWriter(ctx, &cfg)
	if err != nil {
		return 0, err
	}
	n, err := w.WriteTo(dst)
	if err != nil {
		return n, fmt.Errorf("modelgen: %w", err)
	}
	return n, nil
}

// newWriter checks cfg and sets up a gguf.Writer with its metadata and a streaming function per
// tensor.
func newWriter(ctx context.Context, cfg *Config) (*gguf.Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kvs, err := cfg.metadata()
	if err != nil {
		return nil, err
	}
	w := gguf.NewWriter()
	for _, kv := range kvs {
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return nil, fmt.Errorf("modelgen: %w", err)
		}
	}
	workers := max(runtime.GOMAXPROCS(0), 1)
	bufs := make([][]byte, 2*workers)
	for _, t := range cfg.tensors() {
		g := tensorGen{spec: t, seed: cfg.Seed, workers: workers, bufs: bufs}
		write := func(dst io.Writer) error { return g.stream(ctx, dst) }
		if cfg.Values != nil {
			write = func(dst io.Writer) error { return writeValues(dst, cfg.Values, t) }
		}
		if err := w.AddTensorFunc(t.name, t.typ, t.dims, write); err != nil {
			return nil, fmt.Errorf("modelgen: %w", err)
		}
	}
	return w, nil
}

// writeValues writes tensor t from the floats values gives for it, quantized to its type.
func writeValues(dst io.Writer, values func(string, int) ([]float32, error), t tensorSpec) error {
	elems := 1
	for _, d := range t.dims {
		elems *= int(d)
	}
	x, err := values(t.name, elems)
	if err != nil {
		return fmt.Errorf("tensor %s: %w", t.name, err)
	}
	if len(x) != elems {
		return fmt.Errorf("tensor %s: %d values given, its shape %v holds %d", t.name, len(x), t.dims, elems)
	}
	n, err := t.typ.RowBytes(int64(elems))
	if err != nil {
		return fmt.Errorf("tensor %s: %w", t.name, err)
	}
	b := make([]byte, n)
	if err := quant.Quantize(t.typ, x, b); err != nil {
		return fmt.Errorf("tensor %s: %w", t.name, err)
	}
	_, err = dst.Write(b)
	return err
}

// metadata returns the file's key/value pairs, in the order llama.cpp's converter writes them.
func (c *Config) metadata() ([]gguf.KV, error) {
	name := c.Name
	if name == "" {
		name = fmt.Sprintf("OLMoE-shaped random %s", c.Weights.Name)
	}
	a := c.arch()
	desc := c.Description
	if desc == "" {
		desc = fmt.Sprintf("random weights written by trochilus modelgen version %d, seed %d", Version, c.Seed)
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String(a)},
		{Key: "general.type", Value: gguf.String("model")},
		{Key: "general.name", Value: gguf.String(name)},
		{Key: "general.description", Value: gguf.String(desc)},
		{Key: a + ".block_count", Value: gguf.Uint32(uint32(c.Layers))},
		{Key: a + ".context_length", Value: gguf.Uint32(uint32(c.Context))},
		{Key: a + ".embedding_length", Value: gguf.Uint32(uint32(c.Hidden))},
	}
	if a == "qwen3moe" {
		// Qwen3-MoE names the expert width apart from a dense FFN width (which its MoE layers
		// do not use) and writes the head widths.
		kvs = append(kvs,
			gguf.KV{Key: a + ".feed_forward_length", Value: gguf.Uint32(uint32(c.ExpertFFN * c.ExpertsUsed))},
			gguf.KV{Key: a + ".attention.head_count", Value: gguf.Uint32(uint32(c.Heads))},
			gguf.KV{Key: a + ".attention.head_count_kv", Value: gguf.Uint32(uint32(c.KVHeads))},
			gguf.KV{Key: a + ".rope.freq_base", Value: gguf.Float32(c.RopeTheta)},
			gguf.KV{Key: a + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32(c.RMSEps)},
			gguf.KV{Key: a + ".expert_used_count", Value: gguf.Uint32(uint32(c.ExpertsUsed))},
			gguf.KV{Key: a + ".attention.key_length", Value: gguf.Uint32(uint32(c.HeadDim()))},
			gguf.KV{Key: a + ".attention.value_length", Value: gguf.Uint32(uint32(c.HeadDim()))},
			gguf.KV{Key: a + ".expert_count", Value: gguf.Uint32(uint32(c.Experts))},
			gguf.KV{Key: a + ".expert_feed_forward_length", Value: gguf.Uint32(uint32(c.ExpertFFN))},
		)
	} else {
		kvs = append(kvs,
			gguf.KV{Key: a + ".feed_forward_length", Value: gguf.Uint32(uint32(c.ExpertFFN))},
			gguf.KV{Key: a + ".attention.head_count", Value: gguf.Uint32(uint32(c.Heads))},
			gguf.KV{Key: a + ".attention.head_count_kv", Value: gguf.Uint32(uint32(c.KVHeads))},
			gguf.KV{Key: a + ".rope.freq_base", Value: gguf.Float32(c.RopeTheta)},
			gguf.KV{Key: a + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32(c.RMSEps)},
			gguf.KV{Key: a + ".expert_used_count", Value: gguf.Uint32(uint32(c.ExpertsUsed))},
			gguf.KV{Key: a + ".expert_count", Value: gguf.Uint32(uint32(c.Experts))},
		)
		if c.HeadDimension > 0 {
			kvs = append(kvs, gguf.KV{Key: a + ".attention.key_length", Value: gguf.Uint32(uint32(c.HeadDim()))},
				gguf.KV{Key: a + ".attention.value_length", Value: gguf.Uint32(uint32(c.HeadDim()))})
		}
	}
	// Qwen3-MoE always renormalises (llama.cpp hard-codes it for the architecture); OLMoE says
	// so in a key when a variant does.
	if c.NormTopKProb && a == "olmoe" {
		kvs = append(kvs, gguf.KV{Key: "olmoe.expert_weights_norm", Value: gguf.Bool(true)})
	}
	if c.ClipQKV > 0 {
		kvs = append(kvs, gguf.KV{Key: a + ".attention.clamp_kqv", Value: gguf.Float32(c.ClipQKV)})
	}
	kvs = append(kvs,
		gguf.KV{Key: "general.file_type", Value: gguf.Uint32(c.Weights.FileType)},
		gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32(2)},
	)
	if c.Tokenizer != nil {
		tok, err := c.Tokenizer.metadata(c.Vocab)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, tok...)
	}
	return kvs, nil
}

// tensorGen makes one tensor's bytes, chunk by chunk.
type tensorGen struct {
	spec    tensorSpec
	seed    uint64
	workers int
	bufs    [][]byte // 2 per worker, shared by the tensors (which are written one at a time)
}

// layout returns the tensor's block size in bytes, its number of blocks and the blocks per
// chunk. Norms and routers are F32, one element a block.
func (g *tensorGen) layout() (blockBytes, blocks, perChunk int) {
	elems := 1
	for _, d := range g.spec.dims {
		elems *= int(d)
	}
	blockBytes = g.spec.typ.BlockBytes()
	blocks = elems / g.spec.typ.BlockElems()
	return blockBytes, blocks, max(1, chunkBytes/blockBytes)
}

// fill writes chunk i of the tensor into buf.
func (g *tensorGen) fill(i int, buf []byte) {
	r := newRNG(chunkSeed(g.seed, g.spec.name, i))
	switch g.spec.kind {
	case kindNorm:
		fillNorm(&r, buf)
	case kindRouter:
		fillRouter(&r, buf, g.spec.sigma)
	default:
		f := fillers[g.spec.typ]
		f.fill(&r, buf, float32(float64(g.spec.sigma)/f.rms))
	}
}

// stream writes the tensor to dst. Chunks are made by up to g.workers goroutines, chunk i by
// worker i mod workers, each worker handing its chunks over in order through its own channel,
// so dst receives them in order whatever the timing.
func (g *tensorGen) stream(ctx context.Context, dst io.Writer) error {
	blockBytes, blocks, perChunk := g.layout()
	n := (blocks + perChunk - 1) / perChunk
	chunkLen := func(i int) int { return min(perChunk, blocks-i*perChunk) * blockBytes }
	buf := func(j int) []byte {
		if g.bufs[j] == nil {
			g.bufs[j] = make([]byte, perChunk*blockBytes, chunkBytes)
		}
		return g.bufs[j]
	}

	workers := min(g.workers, n)
	if workers <= 1 {
		b := buf(0)
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			b = b[:chunkLen(i)]
			g.fill(i, b)
			if _, err := dst.Write(b); err != nil {
				return err
			}
		}
		return nil
	}

	done := make(chan struct{})
	full := make([]chan []byte, workers)
	free := make([]chan []byte, workers)
	finished := make(chan struct{}, workers)
	for k := range workers {
		full[k] = make(chan []byte, 2)
		free[k] = make(chan []byte, 2)
		free[k] <- buf(2 * k)
		free[k] <- buf(2*k + 1)
	}
	defer func() {
		close(done)
		for range workers {
			<-finished
		}
	}()
	for k := range workers {
		go func() {
			defer func() { finished <- struct{}{} }()
			for i := k; i < n; i += workers {
				var b []byte
				select {
				case b = <-free[k]:
				case <-done:
					return
				}
				b = b[:chunkLen(i)]
				g.fill(i, b)
				select {
				case full[k] <- b:
				case <-done:
					return
				}
			}
		}()
	}
	for i := range n {
		k := i % workers
		var b []byte
		select {
		case b = <-full[k]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := dst.Write(b); err != nil {
			return err
		}
		free[k] <- b
	}
	return nil
}
