package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// The importance matrix llama.cpp's lowest-bit mixes need (llama_model_quantize refuses IQ1_S,
// IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S and IQ3_XXS tensors, and Q2_K_S's Q2_K ones, without one), made
// as llama-imatrix makes it: text run through the F16 model, and for each weight matrix the mean
// over the rows it multiplied of each input column's square. An expert's matrices see only the
// tokens routed to it, so a stacked expert tensor has one such vector per expert, expert after
// expert (an expert no token reached gets ones, as llama-quantize fills a partial matrix's
// unvisited experts). It only steers the quantizer's choice of scales and grid points toward
// the columns that matter; what the oracle test checks, that the engine reads the bytes of
// llama.cpp's layouts exactly as the reference does, does not depend on how well they were
// chosen.

// imatrixText returns the tokens the importance matrix of a model of vocab tokens is computed
// over: for the trained model its benchmark prompt (450 tokens of the text it was trained on,
// which none of the oracle's prompts is), for a random model as many tokens drawn from a fixed
// seed (a random model has no text).
func imatrixText(t testing.TB, trained bool, vocab int) []int32 {
	t.Helper()
	if trained {
		for _, p := range readPromptFile(t, "prompts.json") {
			if p.Name == "chat-rewrite-file" {
				return p.IDs
			}
		}
		t.Fatal("testdata/trained/prompts.json has no chat-rewrite-file prompt")
	}
	return randomTokens(rand.New(rand.NewPCG(16, 450)), 450, vocab)
}

// imatrixStat accumulates one tensor's squared inputs: per expert (one for a 2-D matrix) the
// sum of each column's squares and the rows summed.
type imatrixStat struct {
	cols int
	sums []float64 // experts × cols
	rows []int     // experts
}

func (s *imatrixStat) add(expert int, x []float32) {
	sum := s.sums[expert*s.cols : (expert+1)*s.cols]
	for i, v := range x[:s.cols] {
		sum[i] += float64(v) * float64(v)
	}
	s.rows[expert]++
}

// engineImatrix runs tokens through the model at path on the engine's own forward pass and
// returns the importance matrix of its weight matrices, by GGUF tensor name. It drives the
// steps of moeRunner.forward itself so that it can read each product's input where the pass
// leaves it (the attention norm's output for q, k and v, the attention for its output, the
// feed-forward norm's output for the router and each expert's gate and up, the SwiGLU rows for
// each expert's down); the logits it ends with must be those the session computes for the same
// tokens, bit for bit, which shows the pass it drove was the engine's. output.weight is left out
// and token_embd.weight has none, as llama-imatrix does by default (the embedding is a lookup;
// the head needs --process-output).
func engineImatrix(t testing.TB, path string, tokens []int32) oracle.Imatrix {
	t.Helper()
	tm := testModel{path: path}
	m := tm.load(t, Options{Threads: 2})
	s, err := m.NewSession(SessionOptions{Context: len(tokens)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, ok := s.r.(*moeRunner)
	if !ok {
		t.Fatalf("%s: a %T, not a moe runner", path, s.r)
	}
	c := r.c
	stats := map[string]*imatrixStat{}
	stat := func(layer int, role string, cols, experts int) *imatrixStat {
		name := fmt.Sprintf("blk.%d.%s.weight", layer, role)
		if stats[name] == nil {
			stats[name] = &imatrixStat{cols: cols, sums: make([]float64, experts*cols), rows: make([]int, experts)}
		}
		return stats[name]
	}
	ctx := context.Background()
	hd, k, f := c.Hidden, c.ExpertsUsed, c.ExpertFFN
	for pos := 0; pos < len(tokens); pos += r.passMax {
		chunk := tokens[pos:min(len(tokens), pos+r.passMax)]
		n := len(chunk)
		r.n, r.pos, r.tokens = n, pos, chunk
		if err := r.run(stepEmbed); err != nil {
			t.Fatal(err)
		}
		for l := range r.w.layers {
			r.layer = &r.w.layers[l]
			if err := r.attention(l); err != nil {
				t.Fatalf("layer %d attention: %v", l, err)
			}
			for tok := range n {
				h := r.h[tok*hd : (tok+1)*hd]
				for _, role := range []string{"attn_q", "attn_k", "attn_v"} {
					stat(l, role, hd, 1).add(0, h)
				}
				stat(l, "attn_output", r.qDim, 1).add(0, r.att[tok*r.qDim:(tok+1)*r.qDim])
			}
			if err := r.feedForward(); err != nil {
				t.Fatalf("layer %d experts: %v", l, err)
			}
			for tok := range n {
				stat(l, "ffn_gate_inp", hd, 1).add(0, r.h[tok*hd:(tok+1)*hd])
			}
			// Pair p = tok·k + j chose expert sel[p]; its SwiGLU row is sorted row where[p].
			for p, e := range r.sel[:n*k] {
				h := r.h[p/k*hd : (p/k+1)*hd]
				stat(l, "ffn_gate_exps", hd, c.Experts).add(e, h)
				stat(l, "ffn_up_exps", hd, c.Experts).add(e, h)
				i := int(r.where[p])
				stat(l, "ffn_down_exps", f, c.Experts).add(e, r.ge[i*f:(i+1)*f])
			}
		}
	}
	// The head of the last token, as forward computes it, against the session's own pass.
	if err := r.run(stepOutNorm); err != nil {
		t.Fatal(err)
	}
	if err := r.in.Set(r.h[(r.n-1)*hd:r.n*hd], 1, hd); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, c.Vocab)
	if err := r.mul.matmul(got, &r.w.out, &r.in); err != nil {
		t.Fatal(err)
	}
	r.tokens, r.layer = nil, nil
	fresh, err := m.NewSession(SessionOptions{Context: len(tokens)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, err := fresh.Eval(ctx, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDifference(want, got); i >= 0 {
		t.Fatalf("%s: the pass the importance matrix was read from ends in logit %d = %v, the session's pass in %v: it is not the engine's forward pass",
			path, i, got[i], want[i])
	}

	im := oracle.Imatrix{}
	for name, s := range stats {
		w := make([]float32, len(s.sums))
		for e, rows := range s.rows {
			for i := range s.cols {
				w[e*s.cols+i] = 1
				if rows > 0 {
					w[e*s.cols+i] = float32(s.sums[e*s.cols+i] / float64(rows))
				}
			}
		}
		im[name] = w
	}
	return im
}

// TestEngineImatrix checks the importance matrix of the trained model's F16 weights: an entry of
// llama.cpp's size for every matrix llama-imatrix collects, every value a positive finite mean
// square, experts that differ (each saw its own tokens), and layer 0's attention entry equal to
// the mean square of RMSNorm(embedding)·attn_norm over the text, computed here in float64 from
// the file's own tensors.
func TestEngineImatrix(t *testing.T) {
	src := llamaSources(t)[0]
	path := src.file(t)
	tokens := imatrixText(t, true, src.vocab)
	c := fileConfig(t, path)
	im := engineImatrix(t, path, tokens)
	if want := c.Layers * 8; len(im) != want {
		t.Errorf("%d entries, want %d (8 matrices a layer)", len(im), want)
	}
	for l := range c.Layers {
		size := map[string]int{
			"attn_q": c.Hidden, "attn_k": c.Hidden, "attn_v": c.Hidden, "attn_output": c.Heads * c.HeadDim,
			"ffn_gate_inp": c.Hidden, "ffn_gate_exps": c.Hidden * c.Experts, "ffn_up_exps": c.Hidden * c.Experts,
			"ffn_down_exps": c.ExpertFFN * c.Experts,
		}
		for role, n := range size {
			name := fmt.Sprintf("blk.%d.%s.weight", l, role)
			w := im[name]
			if len(w) != n {
				t.Errorf("%s: %d weights, want %d", name, len(w), n)
				continue
			}
			for i, v := range w {
				if !(v > 0) || math.IsInf(float64(v), 0) {
					t.Errorf("%s[%d] = %v: not a positive finite mean square", name, i, v)
					break
				}
			}
		}
		down := im[fmt.Sprintf("blk.%d.ffn_down_exps.weight", l)]
		if len(down) == c.ExpertFFN*c.Experts && slices.Equal(down[:c.ExpertFFN], down[c.ExpertFFN:2*c.ExpertFFN]) {
			t.Errorf("layer %d: experts 0 and 1 have the same importance for down: the routing was not followed", l)
		}
	}

	// Layer 0's attention input, from the file: hidden = RMSNorm(token_embd row)·attn_norm.
	f := openGGUF(t, path)
	defer f.Close()
	read := func(name string) []float32 {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("%s: no %s", path, name)
		}
		return dequantTensor(t, f, ti)
	}
	embd, norm := read("token_embd.weight"), read("blk.0.attn_norm.weight")
	want := make([]float64, c.Hidden)
	for _, tok := range tokens {
		x := embd[int(tok)*c.Hidden : (int(tok)+1)*c.Hidden]
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(c.Hidden)+float64(c.RMSEps))
		for i, v := range x {
			y := float64(v) * inv * float64(norm[i])
			want[i] += y * y / float64(len(tokens))
		}
	}
	got := im["blk.0.attn_q.weight"]
	for i := range want {
		if d := math.Abs(float64(got[i])-want[i]) / want[i]; !(d < 1e-4) {
			t.Fatalf("blk.0.attn_q.weight[%d] = %v, the file's own RMSNorm gives %v (relative difference %.3g)", i, got[i], want[i], d)
		}
	}
	t.Logf("%d entries from %d tokens; blk.0.attn_q.weight[:4] = %v, as the file's embeddings give", len(im), len(tokens), got[:4])
}
