package tokenizer

import "unicode/utf8"

// The byte-level alphabet of GPT-2 (bytes_to_unicode in HF tokenizers): every byte becomes one
// printable code point, so a token's text can hold any byte string. Printable bytes '!'..'~',
// '¡'..'¬' and '®'..'ÿ' stand for themselves; the other 68 bytes take U+0100 upward in byte
// order (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
type byteAlphabet struct {
	toRune   [256]rune
	fromRune [324]int16 // code point (< U+0144) → byte, or -1
}

func newByteAlphabet() *byteAlphabet {
	a := &byteAlphabet{}
	for i := range a.fromRune {
		a.fromRune[i] = -1
	}
	next := rune(256)
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			a.toRune[b] = rune(b)
		} else {
			a.toRune[b] = next
			next++
		}
		a.fromRune[a.toRune[b]] = int16(b)
	}
	return a
}

// decode returns the bytes a token's text stands for and true, or false when some code point
// is outside the alphabet (HF's ByteLevel decoder then keeps the text's own UTF-8).
func (a *byteAlphabet) decode(dst []byte, text string) ([]byte, bool) {
	n := len(dst)
	for _, r := range text {
		if r < 0 || int(r) >= len(a.fromRune) || a.fromRune[r] < 0 {
			return dst[:n], false
		}
		dst = append(dst, byte(a.fromRune[r]))
	}
	return dst, true
}

// single returns the byte a one-character text stands for.
func (a *byteAlphabet) single(text string) (byte, bool) {
	r, size := utf8.DecodeRuneInString(text)
	if size != len(text) || size == 0 || r < 0 || int(r) >= len(a.fromRune) || a.fromRune[r] < 0 {
		return 0, false
	}
	return byte(a.fromRune[r]), true
}

// encode appends the alphabet's text for raw bytes.
func (a *byteAlphabet) encode(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		dst = utf8.AppendRune(dst, a.toRune[raw[i]])
	}
	return dst
}
