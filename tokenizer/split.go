package tokenizer

// Hand-written matchers for the split patterns of HF tokenizer.json files. Go's regexp has no
// lookahead and finds leftmost-longest rather than leftmost-first matches, so each pattern is
// written out here as the backtracking engine HF uses (Oniguruma) would run it: alternatives
// in order, greedy repetitions giving back one character at a time.

const letterNumberSpace = clsL | clsN | clsSpace

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// runOf returns the end of the run of characters having any of the flags, from i.
func runOf(c []char, i int, flags uint16) int {
	for i < len(c) && c[i].cls&flags != 0 {
		i++
	}
	return i
}

// runOther returns the end of the run of characters that are not letters, numbers or space.
func runOther(c []char, i int) int {
	for i < len(c) && c[i].cls&letterNumberSpace == 0 {
		i++
	}
	return i
}

// spaceRun matches \s+(?!\S)|\s+ at a whitespace character: a run of whitespace gives its last
// character back to a following non-space, unless that would leave nothing.
func spaceRun(c []char, i int) int {
	j := runOf(c, i, clsSpace)
	if j < len(c) && j-1 > i {
		return j - 1
	}
	return j
}

// matchGPT2 matches the GPT-2 pattern (ByteLevel with use_regex):
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(c []char, i int) int {
	n := len(c)
	if c[i].r == '\'' && i+1 < n {
		switch c[i+1].r {
		case 's', 't', 'm', 'd':
			return i + 2
		}
		if i+2 < n {
			a, b := c[i+1].r, c[i+2].r
			if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
				return i + 3
			}
		}
	}
	space := c[i].r == ' ' && i+1 < n
	for _, f := range [2]uint16{clsL, clsN} {
		if space && c[i+1].cls&f != 0 {
			return runOf(c, i+1, f)
		}
		if c[i].cls&f != 0 {
			return runOf(c, i, f)
		}
	}
	if space && c[i+1].cls&letterNumberSpace == 0 {
		return runOther(c, i+1)
	}
	if c[i].cls&letterNumberSpace == 0 {
		return runOther(c, i)
	}
	return spaceRun(c, i)
}

// foldASCII maps the characters that (?i) lets match an ASCII letter of the contractions to
// that lower-case letter: its upper case, and U+017F LATIN SMALL LETTER LONG S for 's'.
func foldASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	if r == 0x17F {
		return 's'
	}
	return r
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, returning its end or -1.
func contraction(c []char, i int) int {
	if i+1 >= len(c) || c[i].r != '\'' {
		return -1
	}
	switch foldASCII(c[i+1].r) {
	case 's', 't', 'm', 'd':
		return i + 2
	}
	if i+2 < len(c) {
		a, b := foldASCII(c[i+1].r), foldASCII(c[i+2].r)
		if a == 'r' && b == 'e' || a == 'v' && b == 'e' || a == 'l' && b == 'l' {
			return i + 3
		}
	}
	return -1
}

// matchLlama3 matches the Llama 3 pattern:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchLlama3(c []char, i int) int { return matchLlamaLike(c, i, 3) }

// matchQwen2 matches the Qwen2 pattern, the Llama 3 one with \p{N} instead of \p{N}{1,3}.
func matchQwen2(c []char, i int) int { return matchLlamaLike(c, i, 1) }

func matchLlamaLike(c []char, i, digits int) int {
	n := len(c)
	if e := contraction(c, i); e > 0 {
		return e
	}
	ch := c[i]
	if ch.cls&(clsL|clsN) == 0 && !isCRLF(ch.r) && i+1 < n && c[i+1].cls&clsL != 0 {
		return runOf(c, i+1, clsL)
	}
	if ch.cls&clsL != 0 {
		return runOf(c, i, clsL)
	}
	if ch.cls&clsN != 0 {
		return min(runOf(c, i, clsN), i+digits)
	}
	if e := spacePunct(c, i, false); e > 0 {
		return e
	}
	return spaceNewlines(c, i)
}

// spacePunct matches ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with slash also `[\r\n/]*`) at i, or -1.
func spacePunct(c []char, i int, slash bool) int {
	s := -1
	if c[i].r == ' ' && i+1 < len(c) && c[i+1].cls&letterNumberSpace == 0 {
		s = i + 1
	} else if c[i].cls&letterNumberSpace == 0 {
		s = i
	}
	if s < 0 {
		return -1
	}
	j := runOther(c, s)
	for j < len(c) && (isCRLF(c[j].r) || slash && c[j].r == '/') {
		j++
	}
	return j
}

// spaceNewlines matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, or -1. The first alternative's \s*
// gives back characters until [\r\n]+ can match: the match ends after the run's last \r or \n.
func spaceNewlines(c []char, i int) int {
	if c[i].cls&clsSpace == 0 {
		return -1
	}
	j := runOf(c, i, clsSpace)
	for k := j - 1; k >= i; k-- {
		if isCRLF(c[k].r) {
			return k + 1
		}
	}
	return spaceRun(c, i)
}

// Classes of the GPT-4o (o200k) pattern.
const (
	clsUpperish = clsLu | clsLt | clsLm | clsLo | clsM // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	clsLowerish = clsLl | clsLm | clsLo | clsM         // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

// matchGPT4o matches the GPT-4o pattern:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (tokenizer.json has it with behaviour Removed and invert, which keeps exactly the matches;
// every character matches some alternative, so nothing is removed.)
func matchGPT4o(c []char, i int) int {
	n := len(c)
	// The optional prefix [^\r\n\p{L}\p{N}] is tried taken first, then not.
	starts := [2]int{i, -1}
	if c[i].cls&(clsL|clsN) == 0 && !isCRLF(c[i].r) && i+1 < n {
		starts = [2]int{i + 1, i}
	}
	for _, s := range starts {
		if s < 0 {
			continue
		}
		// [upper]*[lower]+: the upper run gives back characters until a lower one follows.
		u := runOf(c, s, clsUpperish)
		if u < n && c[u].cls&clsLowerish != 0 {
			return withContraction(c, runOf(c, u, clsLowerish))
		}
		for k := u - 1; k >= s; k-- {
			if c[k].cls&clsLowerish != 0 {
				return withContraction(c, k+1)
			}
		}
	}
	for _, s := range starts {
		if s >= 0 && s < n && c[s].cls&clsUpperish != 0 {
			return withContraction(c, runOf(c, runOf(c, s, clsUpperish), clsLowerish))
		}
	}
	if c[i].cls&clsN != 0 {
		return min(runOf(c, i, clsN), i+3)
	}
	if e := spacePunct(c, i, true); e > 0 {
		return e
	}
	return spaceNewlines(c, i)
}

func withContraction(c []char, i int) int {
	if e := contraction(c, i); e > 0 {
		return e
	}
	return i
}

// matchDigit matches one \p{N} (HF's Digits pre-tokenizer with individual_digits, whose
// char::is_numeric is the same class).
func matchDigit(c []char, i int) int {
	if c[i].cls&clsN != 0 {
		return i + 1
	}
	return -1
}

// matchNumbers matches \p{N}+.
func matchNumbers(c []char, i int) int {
	if c[i].cls&clsN != 0 {
		return runOf(c, i, clsN)
	}
	return -1
}

// matchNewline matches [\r\n].
func matchNewline(c []char, i int) int {
	if isCRLF(c[i].r) {
		return i + 1
	}
	return -1
}

// spaceThen matches \s?X+ for a set X given as a predicate.
func spaceThen(c []char, i int, in func(char) bool) int {
	s := -1
	if c[i].cls&clsSpace != 0 && i+1 < len(c) && in(c[i+1]) {
		s = i + 1
	} else if in(c[i]) {
		s = i
	}
	if s < 0 {
		return -1
	}
	for s < len(c) && in(c[s]) {
		s++
	}
	return s
}

// matchSpaceLetters matches \s?\p{L}+.
func matchSpaceLetters(c []char, i int) int {
	return spaceThen(c, i, func(ch char) bool { return ch.cls&clsL != 0 })
}

// matchSpacePunct matches \s?\p{P}+.
func matchSpacePunct(c []char, i int) int {
	return spaceThen(c, i, func(ch char) bool { return ch.cls&clsP != 0 })
}

// matchTrailingSpace matches \s+$ (the pieces it sees hold no line break but a lone one).
func matchTrailingSpace(c []char, i int) int {
	if c[i].cls&clsSpace != 0 && runOf(c, i, clsSpace) == len(c) {
		return len(c)
	}
	return -1
}

// inRanges reports whether r lies in one of the sorted, inclusive ranges.
func inRanges(r rune, ranges [][2]rune) bool {
	lo, hi := 0, len(ranges)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < ranges[m][0]:
			hi = m
		case r > ranges[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// parseRanges reads a regex character class body made of single characters and a-b ranges.
func parseRanges(set string) [][2]rune {
	rs := []rune(set)
	var out [][2]rune
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			out = append(out, [2]rune{rs[i], rs[i+2]})
			i += 2
			continue
		}
		out = append(out, [2]rune{rs[i], rs[i]})
	}
	sortRanges(out)
	return out
}

func sortRanges(r [][2]rune) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j][0] < r[j-1][0]; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// The character sets of the DeepSeek LLM pattern, as its tokenizer.json spells them.
const (
	deepSeekLetters = "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃"
	deepSeekPunct   = "!-/:-~！-／：-～‘-‟　-。"
	deepSeekCJK     = "一-龥ࠀ-一가-퟿"
)

// matchDeepSeekLetters matches \s?[deepSeekLetters]+.
func matchDeepSeekLetters(c []char, i int) int {
	return spaceThen(c, i, func(ch char) bool { return inRanges(ch.r, deepSeekSets().letters) })
}

// matchDeepSeekPunct matches \s?[deepSeekPunct]+.
func matchDeepSeekPunct(c []char, i int) int {
	return spaceThen(c, i, func(ch char) bool { return inRanges(ch.r, deepSeekSets().punct) })
}

// matchCJK matches [一-龥ࠀ-一가-퟿]+.
func matchCJK(c []char, i int) int {
	j := i
	for j < len(c) && inRanges(c[j].r, deepSeekSets().cjk) {
		j++
	}
	if j > i {
		return j
	}
	return -1
}
