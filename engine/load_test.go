package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// rewrite copies the GGUF at src to a new file, letting edit change the metadata (by key) and
// each tensor (name, type, dims, bytes); an edit returning ok=false drops the entry.
func rewrite(t *testing.T, src string, editKV func(kv gguf.KV) (gguf.KV, bool),
	editTensor func(ti gguf.TensorInfo, data []byte) (gguf.TensorInfo, []byte, bool)) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		if kv.Key == "general.alignment" {
			continue
		}
		if editKV != nil {
			var ok bool
			if kv, ok = editKV(kv); !ok {
				continue
			}
		}
		if err := w.Set(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors {
		data := make([]byte, ti.Size)
		if err := f.ReadTensor(&ti, data); err != nil {
			t.Fatal(err)
		}
		if editTensor != nil {
			var ok bool
			if ti, data, ok = editTensor(ti, data); !ok {
				continue
			}
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "edited.gguf")
	if err := w.WriteFile(dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func tinyQ8(t *testing.T) string {
	return modelgentest.TestModel(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)))
}

// TestLoadRefusesBadFiles checks that a file that is not what its metadata says is an error
// naming what is wrong, never a panic.
func TestLoadRefusesBadFiles(t *testing.T) {
	src := tinyQ8(t)
	keyIs := func(key string, v gguf.Value) func(gguf.KV) (gguf.KV, bool) {
		return func(kv gguf.KV) (gguf.KV, bool) {
			if kv.Key == key {
				kv.Value = v
			}
			return kv, true
		}
	}
	dropKey := func(key string) func(gguf.KV) (gguf.KV, bool) {
		return func(kv gguf.KV) (gguf.KV, bool) { return kv, kv.Key != key }
	}
	tensorEdit := func(name string, f func(*gguf.TensorInfo, []byte) []byte) func(gguf.TensorInfo, []byte) (gguf.TensorInfo, []byte, bool) {
		return func(ti gguf.TensorInfo, data []byte) (gguf.TensorInfo, []byte, bool) {
			if ti.Name != name {
				return ti, data, true
			}
			if f == nil {
				return ti, data, false
			}
			return ti, f(&ti, data), true
		}
	}
	for _, tc := range []struct {
		name   string
		path   func() string
		errHas []string
	}{
		{"unknown architecture", func() string {
			return rewrite(t, src, keyIs("general.architecture", gguf.String("llama9")), nil)
		}, []string{`"llama9"`, "not supported", "olmoe"}},
		{"missing key", func() string { return rewrite(t, src, dropKey("olmoe.expert_count"), nil) },
			[]string{`"olmoe.expert_count"`, "missing"}},
		{"zero heads", func() string {
			return rewrite(t, src, keyIs("olmoe.attention.head_count", gguf.Uint32(0)), nil)
		}, []string{`"olmoe.attention.head_count"`, "out of range"}},
		{"kv heads not dividing", func() string {
			return rewrite(t, src, keyIs("olmoe.attention.head_count_kv", gguf.Uint32(3)), nil)
		}, []string{"not a multiple"}},
		{"top-k above experts", func() string {
			return rewrite(t, src, keyIs("olmoe.expert_used_count", gguf.Uint32(9)), nil)
		}, []string{"9 experts used of 8"}},
		{"string where a count belongs", func() string {
			return rewrite(t, src, keyIs("olmoe.block_count", gguf.String("two")), nil)
		}, []string{`"olmoe.block_count"`}},
		{"missing tensor", func() string { return rewrite(t, src, nil, tensorEdit("blk.1.attn_k_norm.weight", nil)) },
			[]string{`"blk.1.attn_k_norm.weight"`, "missing"}},
		{"wrong expert count in a stacked tensor", func() string {
			return rewrite(t, src, nil, tensorEdit("blk.0.ffn_up_exps.weight", func(ti *gguf.TensorInfo, b []byte) []byte {
				ti.Dims = []uint64{ti.Dims[0], ti.Dims[1], ti.Dims[2] - 1}
				return b[:len(b)/8*7]
			}))
		}, []string{`"blk.0.ffn_up_exps.weight"`, "dims"}},
		{"transposed router", func() string {
			return rewrite(t, src, nil, tensorEdit("blk.0.ffn_gate_inp.weight", func(ti *gguf.TensorInfo, b []byte) []byte {
				ti.Dims = []uint64{ti.Dims[1], ti.Dims[0]}
				return b
			}))
		}, []string{`"blk.0.ffn_gate_inp.weight"`}},
		{"type the engine cannot multiply", func() string {
			return rewrite(t, src, nil, tensorEdit("output.weight", func(ti *gguf.TensorInfo, b []byte) []byte {
				ti.Type = gguf.TypeI8
				return make([]byte, ti.Elems())
			}))
		}, []string{`"output.weight"`, "cannot multiply"}},
		{"truncated file", func() string {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "short.gguf")
			if err := os.WriteFile(p, b[:len(b)-1000], 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"short.gguf"}},
		{"not a GGUF", func() string {
			p := filepath.Join(t.TempDir(), "text.gguf")
			if err := os.WriteFile(p, []byte("hello, this is not a model file at all"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"text.gguf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(context.Background(), tc.path(), Options{Threads: 1})
			if err == nil {
				m.Close()
				t.Fatal("Load succeeded")
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
}

// TestLoadCancelled checks that a cancelled context stops Load with ctx's error.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, tinyQ8(t), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a cancelled context: %v", err)
	}
}

// TestRouterNarrowing checks that routers whose values are all bfloat16 are stored as BF16
// (half the bytes), that one value with low bits keeps its whole router F32, and that the
// logits are the same bits either way.
func TestRouterNarrowing(t *testing.T) {
	src := tinyQ8(t)
	narrow := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2})
	wide := loadTest(t, tinyConfig(modelgen.Uniform(gguf.TypeQ8_0)), Options{Threads: 2, KeepF32Routers: true})
	for l, ly := range narrow.net.(*moe).layers {
		wl := wide.net.(*moe).layers[l]
		if ly.router.Type != gguf.TypeBF16 || len(ly.router.Data) != len(wl.router.Data)/2 || wl.router.Type != gguf.TypeF32 {
			t.Fatalf("layer %d router: %v of %d bytes (kept: %v of %d bytes), want BF16 of half",
				l, ly.router.Type, len(ly.router.Data), wl.router.Type, len(wl.router.Data))
		}
	}
	// One router value with a low bit set.
	path := rewrite(t, src, nil, func(ti gguf.TensorInfo, b []byte) (gguf.TensorInfo, []byte, bool) {
		if ti.Name == "blk.1.ffn_gate_inp.weight" {
			b = append([]byte(nil), b...)
			v := binary.LittleEndian.Uint32(b[40:])
			binary.LittleEndian.PutUint32(b[40:], v|1)
		}
		return ti, b, true
	})
	m, err := Load(context.Background(), path, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.net.(*moe).layers; got[0].router.Type != gguf.TypeBF16 || got[1].router.Type != gguf.TypeF32 {
		t.Fatalf("routers after one low bit in layer 1: %v, %v; want BF16, F32", got[0].router.Type, got[1].router.Type)
	}

	prompt := matrixPrompt(narrow.cfg.Vocab)[:20]
	a, b := wholePrompt(0)(t, narrow, prompt), wholePrompt(0)(t, wide, prompt)
	if i := firstDifference(a, b); i >= 0 {
		t.Fatalf("BF16 and F32 routers give different logits at %d: %v, %v", i, a[i], b[i])
	}
	t.Logf("%d logits identical with BF16 and F32 routers", len(a))
}
