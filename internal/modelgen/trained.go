package modelgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/gguf/quant"
)

// The trained tiny models (tools/train, testdata/trained) are committed in a compact form,
// since most of a GGUF is rows no training touched: the output and embedding rows of the token
// ids its data never uses are zero, and the tokenizer's metadata is a known one (OLMoE's, which
// the binaries carry; Qwen3's, which tools/deps.sh installs). CompactTrained drops both;
// ExpandTrained puts them back, byte for byte the file compacted.
const (
	// TrainedCompactPath is the OLMoE model's compact file, below the module root: the Q4_K_M
	// export (the Q8_0 one is 21 MB even compact; the tests make their Q8_0 from this,
	// RequantizeTrained).
	TrainedCompactPath = "testdata/trained/olmoe-tiny-q4_k_m.compact.gguf.gz"
	// TrainedQwen3CompactPath is the Qwen3-MoE model's, also the Q4_K_M export.
	TrainedQwen3CompactPath = "testdata/trained/qwen3-tiny-q4_k_m.compact.gguf.gz"

	trainedRowsKey  = "trochilus.trained.rows"  // the row ids kept, increasing
	trainedVocabKey = "trochilus.trained.vocab" // the rows of the whole matrices
)

// trainedRowTensors are the matrices with a row per token id.
var trainedRowTensors = []string{"token_embd.weight", "output.weight"}

// CompactTrained writes to dst, gzip-compressed, the compact form of the trained model full:
// its metadata without the tokenizer's (which must come last, as Write puts it), and
// token_embd and output with only the rows that are not zero in one of them.
func CompactTrained(dst io.Writer, full *gguf.File) error {
	var vocab int64
	raws, rowBytes := map[string][]byte{}, map[string]int64{}
	for _, name := range trainedRowTensors {
		t, ok := full.Tensor(name)
		if !ok || len(t.Dims) != 2 || t.Type.BlockElems() == 0 {
			return fmt.Errorf("modelgen: compact: no matrix %s", name)
		}
		rb, err := t.Type.RowBytes(int64(t.Dims[0]))
		if err != nil {
			return fmt.Errorf("modelgen: compact: %s: %w", name, err)
		}
		if vocab != 0 && int64(t.Dims[1]) != vocab {
			return fmt.Errorf("modelgen: compact: %s has another number of rows than %s", name, trainedRowTensors[0])
		}
		rowBytes[name], vocab = rb, int64(t.Dims[1])
		raw := make([]byte, t.Size)
		if err := full.ReadTensor(t, raw); err != nil {
			return fmt.Errorf("modelgen: compact: %w", err)
		}
		raws[name] = raw
	}
	var rows []uint32
	for r := range vocab {
		for _, name := range trainedRowTensors {
			rb := rowBytes[name]
			if !bytes.Equal(raws[name][r*rb:(r+1)*rb], make([]byte, rb)) {
				rows = append(rows, uint32(r))
				break
			}
		}
	}

	w := gguf.NewWriter()
	tokenizer := false
	for _, kv := range full.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			tokenizer = true
			continue
		}
		if tokenizer {
			return fmt.Errorf("modelgen: compact: %s follows the tokenizer's metadata, which must come last", kv.Key)
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("modelgen: compact: %w", err)
		}
	}
	if err := w.Set(trainedRowsKey, gguf.Uint32s(rows)); err != nil {
		return err
	}
	if err := w.Set(trainedVocabKey, gguf.Uint32(uint32(vocab))); err != nil {
		return err
	}
	for i := range full.Tensors {
		t := &full.Tensors[i]
		raw, dims := raws[t.Name], t.Dims
		if raw != nil {
			rb := rowBytes[t.Name]
			kept := make([]byte, 0, int64(len(rows))*rb)
			for _, r := range rows {
				kept = append(kept, raw[int64(r)*rb:(int64(r)+1)*rb]...)
			}
			raw, dims = kept, []uint64{t.Dims[0], uint64(len(rows))}
		} else {
			raw = make([]byte, t.Size)
			if err := full.ReadTensor(t, raw); err != nil {
				return fmt.Errorf("modelgen: compact: %w", err)
			}
		}
		if err := w.AddTensor(t.Name, t.Type, dims, toPlanes(t.Type, raw)); err != nil {
			return fmt.Errorf("modelgen: compact: %w", err)
		}
	}
	zw, err := gzip.NewWriterLevel(dst, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(zw); err != nil {
		return fmt.Errorf("modelgen: compact: %w", err)
	}
	return zw.Close()
}

// ExpandTrained writes to path the whole GGUF of the compact, gzip-compressed model read from
// src: the zero rows back in place, its architecture's tokenizer last (OLMoE's, the one the
// binaries carry; or for qwen3moe Qwen3's, FindQwen3Tokenizer's).
func ExpandTrained(ctx context.Context, path string, src io.Reader) error {
	zr, err := gzip.NewReader(src)
	if err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, 1<<30))
	if err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	c, err := gguf.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	rows, err := c.Uint32s(trainedRowsKey)
	if err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	vocab, err := c.Uint32(trainedVocabKey)
	if err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	for i, r := range rows {
		if r >= vocab || i > 0 && r <= rows[i-1] {
			return errors.New("modelgen: expand: the kept rows are not increasing ids below the vocabulary")
		}
	}
	find := FindOLMoETokenizer
	if arch, _ := c.Str("general.architecture"); arch == "qwen3moe" {
		find = FindQwen3Tokenizer
	}
	tok, err := find("")
	if err != nil {
		return err
	}
	tkvs, err := tok.metadata(int(vocab))
	if err != nil {
		return err
	}
	w := gguf.NewWriter()
	for _, kv := range c.KVs {
		if kv.Key == trainedRowsKey || kv.Key == trainedVocabKey {
			continue
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("modelgen: expand: %w", err)
		}
	}
	for _, kv := range tkvs {
		if err := w.Set(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("modelgen: expand: %w", err)
		}
	}
	for i := range c.Tensors {
		t := &c.Tensors[i]
		raw := make([]byte, t.Size)
		if err := c.ReadTensor(t, raw); err != nil {
			return fmt.Errorf("modelgen: expand: %w", err)
		}
		raw = fromPlanes(t.Type, raw)
		dims := t.Dims
		if t.Name == trainedRowTensors[0] || t.Name == trainedRowTensors[1] {
			if len(dims) != 2 || dims[1] != uint64(len(rows)) {
				return fmt.Errorf("modelgen: expand: %s has %v rows, %d kept", t.Name, dims, len(rows))
			}
			rb := t.Size / int64(len(rows))
			full := make([]byte, int64(vocab)*rb)
			for k, r := range rows {
				copy(full[int64(r)*rb:], raw[int64(k)*rb:int64(k+1)*rb])
			}
			raw, dims = full, []uint64{dims[0], uint64(vocab)}
		}
		if err := w.AddTensor(t.Name, t.Type, dims, raw); err != nil {
			return fmt.Errorf("modelgen: expand: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("modelgen: expand: %w", err)
	}
	return nil
}

// ExpandTrainedFile is ExpandTrained from the committed compact file of the OLMoE model, found
// from the working directory's module root.
func ExpandTrainedFile(ctx context.Context, path string) error {
	return ExpandTrainedFrom(ctx, path, TrainedCompactPath)
}

// ExpandTrainedFrom is ExpandTrained from the committed compact file at compact, a path below
// the working directory's module root (TrainedCompactPath, TrainedQwen3CompactPath).
func ExpandTrainedFrom(ctx context.Context, path, compact string) error {
	root := moduleRoot()
	if root == "" {
		return errors.New("modelgen: no go.mod at or above the working directory: the trained model's compact file cannot be found")
	}
	f, err := os.Open(filepath.Join(root, compact))
	if err != nil {
		return fmt.Errorf("modelgen: %w", err)
	}
	defer f.Close()
	return ExpandTrained(ctx, path, f)
}

// toPlanes lays a Q8_0 tensor's blocks out as three planes, the low bytes of every block's half
// scale, then their high bytes, then the quants, which gzip compresses 1.6% better than the
// blocks interleaved (what keeps the compact file under 20 MiB); other types are left as they
// are. fromPlanes undoes it.
func toPlanes(t gguf.Type, raw []byte) []byte {
	if t != gguf.TypeQ8_0 {
		return raw
	}
	n := len(raw) / 34
	out := make([]byte, len(raw))
	for i := range n {
		b := raw[34*i : 34*i+34]
		out[i], out[n+i] = b[0], b[1]
		copy(out[2*n+32*i:], b[2:])
	}
	return out
}

func fromPlanes(t gguf.Type, raw []byte) []byte {
	if t != gguf.TypeQ8_0 {
		return raw
	}
	n := len(raw) / 34
	out := make([]byte, len(raw))
	for i := range n {
		b := out[34*i : 34*i+34]
		b[0], b[1] = raw[i], raw[n+i]
		copy(b[2:], raw[2*n+32*i:2*n+32*i+32])
	}
	return out
}

// RequantizeTrained writes to path the model src with every tensor that is not F32 decoded
// (gguf/quant, ggml's bits) and encoded again as type to, its metadata otherwise src's but for
// general.file_type and general.name: the trained model in another type, made in tests from
// the committed one.
func RequantizeTrained(path string, src *gguf.File, to gguf.Type) error {
	w := Uniform(to)
	if w.FileType == 0 && to != gguf.TypeF32 {
		return fmt.Errorf("modelgen: requantize: no file type for %v", to)
	}
	out := gguf.NewWriter()
	for _, kv := range src.KVs {
		v := kv.Value
		switch kv.Key {
		case "general.file_type":
			v = gguf.Uint32(w.FileType)
		case "general.name":
			if name, err := src.Str(kv.Key); err == nil {
				v = gguf.String(name + ", requantized to " + w.Name)
			}
		}
		if err := out.Set(kv.Key, v); err != nil {
			return fmt.Errorf("modelgen: requantize: %w", err)
		}
	}
	for i := range src.Tensors {
		t := &src.Tensors[i]
		raw := make([]byte, t.Size)
		if err := src.ReadTensor(t, raw); err != nil {
			return fmt.Errorf("modelgen: requantize: %w", err)
		}
		typ := t.Type
		if typ != gguf.TypeF32 {
			x := make([]float32, t.Elems())
			if err := quant.Dequantize(t.Type, raw, x); err != nil {
				return fmt.Errorf("modelgen: requantize %s: %w", t.Name, err)
			}
			n, err := to.RowBytes(int64(len(x)))
			if err != nil {
				return fmt.Errorf("modelgen: requantize %s: %w", t.Name, err)
			}
			raw, typ = make([]byte, n), to
			if err := quant.Quantize(to, x, raw); err != nil {
				return fmt.Errorf("modelgen: requantize %s: %w", t.Name, err)
			}
		}
		if err := out.AddTensor(t.Name, typ, t.Dims, raw); err != nil {
			return fmt.Errorf("modelgen: requantize: %w", err)
		}
	}
	if err := out.WriteFile(path); err != nil {
		return fmt.Errorf("modelgen: requantize: %w", err)
	}
	return nil
}

// RequantizeTrainedFile is RequantizeTrained from the GGUF at src to the weights named to
// ("q8_0", see ParseWeights; uniform types only).
func RequantizeTrainedFile(path, src, to string) error {
	w, err := ParseWeights(to)
	if err != nil {
		return err
	}
	if w.MoreBits != 0 || w.Output != w.Attention {
		return fmt.Errorf("modelgen: requantize: %s is a mix, not one type", to)
	}
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return RequantizeTrained(path, f, w.Attention)
}
