package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer patterns, as bit flags. HF tokenizers evaluates
// its split patterns with Oniguruma, whose tables are Unicode 16.0; Go's unicode package is
// 15.0. classTable therefore starts from Go's tables and adds the Unicode 16.0 assignments
// listed in unicode16.go, which a generator (internal/gentables) takes from probing the
// oracle itself; TestUnicodeClassesLong checks every code point against the oracle again.
const (
	clsL         uint16 = 1 << iota // \p{L}
	clsN                            // \p{N}
	clsSpace                        // \s
	clsM                            // \p{M}
	clsLu                           // \p{Lu}
	clsLl                           // \p{Ll}
	clsLt                           // \p{Lt}
	clsLm                           // \p{Lm}
	clsLo                           // \p{Lo}
	clsP                            // \p{P}
	clsHFStarter                    // a starter for HF's normalizer but not for x/text (normalize.go)
)

// invalidBase marks a byte that is not part of valid UTF-8: such a byte is read as the
// "character" invalidBase+byte, which has no class (like punctuation) and passes through
// byte-level BPE as itself.
const invalidBase = 0x110000

// classes is a two-stage lookup of the flags of every code point.
type classes struct {
	block [0x110000 >> 8]uint16 // code point>>8 → index of its 256-entry block in flags
	flags []uint16
	ascii [128]uint16 // the first block again, for the common case
}

// classTable is built once, on first use, and never changed.
var classTable = sync.OnceValue(buildClasses)

func buildClasses() *classes {
	all := make([]uint16, 0x110000)
	set := func(tab *unicode.RangeTable, f uint16) {
		for _, r := range tab.R16 {
			for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
				all[c] |= f
			}
		}
		for _, r := range tab.R32 {
			for c := r.Lo; c <= r.Hi; c += r.Stride {
				all[c] |= f
			}
		}
	}
	set(unicode.L, clsL)
	set(unicode.N, clsN)
	set(unicode.White_Space, clsSpace)
	set(unicode.M, clsM)
	set(unicode.Lu, clsLu)
	set(unicode.Ll, clsLl)
	set(unicode.Lt, clsLt)
	set(unicode.Lm, clsLm)
	set(unicode.Lo, clsLo)
	set(unicode.P, clsP)
	for _, r := range hfStarters() {
		all[r] |= clsHFStarter
	}
	for _, r := range unicode16Additions() {
		for c := r.lo; c <= r.hi; c++ {
			all[c] |= r.flags
		}
	}
	cl := &classes{}
	seen := map[[256]uint16]uint16{}
	for b := range cl.block {
		var blk [256]uint16
		copy(blk[:], all[b<<8:])
		idx, ok := seen[blk]
		if !ok {
			idx = uint16(len(cl.flags) >> 8)
			seen[blk] = idx
			cl.flags = append(cl.flags, blk[:]...)
		}
		cl.block[b] = idx
	}
	copy(cl.ascii[:], all)
	return cl
}

// of returns the flags of a character (a code point or invalidBase+byte).
func (c *classes) of(r rune) uint16 {
	if r >= invalidBase || r < 0 {
		return 0
	}
	return c.flags[int(c.block[r>>8])<<8|int(r&0xFF)]
}

// classRange is a run of code points that Unicode 16.0 gives the listed classes.
type classRange struct {
	lo, hi rune
	flags  uint16
}

// char is one character of the text being pre-tokenized: its code point (or invalidBase+byte),
// its byte offset and its class flags.
type char struct {
	r   rune
	off int
	cls uint16
}

// decodeChars appends the characters of s, reading each byte that is not valid UTF-8 as the
// character invalidBase+byte.
func decodeChars(dst []char, s string, cl *classes) []char {
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, char{rune(b), i, cl.ascii[b]})
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			r = invalidBase + rune(b)
		}
		dst = append(dst, char{r, i, cl.of(r)})
		i += size
	}
	return dst
}

type deepSeekRanges struct{ letters, punct, cjk [][2]rune }

// deepSeekSets holds the parsed DeepSeek character sets, built once.
var deepSeekSets = sync.OnceValue(func() *deepSeekRanges {
	return &deepSeekRanges{parseRanges(deepSeekLetters), parseRanges(deepSeekPunct), parseRanges(deepSeekCJK)}
})
