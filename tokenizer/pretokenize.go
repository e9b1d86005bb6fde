package tokenizer

import "sort"

// A family is a pre-tokenizer as HF tokenizers runs it for one tokenizer.ggml.pre value:
// optional NFC normalization, then a sequence of split stages, each cutting every piece of the
// previous stage further (HF's Split pre-tokenizers with behaviour Isolated, and the regex of
// ByteLevel(use_regex=true)). GGUF stores neither the normalizer nor the patterns, so the
// family name chooses them, as llama.cpp does; each family here follows the tokenizer.json
// of the models llama.cpp gives that name to.
type family struct {
	name         string
	nfc          bool
	ignoreMerges bool // BPE ignore_merges: a word that is itself a token is not merged (Llama 3)
	stages       []matcher
	norm         *normalizer
}

// A matcher returns the end of the match of its pattern that starts at chars[i], or -1.
// Lookahead sees only the piece being split, as in HF.
type matcher func(c []char, i int) int

// familyFor returns the pre-tokenizer of a tokenizer.ggml.pre value.
func familyFor(name string) (family, bool) {
	f := family{name: name}
	switch name {
	case "gpt-2":
		f.stages = []matcher{matchGPT2}
	case "olmo", "gpt-neox", "mpt":
		// GPT-NeoX's tokenizer: NFC, then the GPT-2 pattern.
		f.nfc = true
		f.stages = []matcher{matchGPT2}
	case "starcoder", "refact":
		// Digits(individual_digits=true), then the GPT-2 pattern.
		f.stages = []matcher{matchDigit, matchGPT2}
	case "llama-bpe":
		f.ignoreMerges = true
		f.stages = []matcher{matchLlama3}
	case "qwen2", "deepseek-r1-qwen":
		f.nfc = true
		f.stages = []matcher{matchQwen2}
	case "gpt-4o":
		f.stages = []matcher{matchGPT4o}
	case "deepseek-llm":
		f.stages = []matcher{matchNewline, matchDeepSeekLetters, matchDeepSeekPunct, matchTrailingSpace, matchCJK, matchNumbers}
	case "deepseek-coder":
		f.stages = []matcher{matchNewline, matchSpaceLetters, matchSpacePunct, matchCJK, matchDigit}
	default:
		return family{}, false
	}
	if f.nfc {
		f.norm = newNormalizer()
	}
	return f, true
}

// familyNames lists the supported tokenizer.ggml.pre values, for error messages.
func familyNames() []string {
	names := []string{"gpt-2", "olmo", "gpt-neox", "mpt", "starcoder", "refact", "llama-bpe", "qwen2",
		"deepseek-r1-qwen", "gpt-4o", "deepseek-llm", "deepseek-coder"}
	sort.Strings(names)
	return names
}

// normalize applies the family's normalizer.
func (f *family) normalize(s string) string {
	if !f.nfc {
		return s
	}
	return f.norm.nfc(s)
}

// split appends to ends the end (in characters) of every word of c.
func (f *family) split(c []char, ends, tmp []int32) ([]int32, []int32) {
	ends = append(ends[:0], int32(len(c)))
	for _, m := range f.stages {
		tmp = tmp[:0]
		start := int32(0)
		for _, end := range ends {
			tmp = splitIsolated(c[start:end], m, start, tmp)
			start = end
		}
		ends, tmp = tmp, ends
	}
	return ends, tmp
}

// splitIsolated cuts c at every match of m, scanning as a regex's find_iter does: at each
// position the match starting there, if any, else on to the next character. Matches and the
// text between them become pieces. ends receive positions offset by base.
func splitIsolated(c []char, m matcher, base int32, ends []int32) []int32 {
	gap := false
	for i := 0; i < len(c); {
		if e := m(c, i); e > i {
			if gap {
				ends = append(ends, base+int32(i))
				gap = false
			}
			ends = append(ends, base+int32(e))
			i = e
			continue
		}
		gap = true
		i++
	}
	if gap {
		ends = append(ends, base+int32(len(c)))
	}
	return ends
}
