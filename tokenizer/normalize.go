package tokenizer

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// HF tokenizers normalizes with the unicode-normalization-alignments crate, whose Unicode data
// is older than golang.org/x/text's (15.0): combining marks assigned since then have canonical
// combining class 0 there, so they block reordering and composition instead of taking part,
// and U+11935 U+11930 does not compose to U+11938. nfc reproduces that by normalizing the text
// between such characters separately (hfStarters, from unicode16.go, lists them and the class
// table flags them; the generator finds them by probing the oracle). Bytes that are not valid
// UTF-8 are also left in place, unchanged, with normalization on either side.
type normalizer struct {
	cl *classes
}

func newNormalizer() *normalizer { return &normalizer{cl: classTable()} }

func (n *normalizer) isStarter(r rune) bool { return n.cl.of(r)&clsHFStarter != 0 }

// nfc returns s in HF's NFC.
func (n *normalizer) nfc(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s
	}
	// Find the points where the text must be cut: HF-only starters and invalid bytes.
	cut := false
	for _, r := range s[i:] {
		if r == utf8.RuneError || n.isStarter(r) {
			cut = true
			break
		}
	}
	if !cut {
		if norm.NFC.IsNormalString(s) {
			return s
		}
		return norm.NFC.String(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	start := 0
	for j := 0; j < len(s); {
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && size == 1 || n.isStarter(r) {
			b.WriteString(norm.NFC.String(s[start:j]))
			b.WriteString(s[j : j+size])
			start = j + size
		}
		j += size
	}
	b.WriteString(norm.NFC.String(s[start:]))
	return b.String()
}
