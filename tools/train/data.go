package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/tokenizer"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/tokenizer/hfconv"
)

// The corpus: text the repository already carries under permissive licences
// (testdata/corpus/README.md): Go source, the Go specification and Debian's licence texts —
// code, prose and passages that repeat.
var corpusFiles = []string{"go-source.txt", "go-spec.html", "debian-copyright.txt"}

// Chat examples ask the model to repeat, quote or copy a passage of the corpus, so that the
// trained model answers in its chat format and copies from its context (what drafts from the
// context exploit).
const (
	chatExamples = 4000
	chatSeed     = 17
)

var requests = []string{
	"Repeat the following text exactly.\n\n%s",
	"Copy this:\n%s",
	"Here is a passage:\n\n%s\n\nQuote it back to me.",
	"Please rewrite this file without changing anything:\n\n```\n%s\n```",
	"%s\n\nSay that again, word for word.",
	"Quote the passage below.\n\n\"%s\"",
}

var systems = []string{"", "", "You are a helpful assistant.", "You copy text exactly."}

// olmoeVocab is OLMoE's embedding rows: the tokenizer's 50280 entries padded; qwen3Vocab is
// Qwen3's (151669 entries padded).
const (
	olmoeVocab = 50304
	qwen3Vocab = 151936
)

// dataTokenizer is one architecture's tokenizer as the data step uses it.
type dataTokenizer struct {
	tok      *tokenizer.Tokenizer
	template string
	vocab    int
	docEnd   int32 // the token that ends each document of the text
}

// archTokenizer returns the tokenizer, chat template and vocabulary of arch: OLMoE's (the one
// the binaries carry), or Qwen3's (the one tools/deps.sh installs, as modelgen's Qwen3 models
// use it), whose documents end with <|endoftext|> (Qwen's document separator; its eos is the
// chat's <|im_end|>).
func archTokenizer(arch string) (*dataTokenizer, error) {
	switch arch {
	case "olmoe":
		tok, tmpl, err := olmoeTokenizer()
		if err != nil {
			return nil, err
		}
		return &dataTokenizer{tok: tok, template: tmpl, vocab: olmoeVocab, docEnd: tok.EOS()}, nil
	case "qwen3moe":
		t, err := modelgen.FindQwen3Tokenizer("")
		if err != nil {
			return nil, err
		}
		tok, tmpl, err := convertTokenizer(t, qwen3Vocab)
		if err != nil {
			return nil, err
		}
		end := tok.Encode("<|endoftext|>", true)
		if len(end) != 1 {
			return nil, fmt.Errorf("qwen3 tokenizer: <|endoftext|> is %v, not one token", end)
		}
		return &dataTokenizer{tok: tok, template: tmpl, vocab: qwen3Vocab, docEnd: end[0]}, nil
	}
	return nil, fmt.Errorf("data: architecture %q (want olmoe or qwen3moe)", arch)
}

// convertTokenizer converts t as llama.cpp's converter would for a model of vocab rows and
// returns it with its chat template.
func convertTokenizer(t *modelgen.Tokenizer, vocab int) (*tokenizer.Tokenizer, string, error) {
	kvs, err := hfconv.Convert(t.JSON, t.Config, hfconv.Options{Pre: t.Pre, VocabSize: vocab})
	if err != nil {
		return nil, "", err
	}
	tok, err := tokenizer.FromMetadata(kvs)
	if err != nil {
		return nil, "", err
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(t.Config, &cfg); err != nil {
		return nil, "", fmt.Errorf("tokenizer_config.json: %w", err)
	}
	return tok, cfg.ChatTemplate, nil
}

// olmoeTokenizer returns the OLMoE tokenizer the binaries carry and its chat template.
func olmoeTokenizer() (*tokenizer.Tokenizer, string, error) {
	t, err := modelgen.FindOLMoETokenizer("")
	if err != nil {
		return nil, "", err
	}
	return convertTokenizer(t, olmoeVocab)
}

// documents splits a corpus file into its documents: the files it was made of start at lines
// "==> NAME <==".
func documents(text string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(line, "==> ") && cur.Len() > 0 {
			docs = append(docs, cur.String())
			cur.Reset()
		}
		cur.WriteString(line)
	}
	if cur.Len() > 0 {
		docs = append(docs, cur.String())
	}
	return docs
}

// paragraphs returns the blocks of text between blank lines.
func paragraphs(doc string) []string {
	var out []string
	for _, p := range strings.Split(doc, "\n\n") {
		if p = strings.Trim(p, "\n"); strings.TrimSpace(p) != "" && !strings.HasPrefix(p, "==> ") {
			out = append(out, p)
		}
	}
	return out
}

// stats describes what data wrote, for the recipe's record.
type stats struct {
	Files        []string `json:"files"`
	Documents    int      `json:"documents"`
	TextTokens   int      `json:"text_tokens"`
	ChatExamples int      `json:"chat_examples"`
	ChatTokens   int      `json:"chat_tokens"`
	Vocab        int      `json:"vocab"`
	EOS          int32    `json:"eos"`
}

func runData(args []string) error {
	fs := flag.NewFlagSet("data", flag.ContinueOnError)
	out := fs.String("o", "", "output `directory`")
	corpus := fs.String("corpus", "testdata/corpus", "the corpus `directory`")
	arch := fs.String("arch", "olmoe", "the model's `architecture`, whose tokenizer and chat template are used: olmoe or qwen3moe")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("data: -o is required")
	}
	dt, err := archTokenizer(*arch)
	if err != nil {
		return err
	}
	tok := dt.tok
	template, err := chat.Parse(dt.template)
	if err != nil {
		return err
	}
	eos := dt.docEnd
	st := stats{Files: corpusFiles, Vocab: dt.vocab, EOS: eos}

	// The text: every document's tokens followed by the end-of-text token.
	var text []int32
	var paras []string
	for _, name := range corpusFiles {
		b, err := os.ReadFile(filepath.Join(*corpus, name))
		if err != nil {
			return err
		}
		for _, d := range documents(string(b)) {
			text = append(text, tok.Encode(d, false)...)
			text = append(text, eos)
			st.Documents++
			paras = append(paras, paragraphs(d)...)
		}
	}
	st.TextTokens = len(text)

	// The chat examples, each as its length then its tokens.
	special := chat.SpecialTokens{EOS: tok.Token(tok.EOS())}
	if b := tok.BOS(); b >= 0 {
		special.BOS = tok.Token(b)
	}
	r := rand.New(rand.NewPCG(chatSeed, chatSeed))
	var examples []int32
	for st.ChatExamples < chatExamples {
		// One to four consecutive paragraphs of at most about 1500 bytes.
		i := r.IntN(len(paras))
		p := paras[i]
		for n := r.IntN(4); n > 0 && i+1 < len(paras) && len(p)+len(paras[i+1]) < 1500; n-- {
			i++
			p += "\n\n" + paras[i]
		}
		if len(p) > 1500 || len(p) < 20 {
			continue
		}
		var msgs []chat.Message
		if s := systems[r.IntN(len(systems))]; s != "" {
			msgs = append(msgs, chat.Message{Role: "system", Content: s})
		}
		msgs = append(msgs,
			chat.Message{Role: "user", Content: fmt.Sprintf(requests[r.IntN(len(requests))], p)},
			chat.Message{Role: "assistant", Content: p})
		s, err := template.Render(msgs, chat.Options{SpecialTokens: special})
		if err != nil {
			return fmt.Errorf("chat example %d: %w", st.ChatExamples, err)
		}
		ids := tok.Encode(s, true)
		examples = append(examples, int32(len(ids)))
		examples = append(examples, ids...)
		st.ChatExamples++
		st.ChatTokens += len(ids)
	}

	unicode, err := os.ReadFile(filepath.Join(*corpus, "unicode-data.txt"))
	if err != nil {
		return err
	}
	prompts, err := testPrompts(tok, template, special, string(unicode))
	if err != nil {
		return err
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeInt32s(filepath.Join(*out, "text.bin"), text); err != nil {
		return err
	}
	if err := writeInt32s(filepath.Join(*out, "chat.bin"), examples); err != nil {
		return err
	}
	// One prompt a line: a diff of the file shows which prompt changed.
	pj := []byte("[\n")
	for i, p := range prompts {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		pj = append(pj, b...)
		if i+1 < len(prompts) {
			pj = append(pj, ',')
		}
		pj = append(pj, '\n')
	}
	pj = append(pj, "]\n"...)
	if err := os.WriteFile(filepath.Join(*out, "prompts.json"), pj, 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	fmt.Printf("data: %d documents, %d text tokens, %d chat examples (%d tokens)\n",
		st.Documents, st.TextTokens, st.ChatExamples, st.ChatTokens)
	return os.WriteFile(filepath.Join(*out, "data.json"), append(js, '\n'), 0o644)
}

// writeInt32s writes xs little-endian.
func writeInt32s(path string, xs []int32) error {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return os.WriteFile(path, b, 0o644)
}

// prompt is one of the texts tests run the trained model on, with its tokens.
type prompt struct {
	Name string  `json:"name"`
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

// testPrompts are the texts tests and benchmarks run the trained model on: code, prose and a
// chat turn asking for a passage to be repeated, written here; and a request to rewrite a file
// the model never saw in training (the start of Unicode's Blocks.txt, from the corpus's
// unicode-data.txt), the task drafts from the context are for.
func testPrompts(tok *tokenizer.Tokenizer, template *chat.Template, special chat.SpecialTokens, unicode string) ([]prompt, error) {
	user := func(content string) (string, error) {
		return template.Render([]chat.Message{{Role: "user", Content: content}},
			chat.Options{AddGenerationPrompt: true, SpecialTokens: special})
	}
	ask, err := user("Repeat the following text exactly.\n\n" +
		"Permission is hereby granted, free of charge, to any person obtaining a copy of this software " +
		"and associated documentation files, to deal in the Software without restriction.")
	if err != nil {
		return nil, err
	}
	_, blocks, ok := strings.Cut(unicode, "==> Blocks.txt <==\n")
	if !ok {
		return nil, fmt.Errorf("unicode-data.txt: no Blocks.txt")
	}
	lines := strings.SplitAfter(blocks, "\n")
	file := strings.Join(lines[:min(len(lines), 40)], "")
	rewrite, err := user("Please rewrite this file without changing anything:\n\n```\n" + file + "```")
	if err != nil {
		return nil, err
	}
	ps := []prompt{
		{Name: "code", Text: "// Len returns the number of elements in the list.\nfunc (l *List) Len() int {\n"},
		{Name: "prose", Text: "The specification says that a constant expression"},
		{Name: "chat-repeat", Text: ask},
		{Name: "chat-rewrite-file", Text: rewrite},
	}
	for i := range ps {
		ps[i].IDs = tok.Encode(ps[i].Text, true)
	}
	return ps, nil
}
