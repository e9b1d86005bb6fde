package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestSearchRepositories searches a fake Hub: the query asks for GGUF repositories by
// downloads, the table lists them in the Hub's order, a result that is no repository name is
// left out, and a broken answer is an error naming the query.
func TestSearchRepositories(t *testing.T) {
	h := newFakeHub(t, "owner/Model-GGUF")
	h.searchAnswer = `[{"id":"owner/Model-GGUF","downloads":1200,"likes":7,"lastModified":"2026-11-02T10:00:00.000Z"},
		{"id":"../etc","downloads":5},{"id":"other/Model-2-GGUF","downloads":3,"likes":0}]`
	var out, errOut bytes.Buffer
	if err := search(context.Background(), newCommandLine("search", []string{"-n", "5", "model"}, &errOut), &out, &errOut, h.ts.Client()); err != nil {
		t.Fatal(err)
	}
	q := h.searchQuery
	if q.Get("search") != "model" || q.Get("filter") != "gguf" || q.Get("sort") != "downloads" || q.Get("limit") != "5" {
		t.Errorf("query %v", q)
	}
	got := out.String()
	for _, want := range []string{"owner/Model-GGUF  1200       7      2026-11-02", "other/Model-2-GGUF  3 "} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "../etc") {
		t.Errorf("a result that is no repository was listed:\n%s", got)
	}

	h.searchAnswer = `{"error":"bad"}`
	if err := search(context.Background(), newCommandLine("search", []string{"model"}, &errOut), &out, &errOut, h.ts.Client()); err == nil || !strings.Contains(err.Error(), `"model"`) {
		t.Errorf("a broken answer: %v", err)
	}
	if err := search(context.Background(), newCommandLine("search", []string{"-n", "0", "model"}, &errOut), &out, &errOut, h.ts.Client()); !errors.Is(err, errUsage) {
		t.Errorf("-n 0: %v", err)
	}
}

// TestSearchRepository lists a repository's models: a split model's parts as one with their
// total size, the projector left out, quant tags read from the names, and with -fit the verdict
// read from a header.
func TestSearchRepository(t *testing.T) {
	h := newFakeHub(t, "owner/Model-GGUF")
	model := pullTestModelBytes(t)
	h.add("Model-Q4_K_M.gguf", model)
	h.add("mmproj-Model-F16.gguf", []byte("projector"))
	h.add("big/Model-UD-Q2_K_XL-00001-of-00002.gguf", make([]byte, 300))
	h.add("big/Model-UD-Q2_K_XL-00002-of-00002.gguf", make([]byte, 200))
	h.add("README.md", []byte("hi"))
	var out, errOut bytes.Buffer
	if err := search(context.Background(), newCommandLine("search", []string{"-fit", "owner/Model-GGUF"}, &errOut), &out, &errOut, h.ts.Client()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"Q4_K_M", "Model-Q4_K_M.gguf", "UD-Q2_K_XL", "500 B  big/Model-UD-Q2_K_XL.gguf  (2 parts)", "model: olmoe"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "mmproj") || strings.Contains(got, "README") {
		t.Errorf("a file that is no model was listed:\n%s", got)
	}
	if h.probeCount() == 0 {
		t.Error("-fit read no header")
	}
}

func TestQuantTag(t *testing.T) {
	for name, want := range map[string]string{
		"Qwen3-30B-A3B-Q4_K_M.gguf":              "Q4_K_M",
		"Qwen3-30B-A3B-UD-Q2_K_XL.gguf":          "UD-Q2_K_XL",
		"olmoe-1b-7b-0125-instruct-q8_0.gguf":    "Q8_0",
		"model-IQ2_XXS-00001-of-00003.gguf":      "IQ2_XXS",
		"gpt-oss-20b-MXFP4.gguf":                 "MXFP4",
		"Model.BF16.gguf":                        "BF16",
		"README.gguf":                            "",
		"Q4-not-a-tag.gguf":                      "",
		"Meta-Llama-3.1-8B-Instruct-Q5_K_S.gguf": "Q5_K_S",
	} {
		if got := quantTag(name); got != want {
			t.Errorf("quantTag(%q) = %q, want %q", name, got, want)
		}
	}
}
