package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode compares our tokenizers with HF tokenizers (Rust) on the fuzzer's strings, through
// one long-lived Node.js process per fuzzing worker, for OLMoE and the three npm tokenizers.
// Strings that are not valid UTF-8 cannot be given to HF (its bindings take Unicode strings):
// their invalid bytes are replaced by U+FFFD first. FuzzEncodeDecode covers invalid input.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"Hello world", "  Hello  world  \n\n\tTabs\tand   spaces   ", "I'm can't won't they're IT'S O'Neil 'ſ",
		"3.14159 1234567890 12,345.67", "naïve café e\u0301 \u1e9b\u0323", "日本語 中文 한국어 Ελληνικά עברית العربية",
		"👍🏽 👨‍👩‍👧‍👦 🇺🇸", "code:\n    def f(x):\n        return x**2\n\n\n", "<|endoftext|>mid<|padding|> |||PHONE_NUMBER|||",
		"\r\n\r\n \r\n\t \u3000\u00a0x", "ABCdefGHI ǅungla ꟊ \u1c89\u1c8a", "\u0301\u0301a", "a\u200db", "'s's'S'", "x/\r\n/",
	} {
		f.Add(s)
	}
	h := startHF(f)
	srcs := sources(f)
	toks := make([]*Tokenizer, len(srcs))
	for i, src := range srcs {
		toks[i] = build(f, src)
		h.load(f, src.name, src, nil)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		for i, src := range srcs {
			got := toks[i].Encode(s, true)
			want := h.encode(t, src.name, []string{s}, false).Rust[0]
			if !equalIDs(got, want) {
				t.Fatalf("%s: Encode(%+q)\n got  %v\n want %v", src.name, s, got, want)
			}
		}
	})
}

// TestDecodeMatchesHF decodes random id sequences (control and unused ids included, characters
// cut between ids) and compares with HF's decode, which turns the bytes into a string with
// Rust's from_utf8_lossy.
func TestDecodeMatchesHF(t *testing.T) {
	h := startHF(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, src := range sources(t) {
		tok := build(t, src)
		h.load(t, src.name, src, nil)
		var seqs [][]int32
		for range 300 {
			seq := make([]int32, 1+r.IntN(12))
			for i := range seq {
				seq[i] = int32(r.IntN(tok.Len()))
			}
			seqs = append(seqs, seq)
		}
		// Characters cut across ids: the tail of a long text's ids.
		ids := tok.Encode("naïve 👨‍👩‍👧‍👦 日本語 🇺🇸 Ελληνικά <|endoftext|>", true)
		for i := range ids {
			seqs = append(seqs, ids[i:], ids[:i])
		}
		var want struct{ Rust []string }
		if err := h.call(map[string]any{"op": "decode", "name": src.name, "ids": seqs}, &want); err != nil {
			t.Fatal(err)
		}
		diffs := 0
		for i, seq := range seqs {
			if got := lossy(tok.Decode(seq)); got != want.Rust[i] {
				diffs++
				if diffs < 5 {
					t.Errorf("%s: decode %v = %+q, HF %+q", src.name, seq, got, want.Rust[i])
				}
			}
		}
		t.Logf("%s: %d id sequences decoded as HF does; %d differences", src.name, len(seqs), diffs)
	}
}

// lossy is Rust's String::from_utf8_lossy: each maximal ill-formed subsequence becomes U+FFFD.
func lossy(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		// The maximal subpart: a lead byte and the continuation bytes that could still follow it.
		n := 1
		if need := seqLen(s[i]); need > 1 {
			for n < need && i+n < len(s) && validPrefix([]byte(s[i:i+n+1])) {
				n++
			}
		}
		b.WriteRune(utf8.RuneError)
		i += n
	}
	return b.String()
}

// FuzzValidUTF8 checks that ValidUTF8 always gives valid UTF-8, leaves valid text alone, and
// splits like the stream decoder: the pieces of any split, each made valid, join to the whole.
func FuzzValidUTF8(f *testing.F) {
	for _, s := range []string{"", "é", "\xe2\x82A", "\xed\xa0\x80", "a\xf0\x9f\x98\x80b", "\xf0\x9f\x98\xe2\x82\xac"} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		v := ValidUTF8(s)
		if !utf8.ValidString(v) || (utf8.ValidString(s) && v != s) {
			t.Fatalf("ValidUTF8(%q) = %q", s, v)
		}
		// Where the stream decoder would cut: never inside a valid start of a character.
		if cut < 0 || cut > len(s) || completePrefix([]byte(s[:cut])) != cut {
			return
		}
		if w := ValidUTF8(s[:cut]) + ValidUTF8(s[cut:]); w != v {
			t.Fatalf("split at %d: %q + %q, whole %q", cut, ValidUTF8(s[:cut]), ValidUTF8(s[cut:]), v)
		}
	})
}
