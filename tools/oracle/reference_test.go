package oracle_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refOutput is the JSON olmoe_ref.py writes (README.md documents it).
type refOutput struct {
	Format  string      `json:"format"`
	Threads int         `json:"threads"`
	Results []refResult `json:"results"`
	Seconds float64     `json:"seconds"`
}

type refResult struct {
	Model        string         `json:"model"`
	Prompt       []int          `json:"prompt"`
	Generated    []int          `json:"generated"`
	Rows         int            `json:"rows"`
	Vocab        int            `json:"vocab"`
	Margins      []float64      `json:"margins"`
	PromptArgmax []int          `json:"prompt_argmax"`
	Nonfinite    int            `json:"nonfinite_logits"`
	RouterTies   int            `json:"router_boundary_ties"`
	RouterMinGap *float64       `json:"router_min_gap"`
	RouterGaps   []float64      `json:"router_min_gap_by_row"`
	Routing      [][][]int      `json:"routing_by_row"`
	Config       map[string]any `json:"config"`
	TensorTypes  []string       `json:"tensor_types"`
	LogitsOffset int64          `json:"logits_offset"`
	FirstRow     int            `json:"first_row"`
	Seconds      float64        `json:"seconds"`
}

type refJob struct {
	Model    string `json:"model"`
	Tokens   []int  `json:"tokens"`
	Generate int    `json:"generate"`
	Rows     string `json:"rows,omitempty"` // "decode": only the rows that chose generated tokens
}

// refRun holds one olmoe_ref.py run: its jobs, its JSON and each job's logits, rows x vocab.
type refRun struct {
	jobs   []refJob
	out    refOutput
	logits [][][]float32
}

// runReference runs olmoe_ref.py in batch mode and checks the layout: offsets contiguous,
// rows = prompt + generate - 1, file size exact.
func runReference(t *testing.T, py, dir, name string, jobs []refJob) refRun {
	t.Helper()
	bin := filepath.Join(dir, name+".bin")
	js := filepath.Join(dir, name+".json")
	b, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	jobsPath := filepath.Join(dir, name+".jobs.json")
	if err := os.WriteFile(jobsPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPython(t, py, script(t, "olmoe_ref.py"), "--logits", bin, "--out", js, "--batch", jobsPath)
	b, err = os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	run := refRun{jobs: jobs}
	if err := json.Unmarshal(b, &run.out); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	if run.out.Format != "trochilus-olmoe-ref/1" || len(run.out.Results) != len(jobs) {
		t.Fatalf("%s: format %q with %d results for %d jobs", js, run.out.Format, len(run.out.Results), len(jobs))
	}
	all := readFloats[float32](t, bin)
	var at int64
	for i, r := range run.out.Results {
		j := jobs[i]
		wantRows, wantFirst := len(j.Tokens)+max(j.Generate-1, 0), 0
		if j.Rows == "decode" {
			wantFirst = len(j.Tokens) - 1
			wantRows -= wantFirst
		}
		if r.LogitsOffset != at || r.Rows != wantRows || r.FirstRow != wantFirst || len(r.Generated) != j.Generate ||
			!slices.Equal(r.Prompt, j.Tokens) || r.Vocab != int(r.Config["vocab_size"].(float64)) {
			t.Fatalf("job %d: offset %d rows %d generated %d prompt %v vocab %d; want offset %d rows %d generated %d prompt %v",
				i, r.LogitsOffset, r.Rows, len(r.Generated), r.Prompt, r.Vocab, at, wantRows, j.Generate, j.Tokens)
		}
		n := int64(r.Rows * r.Vocab)
		if at/4+n > int64(len(all)) {
			t.Fatalf("job %d: logits file holds %d floats, job needs [%d, %d)", i, len(all), at/4, at/4+n)
		}
		rows := make([][]float32, r.Rows)
		for k := range rows {
			rows[k] = all[at/4+int64(k*r.Vocab) : at/4+int64((k+1)*r.Vocab)]
		}
		run.logits = append(run.logits, rows)
		at += 4 * n
	}
	if at != 4*int64(len(all)) {
		t.Fatalf("logits file holds %d bytes, the jobs account for %d", 4*len(all), at)
	}
	return run
}

// fragileGap is the router margin (k-th minus (k+1)-th probability) under which float32 noise
// may swap an expert; float32 noise in these tiny models' routing probabilities is ~1e-7.
const fragileGap = 1e-5

// sameRouting compares two computations' routing over their first n rows. It returns how many
// leading rows chose the same experts in every layer: from the first that did not, logits may
// differ far beyond rounding. A difference is legitimate only where the router margin (in
// either computation whose gaps are given) is under fragileGap; anywhere else it is an error.
func sameRouting(t *testing.T, what string, n int, a, b [][][]int, gaps ...[]float64) int {
	t.Helper()
	for r := range n {
		if fmt.Sprint(a[r]) == fmt.Sprint(b[r]) {
			continue
		}
		margin := math.Inf(1)
		for _, g := range gaps {
			margin = math.Min(margin, g[r])
		}
		if margin >= fragileGap {
			t.Errorf("%s: row %d routed %v vs %v with router margin %.3g: not a near-tie", what, r, a[r], b[r], margin)
		} else {
			t.Logf("%s: row %d routed %v vs %v at a near-tie (margin %.3g); later rows not compared", what, r, a[r], b[r], margin)
		}
		return r
	}
	return n
}

// maxRowDiff is the largest |a-b| over the first n rows of a and b.
func maxRowDiff(a, b [][]float32, n int) float64 {
	worst := 0.0
	for i := range n {
		d, _ := maxAbsDiff(a[i], widen(b[i]))
		worst = math.Max(worst, d)
	}
	return worst
}

// refModel is one model file the reference checks run on.
type refModel struct {
	name  string
	path  string
	vocab int            // token ids for prompts are drawn below this
	cfg   map[string]any // config values olmoe_ref must report
}

// TestReferenceTinyModels runs the reference checks (checkReference) on three tiny random
// models written by tiny_olmoe.py: float weights; K-quants with GQA, clip_qkv and
// norm_topk_prob; Q8_0/Q4_0/BF16/F16 over three layers. It also checks that a token outside the
// vocabulary is a clear error from the single-job command line, and that dequantizing experts at
// each use (--cache-mb 0, as for the full-size model) changes no bit.
func TestReferenceTinyModels(t *testing.T) {
	py := python(t, true)
	dir := t.TempDir()
	specs := []struct {
		name string
		args []string
		cfg  map[string]any
	}{
		{"f32", nil, map[string]any{"hidden_size": 64.0, "num_experts": 4.0, "norm_topk_prob": false, "clip_qkv": nil, "vocab_size": 128.0}},
		{"kquant", []string{"--seed", "3", "--hidden", "256", "--ff", "256", "--heads", "4", "--kv-heads", "2",
			"--experts", "8", "--used", "3", "--vocab", "300", "--norm-topk", "--clamp-kqv", "2.5",
			"--types", "embd=Q4_K,output=Q6_K,attn=Q5_K,exps=Q2_K,down=Q3_K,router=F16"},
			map[string]any{"hidden_size": 256.0, "num_key_value_heads": 2.0, "num_experts_per_tok": 3.0,
				"norm_topk_prob": true, "clip_qkv": 2.5, "vocab_size": 300.0}},
		{"q8", []string{"--seed", "5", "--hidden", "64", "--ff", "64", "--heads", "2", "--experts", "6",
			"--layers", "3", "--vocab", "200", "--types", "embd=Q8_0,output=BF16,attn=Q8_0,exps=Q4_0,down=Q8_0,norm=F16"},
			map[string]any{"num_hidden_layers": 3.0, "head_dim": 32.0, "vocab_size": 200.0}},
	}
	var models []refModel
	for _, s := range specs {
		models = append(models, refModel{s.name, writeTinyModel(t, py, dir, s.name, s.args...), int(s.cfg["vocab_size"].(float64)), s.cfg})
	}
	batch := checkReference(t, py, dir, models)

	// The single-job command line, with experts dequantized at each use instead of kept (the
	// full-size model's way): the same bits as the batch.
	single := filepath.Join(dir, "single")
	j := batch.jobs[3]
	runPython(t, py, script(t, "olmoe_ref.py"), "--model", j.Model, "--tokens", joinInts(j.Tokens),
		"--generate", fmt.Sprint(j.Generate), "--cache-mb", "0", "--logits", single+".bin", "--out", single+".json")
	got := readFloats[float32](t, single+".bin")
	var want []float32
	for _, row := range batch.logits[3] {
		want = append(want, row...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("kquant: --cache-mb 0 single job: %d logits differ from the batch's %d", len(got), len(want))
	}

	// The single-job command line, with a token just past the vocabulary: a clear error.
	bad := filepath.Join(dir, "bad")
	_, stderr, err := tryPython(t, py, script(t, "olmoe_ref.py"), "--model", models[0].path,
		"--tokens", "1,128", "--generate", "4", "--logits", bad+".bin", "--out", bad+".json")
	if err == nil || !strings.Contains(string(stderr), "token 128 outside the vocabulary [0, 128)") {
		t.Errorf("token 128 of a 128-token vocabulary: err %v, stderr %q", err, stderr)
	}
}

// checkReference runs olmoe_ref.py on the models and checks it against itself and against the
// plain float64 re-derivation olmoe_f64.py. Per model, three jobs: an 8-token prompt with 16
// generated tokens (A), its first 3 tokens (B), and one token with 8 generated (D).
//   - layout: offsets, rows and file size (runReference); config values as expected;
//   - sanity: no non-finite logit, no router tie at the top-k boundary, logits not flat;
//   - greedy: each generated token is the lowest-index argmax of its row, margins as reported;
//   - prefix: B's logits equal A's first 3 rows;
//   - cache: A's KV-cache decoding equals one pass over prompt + generated[:-1];
//   - rows "decode": the first model's job A again, keeping only the decode rows: the same bits
//     as A's last rows;
//   - determinism: job A of the first model run again in a second process gives the same bits;
//   - float64: A's prompt logits match olmoe_f64.py.
//
// Comparisons between two computations stop at the first position whose routing differs, which
// is allowed only at a near-tie (sameRouting); at least one row must remain.
func checkReference(t *testing.T, py, dir string, models []refModel) refRun {
	t.Helper()
	const tol = 1e-4 // float32 rounding noise is ~1e-5 on logits of magnitude ~10
	rng := rand.New(rand.NewPCG(11, 12))
	var jobs []refJob
	for _, m := range models {
		prompt := make([]int, 8)
		for i := range prompt {
			prompt[i] = rng.IntN(m.vocab)
		}
		jobs = append(jobs,
			refJob{Model: m.path, Tokens: prompt, Generate: 16},
			refJob{Model: m.path, Tokens: prompt[:3]},
			refJob{Model: m.path, Tokens: []int{m.vocab - 1}, Generate: 8})
	}
	decode := refJob{jobs[0].Model, jobs[0].Tokens, jobs[0].Generate, "decode"}
	batch := runReference(t, py, dir, "batch", append(jobs, decode))
	t.Logf("batch: %d jobs in %.2fs inside Python", len(jobs)+1, batch.out.Seconds)
	// The "decode" rows are the last rows of the same computation: the same bits.
	p := len(jobs[0].Tokens)
	if d := maxRowDiff(batch.logits[len(jobs)], batch.logits[0][p-1:], len(batch.logits[len(jobs)])); d != 0 {
		t.Errorf("%s: rows \"decode\" differ from the last rows of rows \"all\" by %g", models[0].name, d)
	}

	var cacheJobs []refJob
	for mi, m := range models {
		a, b := 3*mi, 3*mi+1
		for k, v := range m.cfg {
			if got := batch.out.Results[a].Config[k]; fmt.Sprint(got) != fmt.Sprint(v) {
				t.Errorf("%s: config %s = %v, want %v", m.name, k, got, v)
			}
		}
		for _, j := range []int{a, b, a + 2} {
			r := batch.out.Results[j]
			if r.Nonfinite != 0 || r.RouterTies != 0 || r.RouterMinGap == nil || *r.RouterMinGap <= 0 {
				t.Errorf("%s job %d: %d non-finite logits, %d router ties, min gap %v", m.name, j, r.Nonfinite, r.RouterTies, r.RouterMinGap)
			}
			checkGreedy(t, m.name, r, batch.logits[j])
		}
		spread := 0.0
		for _, v := range batch.logits[a][0] {
			spread = math.Max(spread, math.Abs(float64(v)))
		}
		if spread < 1 {
			t.Errorf("%s: largest |logit| %g: the model is too flat for the checks to mean anything", m.name, spread)
		}
		ra, rb := batch.out.Results[a], batch.out.Results[b]
		n := sameRouting(t, m.name+" prefix", 3, ra.Routing, rb.Routing, ra.RouterGaps, rb.RouterGaps)
		prefix := maxRowDiff(batch.logits[b], batch.logits[a], n)
		if n == 0 || prefix > tol {
			t.Errorf("%s: 3-token prompt differs from the first %d rows of the 8-token prompt by %g", m.name, n, prefix)
		}
		r := batch.out.Results[a]
		full := append(slices.Clone(r.Prompt), r.Generated[:len(r.Generated)-1]...)
		cacheJobs = append(cacheJobs, refJob{Model: r.Model, Tokens: full})
		t.Logf("%s: types %v, largest |logit| %.2f, prefix max diff %.3g, router min gap %.3g, min margin %.3g, %.3fs",
			m.name, r.TensorTypes, spread, prefix, *r.RouterMinGap, slices.Min(r.Margins), r.Seconds)
	}

	// A second run: each model's prompt + generated[:-1] in a single pass, and the first job
	// again, whose bits must repeat across processes.
	recomputed := runReference(t, py, dir, "recompute", append(cacheJobs, jobs[0]))
	for mi, m := range models {
		rows := len(recomputed.logits[mi])
		rc, ra := recomputed.out.Results[mi], batch.out.Results[3*mi]
		n := sameRouting(t, m.name+" cache", rows, rc.Routing, ra.Routing, rc.RouterGaps, ra.RouterGaps)
		d := maxRowDiff(recomputed.logits[mi], batch.logits[3*mi], n)
		if n == 0 || d > tol {
			t.Errorf("%s: KV-cache decoding differs from one full pass by %g over %d of %d rows", m.name, d, n, rows)
		}
		t.Logf("%s: KV-cache decode vs full pass max diff %.3g over %d of %d rows", m.name, d, n, rows)
	}
	again := len(models)
	if d := maxRowDiff(recomputed.logits[again], batch.logits[0], len(batch.logits[0])); d != 0 ||
		!slices.Equal(recomputed.out.Results[again].Generated, batch.out.Results[0].Generated) {
		t.Errorf("%s: a second process differs from the first by %g (tokens %v vs %v)", models[0].name,
			d, recomputed.out.Results[again].Generated, batch.out.Results[0].Generated)
	}

	type f64Job struct {
		Model   string `json:"model"`
		Tokens  []int  `json:"tokens"`
		Logits  string `json:"logits"`
		Routing string `json:"routing"`
	}
	var f64Jobs []f64Job
	for mi, m := range models {
		r := batch.out.Results[3*mi]
		f64Jobs = append(f64Jobs, f64Job{r.Model, r.Prompt, filepath.Join(dir, m.name+".f64"), filepath.Join(dir, m.name+".f64.routing.json")})
	}
	b, err := json.Marshal(f64Jobs)
	if err != nil {
		t.Fatal(err)
	}
	f64Batch := filepath.Join(dir, "f64.jobs.json")
	if err := os.WriteFile(f64Batch, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPython(t, py, script(t, "olmoe_f64.py"), "--batch", f64Batch)
	for mi, m := range models {
		r := batch.out.Results[3*mi]
		want := readFloats[float64](t, f64Jobs[mi].Logits)
		if len(want) != len(r.Prompt)*r.Vocab {
			t.Fatalf("%s: olmoe_f64 wrote %d values, want %d", m.name, len(want), len(r.Prompt)*r.Vocab)
		}
		var routing [][][]int
		if b, err := os.ReadFile(f64Jobs[mi].Routing); err != nil || json.Unmarshal(b, &routing) != nil || len(routing) != len(r.Prompt) {
			t.Fatalf("%s: olmoe_f64 routing: %v (%d rows)", m.name, err, len(routing))
		}
		n := sameRouting(t, m.name+" float64", len(r.Prompt), r.Routing, routing, r.RouterGaps)
		worst := 0.0
		for k := range n {
			d, _ := maxAbsDiff(batch.logits[3*mi][k], want[k*r.Vocab:(k+1)*r.Vocab])
			worst = math.Max(worst, d)
		}
		if n == 0 || worst > tol {
			t.Errorf("%s: float32 reference vs float64 re-derivation: max diff %g over %d prompt rows", m.name, worst, n)
		}
		t.Logf("%s: float32 reference vs float64 re-derivation, %d x %d logits, max diff %.3g", m.name, n, r.Vocab, worst)
	}
	return batch
}

// checkGreedy recomputes each generated token and margin from the logits rows that chose it.
func checkGreedy(t *testing.T, name string, r refResult, rows [][]float32) {
	t.Helper()
	p := len(r.Prompt)
	for k := range r.Prompt {
		if got := argmax(rows[k]); got != r.PromptArgmax[k] {
			t.Errorf("%s: prompt row %d: argmax %d, JSON says %d", name, k, got, r.PromptArgmax[k])
		}
	}
	for j, tok := range r.Generated {
		row := rows[p-1+j]
		best := argmax(row)
		second := math.Inf(-1)
		for i, v := range row {
			if i != best {
				second = math.Max(second, float64(v))
			}
		}
		if tok != best || r.Margins[j] != float64(row[best])-second {
			t.Errorf("%s: generated[%d] = %d margin %g; row %d argmax %d margin %g",
				name, j, tok, r.Margins[j], p-1+j, best, float64(row[best])-second)
		}
	}
}
