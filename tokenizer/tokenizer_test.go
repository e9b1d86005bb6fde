package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/oracle"
)

// TestGoldenOLMoE checks vectors made with Python tokenizers on the same vocabulary (from
// allenai/dolma's tests), independent of the npm oracle.
func TestGoldenOLMoE(t *testing.T) {
	tok := olmoe(t)
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"This is a document with no newlines.", []int32{1552, 310, 247, 3389, 342, 642, 747, 8737, 15}},
		{"A doc with\nnewlines.\n\nToks be the same!\n", []int32{34, 5474, 342, 187, 1826, 8737, 15, 187, 187, 53, 24560, 320, 253, 1072, 2, 187}},
		{"\nSimple doc with leading newline.", []int32{187, 21595, 5474, 342, 4283, 747, 1282, 15}},
		{"<|endoftext|><|user|>\nHello!\n<|assistant|>\n", []int32{50279, 29, 93, 4537, 49651, 187, 12092, 2, 187, 29, 93, 515, 5567, 49651, 187}},
		{"about   spaces", []int32{10383, 50275, 31748}},
	} {
		if got := tok.Encode(c.text, true); !equalIDs(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if tok.BOS() != 50279 || tok.EOS() != 50279 || tok.PAD() != 1 || tok.AddBOS() || tok.AddEOS() || tok.Len() != 50280 {
		t.Errorf("bos %d eos %d pad %d addBOS %v addEOS %v len %d", tok.BOS(), tok.EOS(), tok.PAD(), tok.AddBOS(), tok.AddEOS(), tok.Len())
	}
}

func TestParseSpecial(t *testing.T) {
	tok := olmoe(t)
	text := "a<|endoftext|>b<|padding|>"
	if got, want := tok.Encode(text, true), []int32{66, 50279, 67, 1}; !equalIDs(got, want) {
		t.Errorf("parsing specials: %v, want %v", got, want)
	}
	plain := tok.Encode(text, false)
	for _, id := range plain {
		if tok.Type(id) == Control {
			t.Fatalf("split specials gave control token %d in %v", id, plain)
		}
	}
	if back := tok.Decode(plain); back != text {
		t.Errorf("decode %q, want %q", back, text)
	}
	// User-defined tokens (PII markers, runs of spaces) are always matched.
	if got := tok.Encode("x|||EMAIL_ADDRESS|||  y", false); !equalIDs(got, []int32{89, 50277, 50276, 90}) {
		t.Errorf("user-defined tokens: %v", got)
	}
}

// gpt2 loads llama.cpp's GPT-2 vocabulary, which has a token for every byte.
func gpt2(t testing.TB) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(oracle.Vocab(t, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestInvalidUTF8(t *testing.T) {
	tok := gpt2(t)
	for _, s := range []string{"\xff", "a\xc3", "\xe2\x82 x", "caf\xc3\xa9\xed\xa0\x80!", "\xf0\x9f\x98", "ok\x80\x80\x80end", "'s\xffs"} {
		ids := tok.Encode(s, true)
		if back := tok.Decode(ids); back != s {
			t.Errorf("Decode(Encode(%q)) = %q (ids %v)", s, back, ids)
		}
	}
	// An invalid byte is a character of its own: it is not glued to a letter run.
	if got := tok.Encode("ab\xffcd", true); len(got) != 3 {
		t.Errorf("ab\\xffcd → %v, want three words", got)
	}
	// NFC runs on either side of invalid bytes and leaves them alone. GPT-NeoX has no token
	// for some bytes that never occur in UTF-8, such as 0xFF: those are dropped.
	ol := olmoe(t)
	if back := ol.Decode(ol.Encode("e\u0301\x80e\u0301\xff", true)); back != "é\x80é" {
		t.Errorf("NFC around an invalid byte: %q", back)
	}
}

func TestStreamDecoder(t *testing.T) {
	tok := olmoe(t)
	text := "naïve 👨‍👩‍👧‍👦 日本語 🇺🇸 <|endoftext|> ok"
	ids := tok.Encode(text, true)
	d := tok.NewStreamDecoder()
	var out strings.Builder
	pieces := 0
	for _, id := range ids {
		s := d.Next(id)
		if !utf8.ValidString(s) {
			t.Errorf("Next(%d) emitted %q, not valid UTF-8", id, s)
		}
		if s != "" {
			pieces++
		}
		out.WriteString(s)
	}
	out.WriteString(d.Flush())
	if out.String() != text {
		t.Errorf("stream gave %q, want %q", out.String(), text)
	}
	if pieces >= len(ids) {
		t.Errorf("%d pieces for %d ids: expected some ids to end inside a character", pieces, len(ids))
	}
	// Bytes that cannot become valid are not held back; a cut character is flushed at the end.
	g := gpt2(t)
	d = g.NewStreamDecoder()
	var got strings.Builder
	for _, id := range g.Encode("a\xff\xe6\x97", true) {
		got.WriteString(d.Next(id))
	}
	if got.String() != "a\xff" {
		t.Errorf("before flush %q, want %q", got.String(), "a\xff")
	}
	if rest := d.Flush(); rest != "\xe6\x97" {
		t.Errorf("flush %q", rest)
	}
	for _, c := range []struct {
		in   string
		keep int
	}{{"a", 1}, {"\xe6", 0}, {"\xe6\x97", 0}, {"\xe6\x97\xa5", 3}, {"\xed\xa0", 2}, {"\xf4\x90", 2}, {"\xf0\x9f\x98", 0}, {"x\xc3", 1}, {"\x80", 1}} {
		if got := completePrefix([]byte(c.in)); got != c.keep {
			t.Errorf("completePrefix(%q) = %d, want %d", c.in, got, c.keep)
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := olmoe(t)
	texts := []string{"Hello, world!", "日本語のテキスト", "code:\n    return x**2\n", "  many   spaces  ", "<|endoftext|>x"}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				i := (g + k) % len(texts)
				if got := tok.Encode(texts[i], true); !equalIDs(got, want[i]) {
					t.Errorf("goroutine %d: %q → %v, want %v", g, texts[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewErrors(t *testing.T) {
	base := func() Config {
		return Config{Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, Pre: "gpt-2", BOS: -1, EOS: -1, PAD: -1, UNK: -1}
	}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"family", func(c *Config) { c.Pre = "falcon" }, `family "falcon" is not supported`},
		{"no tokens", func(c *Config) { c.Tokens = nil }, "no tokens"},
		{"types", func(c *Config) { c.Types = []TokenType{Normal} }, "1 token types for 3 tokens"},
		{"merge text", func(c *Config) { c.Merges = []string{"a c"} }, `merge 0 "a c"`},
		{"merge space", func(c *Config) { c.Merges = []string{"ab"} }, "has no space"},
		{"bos", func(c *Config) { c.BOS = 3 }, "bos token id 3 outside"},
	}
	for _, c := range cases {
		cfg := base()
		c.edit(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	tok, err := New(base())
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("ab", true); !equalIDs(got, []int32{2}) {
		t.Errorf("tiny vocabulary: %v", got)
	}
	if tok.Decode([]int32{2, -1, 99, 0}) != "aba" {
		t.Errorf("ids outside the vocabulary should decode to nothing")
	}
}

func TestFromMetadataErrors(t *testing.T) {
	kv := func(k string, v gguf.Value) gguf.KV { return gguf.KV{Key: k, Value: v} }
	good := []gguf.KV{
		kv(keyModel, gguf.String("gpt2")), kv(keyPre, gguf.String("gpt-2")),
		kv(keyTokens, gguf.Strings([]string{"a", "b"})), kv(keyTokenType, gguf.Int32s([]int32{1, 1})),
	}
	if _, err := FromMetadata(good); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		kvs  []gguf.KV
		want string
	}{
		{"model", append([]gguf.KV{kv(keyModel, gguf.String("llama"))}, good[1:]...), `tokenizer model "llama" is not supported`},
		{"no model", good[1:], "tokenizer.ggml.model missing"},
		{"pre", []gguf.KV{good[0], kv(keyPre, gguf.String("bert")), good[2], good[3]}, `family "bert"`},
		{"tokens type", []gguf.KV{good[0], good[1], kv(keyTokens, gguf.String("x"))}, "not an array of strings"},
		{"bos", append(append([]gguf.KV{}, good...), kv("tokenizer.ggml.bos_token_id", gguf.Uint32(7))), "bos_token_id"},
		{"add_bos", append(append([]gguf.KV{}, good...), kv("tokenizer.ggml.add_bos_token", gguf.String("yes"))), "not a bool"},
	}
	for _, c := range cases {
		_, err := FromMetadata(c.kvs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestNewerUnicode checks characters where Go's tables and HF's differ (see unicode16.go).
func TestNewerUnicode(t *testing.T) {
	cl := classTable()
	for _, c := range []struct {
		r    rune
		want uint16
	}{
		{0x2EBF0, clsL | clsLo}, // CJK Extension I (15.1)
		{0x1C89, clsL | clsLu},  // Cyrillic capital TJE (16.0)
		{0x10D40, clsN},         // Garay digit zero (16.0)
		{0x0897, clsM},          // Arabic pepet (16.0)
		{0x31350, clsL | clsLo}, // CJK Extension H (15.0, in Go's tables)
		{'A', clsL | clsLu},
		{0x3000, clsSpace}, // ideographic space
		{0xFFFF, 0},
	} {
		if got := cl.of(c.r) &^ clsHFStarter; got != c.want {
			t.Errorf("U+%04X: flags %b, want %b", c.r, got, c.want)
		}
	}
	n := newNormalizer()
	for in, want := range map[string]string{
		"e\u0301":                  "é",
		"\U00011935\U00011930":     "\U00011935\U00011930", // HF does not compose (Go gives U+11938)
		"a\u1ABF\u0334":            "a\u1ABF\u0334",        // U+1ABF has class 0 for HF
		"a\u0334\u0301":            "\u00e1\u0334",
		"a\u0301\u0334":            "\u00e1\u0334",
		"\u1e9b\u0323":             "\u1e9b\u0323",
		"ｶﾞ":                       "ｶﾞ",
		"\uAC00\u11A8":             "\uAC01",
		"x\u0301\u07FD\u0301y":     "x\u0301\u07FD\u0301y",
		"e\u0301\U00011938e\u0301": "é\U00011938é",
	} {
		if got := n.nfc(in); got != want {
			t.Errorf("nfc(%+q) = %+q, want %+q", in, got, want)
		}
	}
}

// FuzzEncodeDecode feeds arbitrary bytes to Encode and Decode: no panic, and decoding gives
// the text back, normalized (GPT-2's vocabulary has every byte, so nothing is dropped).
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"", "hello world", "a\xffb", "e\u0301", "<|endoftext|>", "  \t\n\r\n", "'S'll", "中文👍🏽"} {
		f.Add(s, true)
	}
	tok := gpt2(f)
	ol := olmoe(f)
	f.Fuzz(func(t *testing.T, s string, parse bool) {
		if back := tok.Decode(tok.Encode(s, parse)); back != s {
			t.Fatalf("gpt-2: Decode(Encode(%q)) = %q", s, back)
		}
		ids := ol.Encode(s, parse)
		if back, want := ol.Decode(ids), dropMissingBytes(ol, ol.fam.normalize(s)); back != want {
			t.Fatalf("olmoe: Decode(Encode(%q)) = %q, want %q", s, back, want)
		}
		// Random ids decode without panic, and a stream of them gives the same bytes.
		r := rand.New(rand.NewPCG(uint64(len(s)), 7))
		rnd := make([]int32, len(s)%17)
		for i := range rnd {
			rnd[i] = int32(r.IntN(ol.Len()+10)) - 5
		}
		d := ol.NewStreamDecoder()
		var sb strings.Builder
		for _, id := range rnd {
			sb.WriteString(d.Next(id))
		}
		sb.WriteString(d.Flush())
		if sb.String() != ol.Decode(rnd) {
			t.Fatalf("stream of %v gave %q, Decode %q", rnd, sb.String(), ol.Decode(rnd))
		}
	})
}

// dropMissingBytes removes the invalid bytes the tokenizer has no token for.
func dropMissingBytes(tok *Tokenizer, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 && tok.byteToken[s[i]] < 0 {
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// TestBPESmallMatchesHeap checks the two BPE loops agree on every word of the corpus.
func TestBPESmallMatchesHeap(t *testing.T) {
	tok := olmoe(t)
	chunks, _, _ := corpus(t)
	w := tok.getWorkspace()
	defer tok.putWorkspace(w)
	words := 0
	for _, c := range chunks[:len(chunks)/4] {
		w.chars = decodeChars(w.chars[:0], c, classTable())
		w.ends, w.tmp = tok.fam.split(w.chars, w.ends, w.tmp)
		start := 0
		for _, end := range w.ends {
			lo, hi := w.chars[start].off, len(c)
			if int(end) < len(w.chars) {
				hi = w.chars[end].off
			}
			start = int(end)
			word := c[lo:hi]
			if len(word) > smallWord {
				continue
			}
			words++
			small, heap := tok.bpeSmall(word, nil), tok.bpeHeap(w, word, nil)
			if !equalIDs(small, heap) {
				t.Fatalf("%q: small %v, heap %v", word, small, heap)
			}
		}
	}
	t.Logf("%d words agree", words)
}

// TestValidUTF8 checks the maximal-subpart replacement against Python's
// bytes.decode("utf-8", "replace") on the same bytes (outputs written down from Python 3).
func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain é":                  "plain é",
		"\xe2\x82A":                "\uFFFDA",
		"\x80\x80":                 "\uFFFD\uFFFD",
		"\xf0\x9f\x98":             "\uFFFD",
		"\xed\xa0\x80":             "\uFFFD\uFFFD\uFFFD",
		"\xc0\xaf":                 "\uFFFD\uFFFD",
		"ok\xf4\x90\x80\x80":       "ok\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xe0\x80\xaf":             "\uFFFD\uFFFD\uFFFD",
		"a\xf0\x9f\x98\x80b":       "a😀b",
		"\xf0\x9f\x98\xe2\x82\xac": "\uFFFD€",
		"\xff":                     "\uFFFD",
		"\xe2\x82":                 "\uFFFD",
	} {
		if got := ValidUTF8(in); got != want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
