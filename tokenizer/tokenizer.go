package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trochilus-llm/trochilus/gguf"
)

// TokenType is a token's kind as GGUF stores it in tokenizer.ggml.token_type (llama.cpp's
// numbering).
type TokenType int32

// The token types. Byte-level BPE files use Normal, Control, UserDefined and Unused.
const (
	Normal      TokenType = 1
	Unknown     TokenType = 2
	Control     TokenType = 3 // special tokens: <|endoftext|>, <|im_start|>, …
	UserDefined TokenType = 4 // added tokens that are ordinary text (OLMoE's runs of spaces)
	Unused      TokenType = 5 // padding entries, never produced or printed
	Byte        TokenType = 6 // SentencePiece byte tokens; not used by byte-level BPE
)

// Config holds a tokenizer's definition: the fields of the GGUF tokenizer metadata.
type Config struct {
	Tokens []string    // token text in id order, in the byte-level alphabet for Normal tokens
	Types  []TokenType // one per token; nil means all Normal
	Merges []string    // "left right" pairs in rank order
	Pre    string      // pre-tokenizer family (tokenizer.ggml.pre), e.g. "olmo"
	// Special token ids; -1 when absent.
	BOS, EOS, PAD, UNK int32
	AddBOS, AddEOS     bool
}

// Tokenizer encodes text into token ids and decodes ids back, as Hugging Face tokenizers does
// for the byte-level BPE tokenizer it was built from. It is safe for concurrent use.
type Tokenizer struct {
	fam    family
	alpha  *byteAlphabet
	tokens []string
	types  []TokenType
	// byteToken[b] is the id of the token for byte b alone, or -1.
	byteToken [256]int32
	merges    mergeTable
	// words maps token text to id: every Normal token, then added tokens whose text is new.
	words map[string]int32
	// decoded holds every token's bytes: token i is decoded[decOff[i]:decOff[i+1]].
	decoded []byte
	decOff  []int32
	control *trie // Control tokens, matched on raw text when parsing specials
	user    *trie // UserDefined tokens, matched on normalized text
	bos     int32
	eos     int32
	pad     int32
	unk     int32
	addBOS  bool
	addEOS  bool
	// free holds idle workspaces. Unlike a sync.Pool it keeps them (and their word caches)
	// across garbage collections.
	free chan *workspace
}

// maxTokens bounds the vocabulary so that bad metadata cannot ask for huge tables.
const maxTokens = 1 << 24

// New builds a tokenizer from its definition.
func New(c Config) (*Tokenizer, error) {
	fam, ok := familyFor(c.Pre)
	if !ok {
		return nil, fmt.Errorf("tokenizer: pre-tokenizer family %q is not supported (supported: %s)", c.Pre, strings.Join(familyNames(), ", "))
	}
	n := len(c.Tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: no tokens")
	}
	if n > maxTokens {
		return nil, fmt.Errorf("tokenizer: %d tokens, more than the %d allowed", n, maxTokens)
	}
	if c.Types != nil && len(c.Types) != n {
		return nil, fmt.Errorf("tokenizer: %d token types for %d tokens", len(c.Types), n)
	}
	t := &Tokenizer{
		fam:    fam,
		tokens: slices.Clone(c.Tokens),
		types:  make([]TokenType, n),
		words:  make(map[string]int32, n),
		addBOS: c.AddBOS,
		addEOS: c.AddEOS,
	}
	for i := range t.types {
		t.types[i] = Normal
		if c.Types != nil {
			t.types[i] = c.Types[i]
		}
	}
	for _, sp := range []struct {
		name string
		id   int32
		dst  *int32
	}{{"bos", c.BOS, &t.bos}, {"eos", c.EOS, &t.eos}, {"padding", c.PAD, &t.pad}, {"unknown", c.UNK, &t.unk}} {
		if sp.id < -1 || sp.id >= int32(n) {
			return nil, fmt.Errorf("tokenizer: %s token id %d outside the vocabulary of %d", sp.name, sp.id, n)
		}
		*sp.dst = sp.id
	}
	alpha := newByteAlphabet()
	t.alpha = alpha
	for i := range t.byteToken {
		t.byteToken[i] = -1
	}
	t.decOff = make([]int32, n+1)
	var ctrl, user []trieEntry
	for i, text := range c.Tokens {
		id := int32(i)
		switch t.types[i] {
		case Normal:
			if _, dup := t.words[text]; !dup {
				t.words[text] = id
			}
			if b, ok := alpha.single(text); ok && t.byteToken[b] < 0 {
				t.byteToken[b] = id
			}
		case Control:
			if text != "" {
				ctrl = append(ctrl, trieEntry{text, id})
			}
		case UserDefined:
			if text != "" {
				user = append(user, trieEntry{fam.normalize(text), id})
			}
		}
		if t.types[i] != Unused {
			var ok bool
			if t.decoded, ok = alpha.decode(t.decoded, text); !ok {
				t.decoded = append(t.decoded, text...)
			}
		}
		if len(t.decoded) > 1<<31-1 {
			return nil, errors.New("tokenizer: token texts too long")
		}
		t.decOff[i+1] = int32(len(t.decoded))
	}
	// Merges may name added tokens' text too (HF's model vocabulary holds it); Normal tokens
	// come first.
	for i, text := range c.Tokens {
		if ty := t.types[i]; ty != Normal && ty != Unused {
			if _, dup := t.words[text]; !dup {
				t.words[text] = int32(i)
			}
		}
	}
	t.control = newTrie(ctrl)
	t.user = newTrie(user)
	var err error
	if t.merges, err = newMergeTable(c.Merges, t.words); err != nil {
		return nil, err
	}
	t.free = make(chan *workspace, maxIdleWorkspaces)
	return t, nil
}

// Metadata keys read from a GGUF file.
const (
	keyModel     = "tokenizer.ggml.model"
	keyPre       = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyTokenType = "tokenizer.ggml.token_type"
	keyMerges    = "tokenizer.ggml.merges"
)

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.* metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	return fromLookup(f.Get)
}

// FromMetadata builds a tokenizer from GGUF key/value pairs, such as hfconv.Convert returns.
func FromMetadata(kvs []gguf.KV) (*Tokenizer, error) {
	return fromLookup(func(key string) (gguf.Value, bool) {
		for _, kv := range kvs {
			if kv.Key == key {
				return kv.Value, true
			}
		}
		return gguf.Value{}, false
	})
}

func fromLookup(get func(string) (gguf.Value, bool)) (*Tokenizer, error) {
	str := func(key string) (string, error) {
		v, ok := get(key)
		if !ok {
			return "", fmt.Errorf("tokenizer: metadata %s missing", key)
		}
		s, ok := v.Str()
		if !ok {
			return "", fmt.Errorf("tokenizer: metadata %s is %v, not a string", key, v.Type())
		}
		return s, nil
	}
	model, err := str(keyModel)
	if err != nil {
		return nil, err
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: tokenizer model %q is not supported: only byte-level BPE (\"gpt2\")", model)
	}
	var c Config
	if c.Pre, err = str(keyPre); err != nil {
		return nil, err
	}
	v, ok := get(keyTokens)
	if !ok {
		return nil, fmt.Errorf("tokenizer: metadata %s missing", keyTokens)
	}
	if c.Tokens, ok = v.Strings(); !ok {
		return nil, fmt.Errorf("tokenizer: metadata %s is %v, not an array of strings", keyTokens, v.Type())
	}
	if v, ok := get(keyTokenType); ok {
		types, ok := v.Int32s()
		if !ok {
			return nil, fmt.Errorf("tokenizer: metadata %s is not an array of integers", keyTokenType)
		}
		c.Types = make([]TokenType, len(types))
		for i, ty := range types {
			c.Types[i] = TokenType(ty)
		}
	}
	if v, ok := get(keyMerges); ok {
		if c.Merges, ok = v.Strings(); !ok {
			return nil, fmt.Errorf("tokenizer: metadata %s is %v, not an array of strings", keyMerges, v.Type())
		}
	}
	for _, sp := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &c.BOS},
		{"tokenizer.ggml.eos_token_id", &c.EOS},
		{"tokenizer.ggml.padding_token_id", &c.PAD},
		{"tokenizer.ggml.unknown_token_id", &c.UNK},
	} {
		*sp.dst = -1
		v, ok := get(sp.key)
		if !ok {
			continue
		}
		id, ok := v.Uint64()
		if !ok || id >= uint64(len(c.Tokens)) {
			return nil, fmt.Errorf("tokenizer: metadata %s = %v is not a token id below %d", sp.key, v, len(c.Tokens))
		}
		*sp.dst = int32(id)
	}
	for _, fl := range []struct {
		key string
		dst *bool
	}{{"tokenizer.ggml.add_bos_token", &c.AddBOS}, {"tokenizer.ggml.add_eos_token", &c.AddEOS}} {
		if v, ok := get(fl.key); ok {
			if *fl.dst, ok = v.Bool(); !ok {
				return nil, fmt.Errorf("tokenizer: metadata %s is %v, not a bool", fl.key, v.Type())
			}
		}
	}
	return New(c)
}

// Len returns the number of token ids.
func (t *Tokenizer) Len() int { return len(t.tokens) }

// Token returns token id's stored text ("" outside the vocabulary).
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns token id's type (0 outside the vocabulary).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return 0
	}
	return t.types[id]
}

// Pre returns the pre-tokenizer family.
func (t *Tokenizer) Pre() string { return t.fam.name }

// BOS returns the beginning-of-sequence id, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// PAD returns the padding id, or -1.
func (t *Tokenizer) PAD() int32 { return t.pad }

// UNK returns the unknown-token id, or -1. Byte-level BPE never produces it.
func (t *Tokenizer) UNK() int32 { return t.unk }

// AddBOS reports whether the model expects BOS before a prompt (tokenizer.ggml.add_bos_token).
// Encode never adds it; chat templates usually write it as text.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports tokenizer.ggml.add_eos_token.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }
