package tokenizer

import "unicode/utf8"

// Decode returns the text of ids, as HF tokenizers' decode(ids, skip_special_tokens=False)
// builds it before turning bytes into a string: every token's bytes in order, control tokens
// included. Ids outside the vocabulary and Unused tokens give nothing (HF skips ids it does not
// know). The result may hold invalid UTF-8 where the ids split a character; HF would show each
// such sequence as U+FFFD.
func (t *Tokenizer) Decode(ids []int32) string {
	return string(t.AppendDecode(nil, ids))
}

// AppendDecode appends the bytes of ids to dst, as Decode.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int32) []byte {
	for _, id := range ids {
		dst = append(dst, t.tokenBytes(id)...)
	}
	return dst
}

// tokenBytes returns the bytes token id stands for. A token's text is read through the
// byte-level alphabet, unless some character of it is outside the alphabet (added tokens such
// as runs of spaces), when it stands for its own UTF-8, as in HF's ByteLevel decoder.
func (t *Tokenizer) tokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.tokens) {
		return nil
	}
	return t.decoded[t.decOff[id]:t.decOff[id+1]]
}

// A StreamDecoder turns ids into text one at a time, for printing a generation as it runs:
// it holds back the bytes of a character that the next token may complete, so it never emits
// part of a valid UTF-8 character. Bytes that cannot begin or continue a valid character are
// emitted as they are. The concatenation of everything Next and Flush return is Decode of all
// the ids.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a decoder with nothing pending.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Next adds one id and returns the text that is now complete (possibly "").
func (d *StreamDecoder) Next(id int32) string {
	d.pending = append(d.pending, d.t.tokenBytes(id)...)
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is still held back (an unfinished character, as raw bytes) and
// resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of b without a trailing incomplete UTF-8 sequence: one
// that is a valid beginning of a character but lacks its last bytes.
func completePrefix(b []byte) int {
	// A character has at most 4 bytes: look at most 3 bytes back for its first byte.
	for back := 1; back <= 3 && back <= len(b); back++ {
		i := len(b) - back
		c := b[i]
		if c < utf8.RuneSelf {
			return len(b)
		}
		if !utf8.RuneStart(c) {
			continue
		}
		if need := seqLen(c); need > back && validPrefix(b[i:]) {
			return i
		}
		return len(b)
	}
	return len(b)
}

// seqLen is the length of the UTF-8 sequence a lead byte announces (0 for invalid lead bytes).
func seqLen(c byte) int {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2
	case c >= 0xE0 && c <= 0xEF:
		return 3
	case c >= 0xF0 && c <= 0xF4:
		return 4
	}
	return 0
}

// validPrefix reports whether p (shorter than its lead byte announces) can still become a
// valid character: each continuation byte in range, including the lead byte's special limits
// (no overlong forms, no surrogates, nothing above U+10FFFF).
func validPrefix(p []byte) bool {
	for k := 1; k < len(p); k++ {
		lo, hi := byte(0x80), byte(0xBF)
		if k == 1 {
			switch p[0] {
			case 0xE0:
				lo = 0xA0
			case 0xED:
				hi = 0x9F
			case 0xF0:
				lo = 0x90
			case 0xF4:
				hi = 0x8F
			}
		}
		if p[k] < lo || p[k] > hi {
			return false
		}
	}
	return true
}

// ValidUTF8 returns s with each ill-formed sequence shown as U+FFFD, as Rust's
// String::from_utf8_lossy (behind HF tokenizers' decode) and Python's decode("utf-8",
// "replace") do: a maximal subpart (the longest start of a valid character, or else one byte)
// becomes one U+FFFD. Text for people — a chat answer, a JSON string — goes through it;
// Decode keeps the bytes.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		if r, n := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || n > 1 {
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		n := 1
		if need := seqLen(s[i]); need > 1 {
			for n < need && i+n < len(s) && validPrefix([]byte(s[i:i+n+1])) {
				n++
			}
		}
		b = utf8.AppendRune(b, utf8.RuneError)
		i += n
	}
	return string(b)
}
