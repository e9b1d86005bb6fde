package tokenizer

// workspace holds one encoder's scratch memory and its cache of words already merged. Encode
// takes an idle one (or makes one), so a Tokenizer serves many goroutines without locks, and a
// warm workspace encodes without allocating.
type workspace struct {
	chars []char
	ends  []int32
	tmp   []int32
	syms  []symbol
	heap  []candidate
	text  []byte
	cache *wordCache
}

// maxIdleWorkspaces bounds the workspaces kept between calls.
const maxIdleWorkspaces = 8

func (t *Tokenizer) getWorkspace() *workspace {
	select {
	case w := <-t.free:
		return w
	default:
		return &workspace{cache: newWordCache()}
	}
}

func (t *Tokenizer) putWorkspace(w *workspace) {
	select {
	case t.free <- w:
	default:
	}
}

// Encode returns the token ids of text, as HF tokenizers' encode(text, add_special_tokens=
// False) gives them. Control tokens (<|endoftext|>, …) written in text become their ids only
// when parseSpecial is set; otherwise their text is tokenized like any other, as with HF's
// split_special_tokens=True. Neither BOS nor EOS is added (see AddBOS).
//
// Text that is not valid UTF-8 is tokenized byte for byte: each byte of an invalid sequence is
// a character of its own, of no letter/number/space class, normalized to itself, and encoded
// as the token of that byte, so Decode gives the same bytes back. (HF cannot be given such
// text: its bindings take Unicode strings.)
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	return t.AppendEncode(nil, text, parseSpecial)
}

// AppendEncode appends the token ids of text to dst, as Encode.
func (t *Tokenizer) AppendEncode(dst []int32, text string, parseSpecial bool) []int32 {
	w := t.getWorkspace()
	defer t.putWorkspace(w)
	if !parseSpecial || t.control.empty() {
		return t.encodeNormalized(w, text, dst)
	}
	// Control tokens are matched in the raw text (they are not normalized in HF).
	return t.control.encodeAround(text, dst, func(s string, dst []int32) []int32 {
		return t.encodeNormalized(w, s, dst)
	})
}

// encodeNormalized normalizes a stretch between control tokens, cuts out the user-defined
// tokens (matched in normalized text, as HF matches its normalized added tokens), and
// pre-tokenizes and merges the rest.
func (t *Tokenizer) encodeNormalized(w *workspace, text string, dst []int32) []int32 {
	if text == "" {
		return dst
	}
	return t.user.encodeAround(t.fam.normalize(text), dst, func(s string, dst []int32) []int32 {
		return t.encodePiece(w, s, dst)
	})
}

// encodePiece pre-tokenizes text into words and encodes each.
func (t *Tokenizer) encodePiece(w *workspace, text string, dst []int32) []int32 {
	if text == "" {
		return dst
	}
	w.chars = decodeChars(w.chars[:0], text, classTable())
	w.ends, w.tmp = t.fam.split(w.chars, w.ends, w.tmp)
	start := 0
	for _, end := range w.ends {
		lo := w.chars[start].off
		hi := len(text)
		if int(end) < len(w.chars) {
			hi = w.chars[end].off
		}
		dst = t.encodeWord(w, text[lo:hi], dst)
		start = int(end)
	}
	return dst
}

// encodeWord appends the ids of one pre-tokenized word, from the cache when it is there.
func (t *Tokenizer) encodeWord(w *workspace, word string, dst []int32) []int32 {
	if len(word) == 1 {
		if id := t.byteToken[word[0]]; id >= 0 {
			return append(dst, id)
		}
	}
	if ids, ok := w.cache.get(word); ok {
		return append(dst, ids...)
	}
	n := len(dst)
	if id, ok := t.wholeWord(w, word); ok {
		dst = append(dst, id)
	} else {
		dst = t.bpe(w, word, dst)
	}
	w.cache.put(word, dst[n:])
	return dst
}

// wholeWord implements BPE's ignore_merges: the word itself, if it is a token.
func (t *Tokenizer) wholeWord(w *workspace, word string) (int32, bool) {
	if !t.fam.ignoreMerges {
		return 0, false
	}
	w.text = t.alpha.encode(w.text[:0], word)
	id, ok := t.words[string(w.text)]
	return id, ok
}
