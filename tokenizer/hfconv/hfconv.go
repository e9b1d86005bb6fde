// Package hfconv converts a Hugging Face byte-level BPE tokenizer (tokenizer.json plus
// tokenizer_config.json) into the GGUF tokenizer metadata that llama.cpp's convert_hf_to_gguf.py
// writes for it (its _set_vocab_gpt2 path and gguf-py's SpecialVocab).
//
// The result is a list of key/value pairs ready for a GGUF writer:
//
//	tokenizer.ggml.model       "gpt2"
//	tokenizer.ggml.pre         Options.Pre
//	tokenizer.ggml.tokens      token strings in id order
//	tokenizer.ggml.token_type  int32: 1 normal, 3 control, 4 user-defined, 5 unused
//	tokenizer.ggml.merges      "left right" strings, in rank order
//	tokenizer.ggml.*_token_id  bos, eos, unk, sep, pad, cls, mask (and eot, eom) when known
//	tokenizer.ggml.add_*_token bos, eos, sep when the files state them
//	tokenizer.chat_template    when the config has one
//
// Rules taken from llama.cpp, so that a file converted here reads as one converted there:
//
//   - An id with no token becomes "[PAD<id>]" of type unused; the list runs to Options.VocabSize
//     (the model's embedding rows) or, when that is 0, to the largest id plus one.
//   - An added token is a control token when tokenizer.json marks it special or when it looks
//     special (<|…|>, <｜…｜>, <unused…>, <pad>, <mask>, <2mass>, [@BOS@]); otherwise it is
//     user-defined, with "▁" (U+2581) replaced by a space. convert_hf_to_gguf.py also passes a
//     non-normalized added token through transformers' decode(encode(token)); for byte-level BPE
//     that gives the token back unchanged, so it is not repeated here.
//   - Merges stored as pairs (the format since transformers 4.45) are joined with a space after
//     each space inside a part is written as "Ġ" (U+0120), as gguf-py does.
//   - Special token ids come from the config's bos_token, eos_token, … strings (or {"content": …}
//     objects), looked up among tokenizer.json's added tokens by content, first match; a config
//     without bos/eos borrows cls/sep. RobertaProcessing and the first and last special token of
//     a TemplateProcessing "single" template set add_bos/add_eos as gguf-py's crude parser does;
//     add_<type>_token booleans in the config override them.
//
// Where two token strings share an id (an added token whose content differs from the model
// vocabulary's entry for that id) the added token's content wins; llama.cpp's result there
// depends on Python dictionary order.
package hfconv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// Options says what tokenizer.json and tokenizer_config.json do not.
type Options struct {
	// Pre is the pre-tokenizer family written as tokenizer.ggml.pre (e.g. "olmo", "llama-bpe",
	// "qwen2"). llama.cpp finds it by hashing the ids of a test string; here the caller names it.
	Pre string
	// VocabSize pads the token list to this many entries with "[PAD<i>]" tokens of type UNUSED,
	// as llama.cpp's converter does up to config.json's vocab_size; 0 means no padding.
	VocabSize int
}

// Token types, as llama.cpp numbers them (gguf-py's TokenType).
const (
	typeNormal      = 1
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
)

// maxVocab bounds ids and Options.VocabSize so a corrupt file cannot ask for a huge list.
const maxVocab = 1 << 24

// The metadata keys written.
const (
	keyModel        = "tokenizer.ggml.model"
	keyPre          = "tokenizer.ggml.pre"
	keyTokens       = "tokenizer.ggml.tokens"
	keyTokenType    = "tokenizer.ggml.token_type"
	keyMerges       = "tokenizer.ggml.merges"
	keyChatTemplate = "tokenizer.chat_template"
)

// specialTypes lists the special token kinds gguf-py's SpecialVocab looks for, in its order,
// with the GGUF key each id is written under ("seperator" is llama.cpp's spelling).
var specialTypes = []struct{ typ, key string }{
	{"bos", "tokenizer.ggml.bos_token_id"},
	{"eos", "tokenizer.ggml.eos_token_id"},
	{"unk", "tokenizer.ggml.unknown_token_id"},
	{"sep", "tokenizer.ggml.seperator_token_id"},
	{"pad", "tokenizer.ggml.padding_token_id"},
	{"cls", "tokenizer.ggml.cls_token_id"},
	{"mask", "tokenizer.ggml.mask_token_id"},
	{"eot", "tokenizer.ggml.eot_token_id"},
	{"eom", "tokenizer.ggml.eom_token_id"},
}

// addFlagKeys are the add_<type>_token flags a GGUF writer has a key for; gguf-py skips others.
var addFlagKeys = map[string]string{
	"bos": "tokenizer.ggml.add_bos_token",
	"eos": "tokenizer.ggml.add_eos_token",
	"sep": "tokenizer.ggml.add_sep_token",
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
}

type tokenizerFile struct {
	AddedTokens   []addedToken    `json:"added_tokens"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type         string            `json:"type"`
		Vocab        map[string]int    `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		ByteFallback bool              `json:"byte_fallback"`
	} `json:"model"`
}

// Convert returns the GGUF tokenizer metadata for a byte-level BPE tokenizer. configJSON is the
// tokenizer_config.json beside tokenizer.json; it may be empty.
func Convert(tokenizerJSON, configJSON []byte, opts Options) ([]gguf.KV, error) {
	if opts.Pre == "" {
		return nil, fmt.Errorf("hfconv: Options.Pre is empty: name the pre-tokenizer family (e.g. \"olmo\")")
	}
	if opts.VocabSize < 0 || opts.VocabSize > maxVocab {
		return nil, fmt.Errorf("hfconv: Options.VocabSize %d out of range [0, %d]", opts.VocabSize, maxVocab)
	}
	var tf tokenizerFile
	if err := json.Unmarshal(tokenizerJSON, &tf); err != nil {
		return nil, fmt.Errorf("hfconv: tokenizer.json: %w", err)
	}
	if err := checkByteLevelBPE(&tf); err != nil {
		return nil, err
	}
	var cfg map[string]json.RawMessage
	if len(bytes.TrimSpace(configJSON)) > 0 {
		if err := json.Unmarshal(configJSON, &cfg); err != nil {
			return nil, fmt.Errorf("hfconv: tokenizer_config.json: %w", err)
		}
	}

	tokens, types, err := tokenList(&tf, opts.VocabSize)
	if err != nil {
		return nil, err
	}
	merges, err := mergeList(tf.Model.Merges)
	if err != nil {
		return nil, err
	}
	kvs := []gguf.KV{
		{Key: keyModel, Value: gguf.String("gpt2")},
		{Key: keyPre, Value: gguf.String(opts.Pre)},
		{Key: keyTokens, Value: gguf.Strings(tokens)},
		{Key: keyTokenType, Value: gguf.Int32s(types)},
	}
	if len(merges) > 0 {
		kvs = append(kvs, gguf.KV{Key: keyMerges, Value: gguf.Strings(merges)})
	}
	sv, err := specialVocab(&tf, cfg)
	if err != nil {
		return nil, err
	}
	for _, st := range specialTypes {
		if id, ok := sv.ids[st.typ]; ok {
			kvs = append(kvs, gguf.KV{Key: st.key, Value: gguf.Uint32(uint32(id))})
		}
	}
	for _, typ := range []string{"bos", "eos", "sep"} {
		if v, ok := sv.add[typ]; ok {
			kvs = append(kvs, gguf.KV{Key: addFlagKeys[typ], Value: gguf.Bool(v)})
		}
	}
	tmpl, err := chatTemplates(cfg)
	if err != nil {
		return nil, err
	}
	return append(kvs, tmpl...), nil
}

// checkByteLevelBPE refuses what convert_hf_to_gguf.py would not convert as a GPT-2 style vocab.
func checkByteLevelBPE(tf *tokenizerFile) error {
	if tf.Model.Type != "BPE" {
		return fmt.Errorf("hfconv: tokenizer.json: model type %q is not BPE", tf.Model.Type)
	}
	if tf.Model.ByteFallback {
		return fmt.Errorf("hfconv: tokenizer.json: BPE with byte_fallback (SentencePiece style) is not byte-level BPE")
	}
	if len(tf.Model.Vocab) == 0 {
		return fmt.Errorf("hfconv: tokenizer.json: model vocab is empty")
	}
	if !hasByteLevel(tf.Decoder) {
		return fmt.Errorf("hfconv: tokenizer.json: decoder is not ByteLevel, so this is not a byte-level BPE tokenizer")
	}
	return nil
}

// hasByteLevel reports whether a decoder is ByteLevel or a Sequence holding one.
func hasByteLevel(raw json.RawMessage) bool {
	var d struct {
		Type     string            `json:"type"`
		Decoders []json.RawMessage `json:"decoders"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return false
	}
	if d.Type == "ByteLevel" {
		return true
	}
	for _, sub := range d.Decoders {
		if hasByteLevel(sub) {
			return true
		}
	}
	return false
}

// tokenList builds the token strings and types in id order, as get_vocab_base does.
func tokenList(tf *tokenizerFile, vocabSize int) ([]string, []int32, error) {
	// transformers' tokenizer.vocab: the model vocabulary, then the added tokens over it.
	byText := make(map[string]int, len(tf.Model.Vocab)+len(tf.AddedTokens))
	for s, id := range tf.Model.Vocab {
		if id < 0 || id >= maxVocab {
			return nil, nil, fmt.Errorf("hfconv: tokenizer.json: token %q: id %d out of range [0, %d)", s, id, maxVocab)
		}
		byText[s] = id
	}
	addedByID := make(map[int]addedToken, len(tf.AddedTokens))
	addedText := make(map[string]bool, len(tf.AddedTokens))
	for _, a := range tf.AddedTokens {
		if a.ID < 0 || a.ID >= maxVocab {
			return nil, nil, fmt.Errorf("hfconv: tokenizer.json: added token %q: id %d out of range [0, %d)", a.Content, a.ID, maxVocab)
		}
		if a.Content == "" {
			return nil, nil, fmt.Errorf("hfconv: tokenizer.json: added token %d has empty content", a.ID)
		}
		byText[a.Content] = a.ID
		addedByID[a.ID] = a
		addedText[a.Content] = true
	}
	maxID := 0
	for _, id := range byText {
		maxID = max(maxID, id)
	}
	n := maxID + 1
	if vocabSize != 0 {
		if vocabSize < n {
			return nil, nil, fmt.Errorf("hfconv: Options.VocabSize %d is below the tokenizer's largest id %d plus one", vocabSize, maxID)
		}
		n = vocabSize
	}
	text := make([]string, n)
	has := make([]bool, n)
	for s, id := range byText {
		if !has[id] || preferred(s, text[id], addedByID, id) {
			text[id], has[id] = s, true
		}
	}
	types := make([]int32, n)
	for id := range text {
		switch {
		case !has[id]:
			text[id], types[id] = "[PAD"+strconv.Itoa(id)+"]", typeUnused
		case addedText[text[id]]:
			a, ok := addedByID[id]
			if ok && a.Special || looksSpecial(text[id]) {
				types[id] = typeControl
			} else {
				text[id], types[id] = strings.ReplaceAll(text[id], "\u2581", " "), typeUserDefined
			}
		default:
			types[id] = typeNormal
		}
	}
	return text, types, nil
}

// preferred reports whether s should name id rather than cur: an added token's content wins
// (see the package comment), otherwise the smaller string, so the result never depends on map
// order.
func preferred(s, cur string, addedByID map[int]addedToken, id int) bool {
	if a, ok := addedByID[id]; ok {
		if s == a.Content {
			return true
		}
		if cur == a.Content {
			return false
		}
	}
	return s < cur
}

// looksSpecial is convert_hf_to_gguf.py's does_token_look_special: added tokens that some
// models forget to mark special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}

// mergeList returns the merges as "left right" strings, accepting both stored forms.
func mergeList(raw []json.RawMessage) ([]string, error) {
	merges := make([]string, len(raw))
	for i, m := range raw {
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			merges[i] = s
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("hfconv: tokenizer.json: merge %d is neither a string nor a pair of strings: %.60s", i, m)
		}
		merges[i] = strings.ReplaceAll(pair[0], " ", "\u0120") + " " + strings.ReplaceAll(pair[1], " ", "\u0120")
	}
	return merges, nil
}

// special holds what gguf-py's SpecialVocab found: token ids by type and add_<type>_token flags.
type special struct {
	ids map[string]int
	add map[string]bool
}

// specialVocab follows SpecialVocab._try_load_from_tokenizer_json.
func specialVocab(tf *tokenizerFile, cfg map[string]json.RawMessage) (special, error) {
	sv := special{ids: map[string]int{}, add: map[string]bool{}}
	content := func(typ string) string { return tokenContent(cfg[typ+"_token"]) }
	bos, eos, cls, sep := content("bos"), content("eos"), content("cls"), content("sep")
	if bos == "" && cls != "" && cfg != nil {
		bos = cls
		cfg["bos_token"] = cfg["cls_token"]
	}
	if eos == "" && sep != "" && cfg != nil {
		eos = sep
		cfg["eos_token"] = cfg["sep_token"]
	}
	types := []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}
	extra := map[string]string{} // eot/eom contents moved aside by a template's trailing token
	procs, err := postProcessors(tf.PostProcessor)
	if err != nil {
		return sv, err
	}
	for _, p := range procs {
		switch p.Type {
		case "RobertaProcessing":
			sv.add["bos"], sv.add["eos"], sv.add["sep"] = true, true, true
		case "TemplateProcessing":
			if len(p.Single) <= 1 {
				continue
			}
			if first := p.Single[0].SpecialToken.ID; first != "" {
				if cfg == nil {
					bos = first
				}
				sv.add["bos"] = first == bos || first == cls
			}
			if last := p.Single[len(p.Single)-1].SpecialToken.ID; last != "" {
				if cfg == nil {
					eos = last
				} else if last != eos {
					// gguf-py keeps the config's eos as eot (or eom) and makes the template's
					// trailing token the eos.
					switch {
					case !contains(types, "eot"):
						types = append(types, "eot")
						extra["eot"] = eos
					case !contains(types, "eom"):
						types = append(types, "eom")
						extra["eom"] = eos
					}
					eos = last
					cfg["eos_token"], _ = json.Marshal(last)
				}
				sv.add["eos"] = last == eos
			}
		}
	}
	if cfg == nil {
		return sv, nil
	}
	for _, typ := range types {
		if raw, ok := cfg["add_"+typ+"_token"]; ok {
			var b bool
			if json.Unmarshal(raw, &b) == nil {
				sv.add[typ] = b
			}
		}
		c := tokenContent(cfg[typ+"_token"])
		if e, ok := extra[typ]; ok {
			c = e
		}
		if c == "" {
			continue
		}
		for _, a := range tf.AddedTokens {
			if a.Content == c {
				if _, set := sv.ids[typ]; !set {
					sv.ids[typ] = a.ID
				}
				break
			}
		}
	}
	return sv, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type templatePiece struct {
	SpecialToken struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
}

type postProcessor struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []templatePiece   `json:"single"`
}

// postProcessors returns a post-processor, or the members of a Sequence of them.
func postProcessors(raw json.RawMessage) ([]postProcessor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var p postProcessor
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("hfconv: tokenizer.json: post_processor: %w", err)
	}
	if p.Processors == nil {
		return []postProcessor{p}, nil
	}
	out := make([]postProcessor, 0, len(p.Processors))
	for i, sub := range p.Processors {
		var q postProcessor
		if err := json.Unmarshal(sub, &q); err != nil {
			return nil, fmt.Errorf("hfconv: tokenizer.json: post_processor %d: %w", i, err)
		}
		out = append(out, q)
	}
	return out, nil
}

// tokenContent reads a special token entry of tokenizer_config.json: a string, or an
// AddedToken object with "content"; anything else is "".
func tokenContent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content
	}
	return ""
}

// chatTemplates writes the config's chat_template: a string as tokenizer.chat_template, or a
// list of {name, template} as gguf-py's add_chat_template writes it (the "default" one as
// tokenizer.chat_template, each other as tokenizer.chat_template.<name>, their names in
// tokenizer.chat_templates).
func chatTemplates(cfg map[string]json.RawMessage) ([]gguf.KV, error) {
	raw, ok := cfg["chat_template"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []gguf.KV{{Key: keyChatTemplate, Value: gguf.String(s)}}, nil
	}
	var list []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		// gguf-py warns and ignores a chat_template of another type.
		return nil, nil
	}
	var kvs []gguf.KV
	var names []string
	var def *string
	for _, c := range list {
		name := safeName(c.Name)
		if name == "" || c.Template == nil {
			continue
		}
		if name == "default" {
			def = c.Template
			continue
		}
		names = append(names, name)
		kvs = append(kvs, gguf.KV{Key: keyChatTemplate + "." + name, Value: gguf.String(*c.Template)})
	}
	if len(names) > 0 {
		sort.Strings(names) // gguf-py writes a set; a fixed order keeps files reproducible
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_templates", Value: gguf.Strings(names)})
	}
	if def != nil {
		kvs = append(kvs, gguf.KV{Key: keyChatTemplate, Value: gguf.String(*def)})
	}
	return kvs, nil
}

// safeName keeps ASCII letters and digits and turns everything else into '_', as gguf-py does
// for template names.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
