package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/kernels"
	"github.com/trochilus-llm/trochilus/tokenizer"
)

// tinyModel copies the tiny Q8_0 OLMoE (full vocabulary, OLMoE's tokenizer), which modelgentest
// writes once per test binary, into a temporary directory. The copy is named tiny-q8_0.gguf
// because serve names the model after its file, and the tests expect that name.
func tinyModel(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(modelgentest.TinyQ8(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny-q8_0.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadModel loads path on one thread and opens a session with opts, for the engine's own
// answers to compare the commands with; the test's end closes the model.
func loadModel(t *testing.T, path string, opts engine.SessionOptions) (*engine.Model, *engine.Session) {
	t.Helper()
	m, err := engine.Load(context.Background(), path, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := m.NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// engineRun loads path and returns what the engine itself gives for prompt: the greedy tokens
// (n of them, no stop token) and the logits of every prompt position.
func engineRun(t *testing.T, path string, prompt []int32, n int) ([]int32, []float32, *engine.Model) {
	t.Helper()
	m, s := loadModel(t, path, engine.SessionOptions{})
	logits := make([]float32, len(prompt)*m.Config().Vocab)
	if err := s.EvalAll(context.Background(), prompt, logits); err != nil {
		t.Fatal(err)
	}
	if err := s.Rewind(0); err != nil {
		t.Fatal(err)
	}
	g, err := s.Generate(context.Background(), prompt, engine.GenerateOptions{MaxTokens: n})
	if err != nil {
		t.Fatal(err)
	}
	return g.Tokens, logits, m
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, v := range ids {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

func TestGenerateCommand(t *testing.T) {
	path := tinyModel(t)
	prompt := []int32{50279, 510, 3158, 8516, 30013}
	want, _, _ := engineRun(t, path, prompt, 6)
	code, out, errs := runCLI("generate", "-m", path, "--tokens", joinIDs(prompt), "-n", "6", "-t", "3", "-b", "2", "--ignore-eos")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out != joinIDs(want)+"\n" {
		t.Errorf("stdout %q, want %q", out, joinIDs(want)+"\n")
	}
	best, err := kernels.Best()
	if err != nil {
		t.Fatal(err)
	}
	weights := "weights mapped" // a tiny file fits in RAM: resident wherever the engine can own memory
	if runtime.GOOS == "linux" {
		weights = "weights resident"
	}
	for _, s := range []string{"prompt: 5 tokens", "generation: 6 tokens", "tok/s", "kernels " + best.Name + ",", weights} {
		if !strings.Contains(errs, s) {
			t.Errorf("stderr %q lacks %q", errs, s)
		}
	}
}

// TestGenerateStreamedExperts runs generate with the experts streamed through the fewest
// slots and through 1 MiB: the same ids, and the load line says where the experts are.
func TestGenerateStreamedExperts(t *testing.T) {
	path := tinyModel(t)
	prompt := []int32{50279, 510, 3158, 8516, 30013}
	want, _, _ := engineRun(t, path, prompt, 6)
	for _, budget := range []string{"min", "1"} {
		code, out, errs := runCLI("generate", "-m", path, "--tokens", joinIDs(prompt), "-n", "6", "--ignore-eos", "-expert-budget", budget)
		if code != 0 || out != joinIDs(want)+"\n" || !strings.Contains(errs, "experts streamed from disk") {
			t.Fatalf("-expert-budget %s: exit %d, stdout %q (want %q), stderr %s", budget, code, out, joinIDs(want), errs)
		}
	}
	for _, bad := range []string{"0", "-3", "lots"} {
		if code, _, errs := runCLI("generate", "-m", path, "--tokens", "1", "-expert-budget", bad); code != 2 || !strings.Contains(errs, "expert-budget") {
			t.Errorf("-expert-budget %s: exit %d, %s", bad, code, errs)
		}
	}
}

func TestLogitsCommand(t *testing.T) {
	path := tinyModel(t)
	prompt := []int32{50279, 12092, 13, 831}
	_, want, m := engineRun(t, path, prompt, 1)
	vocab := m.Config().Vocab
	file := filepath.Join(t.TempDir(), "logits.bin")
	code, _, errs := runCLI("logits", "-m", path, "--tokens", joinIDs(prompt), "-o", file, "-b", "3", "-t", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := make([]byte, 4*len(want))
	for i, v := range want {
		binary.LittleEndian.PutUint32(wantBytes[4*i:], math.Float32bits(v))
	}
	if !bytes.Equal(b, wantBytes) {
		t.Fatalf("logits file: %d bytes, not the engine's %d bytes", len(b), len(wantBytes))
	}
	code, out, errs := runCLI("logits", "-m", path, "--tokens", joinIDs(prompt), "--hex")
	if code != 0 {
		t.Fatalf("--hex: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(prompt) {
		t.Fatalf("--hex: %d lines for %d tokens", len(lines), len(prompt))
	}
	for i, l := range lines {
		got, err := hex.DecodeString(l)
		if err != nil || !bytes.Equal(got, wantBytes[4*vocab*i:4*vocab*(i+1)]) {
			t.Fatalf("--hex line %d is not row %d's bytes (%v)", i, i, err)
		}
	}
}

func TestRunCommand(t *testing.T) {
	path := tinyModel(t)
	text := "The quick brown fox"
	m, _ := loadModel(t, path, engine.SessionOptions{})
	tok, err := tokenizer.FromGGUF(m.File())
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(text, false)
	if tok.AddBOS() {
		ids = append([]int32{tok.BOS()}, ids...)
	}
	want, _, _ := engineRun(t, path, ids, 8)
	code, out, errs := runCLI("run", "-m", path, "-p", text, "-n", "8", "--ignore-eos")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out != tok.Decode(want)+"\n" {
		t.Errorf("stdout %q, want %q", out, tok.Decode(want)+"\n")
	}
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out2, errs := runCLI("run", "-m", path, "-f", prompt, "-n", "8", "--ignore-eos"); code != 0 || out2 != out {
		t.Errorf("-f: exit %d, %q (stderr %s), want %q", code, out2, errs, out)
	}
}

func TestModelCommandErrors(t *testing.T) {
	path := tinyModel(t)
	for _, tc := range []struct {
		args []string
		code int
		has  string
	}{
		{[]string{"generate", "--tokens", "1,2"}, 2, "-m MODEL is required"},
		{[]string{"generate", "-m", path, "--tokens", "1,x"}, 2, `"x"`},
		{[]string{"generate", "-m", path, "--tokens", ""}, 2, "no token"},
		{[]string{"generate", "-m", path, "--tokens", "1", "-n", "0"}, 2, "-n 0"},
		{[]string{"generate", "-m", path, "--tokens", "1", "-b", "0"}, 2, "-b 0"},
		{[]string{"generate", "-m", path, "--tokens", "99999999"}, 1, "vocabulary"},
		{[]string{"generate", "-m", path, "--tokens", "1", "-c", "100000"}, 1, "context"},
		{[]string{"logits", "-m", filepath.Join(t.TempDir(), "none.gguf"), "--tokens", "1"}, 1, "none.gguf"},
		{[]string{"run", "-m", path}, 2, "exactly one of -p"},
		{[]string{"run", "-m", path, "-p", "x", "-f", "y"}, 2, "exactly one of -p"},
	} {
		code, _, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.has) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.has)
		}
	}
}

// TestGenerateInterrupted checks that a cancelled context (Ctrl-C) stops a command with the
// context's error, which main turns into exit code 130.
func TestGenerateInterrupted(t *testing.T) {
	path := tinyModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	err := runGenerate(ctx, newCommandLine("generate", []string{"-m", path, "--tokens", "1,2,3", "-n", "4"}, &errb), &out, &errb)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("generate with a cancelled context: %v", err)
	}
}

// TestGenerateRepeat checks that -repeat runs the generation again from the start of the
// session: the ids printed equal one run's, and each run reports its rates.
func TestGenerateRepeat(t *testing.T) {
	path := tinyModel(t)
	args := []string{"generate", "-m", path, "--tokens", "5,6,7", "-n", "6", "-ignore-eos", "-t", "2"}
	code, once, _ := runCLI(args...)
	if code != 0 {
		t.Fatalf("generate: exit %d", code)
	}
	code, thrice, stderr := runCLI(append(args, "-repeat", "3")...)
	if code != 0 {
		t.Fatalf("generate -repeat 3: exit %d: %s", code, stderr)
	}
	if thrice != once || strings.Count(once, ",") != 5 {
		t.Errorf("generate -repeat 3 printed %q, one run %q", thrice, once)
	}
	for _, want := range []string{"run 1 of 3", "run 3 of 3"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := strings.Count(stderr, "\ngeneration: "); got != 3 {
		t.Errorf("stderr reports %d generation rates, want 3:\n%s", got, stderr)
	}
	if code, _, _ := runCLI(append(args, "-repeat", "0")...); code != 2 {
		t.Errorf("-repeat 0: exit %d, want 2 (usage)", code)
	}
}
