// Command mkcorpus builds testdata/corpus, the text the tokenizer is compared with Hugging Face
// tokenizers on: pieces of text found on a Debian machine with Go installed, plus generated
// strings aimed at the tokenizer's corners. The output is the same on every run and machine
// that has the same sources; testdata/corpus/README.md says where each file comes from.
//
// Usage, from the module root: go run ./tools/mkcorpus [-out testdata/corpus]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxFile keeps every corpus file under 1 MB.
const maxFile = 900 << 10

func main() {
	out := flag.String("out", "testdata/corpus", "output folder")
	goroot := flag.String("goroot", "/usr/local/go", "Go tree to take source and documentation from")
	flag.Parse()
	log.SetFlags(0)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	files := []struct {
		name string
		make func() ([]byte, error)
	}{
		{"go-spec.html", func() ([]byte, error) { return readAll(filepath.Join(*goroot, "doc", "go_spec.html")) }},
		{"go-source.txt", func() ([]byte, error) {
			return concat(*goroot, "src/strings/strings.go", "src/fmt/print.go", "src/unicode/utf8/utf8.go",
				"src/sort/sort.go", "src/net/http/server.go", "src/encoding/json/decode.go", "src/regexp/syntax/parse.go",
				"src/go/parser/parser.go", "src/runtime/proc.go", "src/math/big/float.go", "src/time/format.go")
		}},
		{"locales.txt", func() ([]byte, error) { return locales("/usr/share/i18n/locales") }},
		{"unicode-data.txt", func() ([]byte, error) {
			return concat("/usr/share/perl/5.36/unicore", "NamedSequences.txt", "SpecialCasing.txt", "Blocks.txt")
		}},
		{"debian-copyright.txt", func() ([]byte, error) { return copyrights() }},
		{"generated.txt", func() ([]byte, error) { return generated(), nil }},
	}
	total := 0
	for _, f := range files {
		b, err := f.make()
		if err != nil {
			log.Fatalf("%s: %v", f.name, err)
		}
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
		if len(b) > maxFile {
			b = cutAtLine(b, maxFile)
		}
		if err := os.WriteFile(filepath.Join(*out, f.name), b, 0o644); err != nil {
			log.Fatal(err)
		}
		total += len(b)
		log.Printf("%s: %d bytes", f.name, len(b))
	}
	log.Printf("total %d bytes", total)
}

func readAll(path string) ([]byte, error) { return os.ReadFile(path) }

// concat joins files under dir, each introduced by its name.
func concat(dir string, names ...string) ([]byte, error) {
	var b bytes.Buffer
	for _, n := range names {
		if err := appendFile(&b, n, filepath.Join(dir, n)); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// appendFile appends the file at path to b, introduced by name.
func appendFile(b *bytes.Buffer, name, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "==> %s <==\n", name)
	b.Write(data)
	b.WriteString("\n")
	return nil
}

// cutAtLine shortens b to at most n bytes, ending at a line end.
func cutAtLine(b []byte, n int) []byte {
	b = b[:n]
	if i := bytes.LastIndexByte(b, '\n'); i > 0 {
		b = b[:i+1]
	}
	return b
}

var (
	uEscape   = regexp.MustCompile(`<U([0-9A-Fa-f]{4,6})>`)
	quoted    = regexp.MustCompile(`"([^"]*)"`)
	localeKey = regexp.MustCompile(`^\s*(title|language|territory|lang_name|country_name|abday|day|abmon|mon|alt_mon|ab_alt_mon|yesexpr|noexpr|yesstr|nostr|d_t_fmt|name_fmt|postal_fmt|d_fmt|t_fmt|am_pm|era)\b`)
)

// locales extracts the human-readable strings of glibc's locale sources (native names of
// days, months, languages and countries in their own scripts), decoding <Uxxxx> escapes.
func locales(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.Contains(e.Name(), "_") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		var fields []string
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			for strings.HasSuffix(line, "/") && i+1 < len(lines) {
				i++
				line = line[:len(line)-1] + lines[i]
			}
			if !localeKey.MatchString(line) {
				continue
			}
			var parts []string
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				s := uEscape.ReplaceAllStringFunc(m[1], func(e string) string {
					v, _ := strconv.ParseUint(e[2:len(e)-1], 16, 32)
					if !utf8.ValidRune(rune(v)) {
						return ""
					}
					return string(rune(v))
				})
				if s != "" {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				fields = append(fields, strings.Join(parts, ", "))
			}
		}
		if len(fields) > 0 {
			fmt.Fprintf(&b, "%s: %s\n\n", n, strings.Join(fields, "; "))
		}
	}
	return b.Bytes(), nil
}

// debianPackages are base-system packages whose copyright files go into the corpus; a fixed
// list, so the output does not depend on what else is installed.
var debianPackages = []string{
	"base-files", "bash", "coreutils", "libc6", "tar", "grep", "sed", "gzip", "perl-base", "python3",
	"openssl", "git", "curl", "dpkg", "apt", "util-linux", "findutils", "diffutils", "less",
	"vim-common", "wget", "ca-certificates", "zlib1g", "libsqlite3-0", "gcc-12", "make", "xz-utils",
	"bzip2", "procps", "passwd", "debianutils", "libncursesw6", "readline-common", "mawk", "gnupg",
	"openssh-client", "libxml2", "tzdata", "libicu72",
}

// copyrights concatenates Debian's common licence texts and the copyright files of
// debianPackages; a missing one is an error rather than a different corpus.
func copyrights() ([]byte, error) {
	var paths []string
	licences, err := filepath.Glob("/usr/share/common-licenses/*")
	if err != nil {
		return nil, err
	}
	sort.Strings(licences)
	paths = append(paths, licences...)
	for _, p := range debianPackages {
		paths = append(paths, filepath.Join("/usr/share/doc", p, "copyright"))
	}
	var b bytes.Buffer
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			continue // GPL → GPL-3 and the like: the target is listed too
		}
		if err := appendFile(&b, p, p); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// rng is splitmix64, so the generated text is the same everywhere.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9E3779B97F4A7C15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func (r *rng) pick(list []string) string { return list[r.intn(len(list))] }

// head returns the first n bytes of s, shortened to a character boundary.
func head(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// generated writes strings aimed at the tokenizer's corners.
func generated() []byte {
	var b bytes.Buffer
	r := rng(20261130)
	para := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteString("\n\n") }

	prose := []string{
		"The quick brown fox jumps over the lazy dog.",
		"Съешь же ещё этих мягких французских булок, да выпей чаю.",
		"Ζαφείρι δέξου πάγκαλο, βαθῶν ψυχῆς τὸ σῆμα.",
		"نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق.",
		"ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम।",
		"เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
		"いろはにほへと ちりぬるを わかよたれそ つねならむ うゐのおくやま けふこえて",
		"天地玄黄，宇宙洪荒。日月盈昃，辰宿列张。寒来暑往，秋收冬藏。",
		"키스의 고유조건은 입술끼리 만나야 하고 특별한 기술은 필요치 않다.",
		"עטלף אבק נס דרך מזגן שהתפוצץ כי חם.",
		"Ça me fait peur de fêter noël là, sur cette île bizarroïde où une mère et sa môme essaient de fuir l'été.",
		"Falsches Üben von Xylophonmusik quält jeden größeren Zwerg.",
		"Pchnąć w tę łódź jeża lub ośm skrzyń fig.",
		"Árvíztűrő tükörfúrógép. Příliš žluťoučký kůň úpěl ďábelské ódy.",
		"Կրնամ ապակի ուտել և ինծի անհանգիստ չըներ։ მინას ვჭამ და არა მტკივა.",
		"ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ᛫ᚠᛁᚱᚪ᛫ᚷᛖᚻᚹᛦᛚᚳᚢᛗ ⠊⠀⠉⠁⠝⠀⠑⠁⠞⠀⠛⠇⠁⠎⠎",
		"ཤེལ་སྒོ་ཟ་ནས་ང་ན་གི་མ་རེད། ខ្ញុំអាចញុំកញ្ចក់បាន ដោយគ្មានបញ្ហា ។",
		"Mɔ́ɔ́ ŋú ɗɛ̀. Ọmọ́ ọba kò ní ìyà. Tiếng Việt có dấu: người, được, những.",
	}
	emoji := []string{
		"👍", "👍🏽", "👨‍👩‍👧‍👦", "🇺🇸", "🇯🇵", "🏳️‍🌈", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "❤️", "🤖", "🔥", "👩🏿‍💻", "🧑🏻‍🤝‍🧑🏾",
		"🫠", "🫶🏼", "☺︎", "1️⃣", "#️⃣", "🐈‍⬛", "🙂‍↔️", "🐦‍🔥", "🍋‍🟩",
	}
	for i := 0; i < 1500; i++ {
		p := r.pick(prose)
		switch r.intn(6) {
		case 0:
			p = strings.ReplaceAll(p, " ", " "+r.pick(emoji)+" ")
		case 1:
			p = norm.NFD.String(p) // decomposed accents
		case 2:
			p = strings.ToUpper(p)
		case 3:
			p = strings.Repeat(" ", r.intn(30)) + p + strings.Repeat(" ", r.intn(5))
		case 4:
			p = strings.ReplaceAll(p, " ", strings.Repeat(" ", 1+r.intn(26)))
		}
		para("%s", p)
	}
	contractions := []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE", "'M", "'LL", "'Ll", "'D", "'ſ", "’s", "''s", "'x", "'"}
	for i := 0; i < 200; i++ {
		w := r.pick([]string{"I", "you", "he", "IT", "We", "they", "O", "rock", "n", "DON", "can"})
		para("%s%s %s%s, %s%s.", w, r.pick(contractions), r.pick([]string{"said", "SAID", "'tis"}), r.pick(contractions), head(r.pick(prose), 10), r.pick(contractions))
	}
	digits := func(n int) string {
		var s strings.Builder
		for range n {
			s.WriteByte(byte('0' + r.intn(10)))
		}
		return s.String()
	}
	for i := 0; i < 150; i++ {
		para("%s %s.%s %s,%s,%s 0x%X 1e-%d %s٣٤٥ ௧௨௩ ½ ⅷ %s", digits(1+r.intn(4)), digits(1+r.intn(6)), digits(r.intn(12)+1),
			digits(3), digits(3), digits(3), r.next(), r.intn(300), digits(r.intn(40)), digits(100+r.intn(200)))
	}
	specials := []string{"<|endoftext|>", "<|padding|>", "|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "|||IP_ADDRESS|||",
		"<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>", "<think>", "</think>", "<|endofprompt|>", "<|user|>", "<|assistant|>",
		"<|endoftext", "|endoftext|>", "<||endoftext|>"}
	for i := 0; i < 200; i++ {
		para("%s%s %s%s%s\n%s", head(r.pick(prose), 20), r.pick(specials), r.pick(specials), r.pick(specials), head(r.pick(prose), 12), r.pick(specials))
	}
	ws := []string{" ", "  ", "\t", "\t\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2009", "\u200b", "\v", "\f", "\u0085", "\u2028"}
	for i := 0; i < 200; i++ {
		var s strings.Builder
		for k := 0; k < 12; k++ {
			s.WriteString(r.pick(ws))
			if r.intn(3) == 0 {
				s.WriteString(r.pick([]string{"word", "Ω", "1", "!!", "中", "é", "e\u0301", "ـ", "👍", "x"}))
			}
		}
		para("%s", s.String())
	}
	code := []string{
		"func main() {\n\tfmt.Println(\"hello, 世界\")\n}\n",
		"def f(x):\n    return x**2  # comment\n\n\n    if x >= 10 and x != 3:\n        pass\n",
		"#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }\r\n",
		"SELECT name, COUNT(*) FROM users WHERE id IN (1, 2, 3) GROUP BY name;\n",
		"const re = /^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@example\\.com$/i;\n",
		"<div class=\"x\">&nbsp;&lt;b&gt;</div>\n<!-- comment -->\n",
		"    \t  mixed indentation\n\t    here\n",
		"x=>x+1; a&&b||c; i++; j--; k<<=2; m>>>=1; p?.q ?? r;\n",
	}
	for i := 0; i < 150; i++ {
		para("%s", r.pick(code))
	}
	for i := 0; i < 40; i++ {
		var s strings.Builder
		unit := r.pick([]string{"a", "ab", "xyz", "Ж", "中文", "9", "-", "é", "e\u0301", "A1b2", "ـ", "ñ"})
		for s.Len() < 200+r.intn(3000) {
			s.WriteString(unit)
		}
		para("%s", s.String())
	}
	// Characters the tables disagree on: assigned in Unicode 15.0, 15.1 and 16.0, and marks
	// whose combining class HF's normalizer does not know.
	newer := []string{"\U0001E030", "\U00011F04", "\U0001E4D0", "\U00031350", "\U0002EBF0", "\U00010D50", "\U00010D70",
		"\U000105C0", "\U00011390", "\u1C89", "\u1C8A", "\uA7CB", "\U00011BC0", "\U00016D43", "\u0897", "\u1B4E", "\U000116D0",
		"\u07FD", "\u08D3", "\u1ABF", "\U00011935\U00011930", "\U00011938", "\u1DF9", "\U0001E08F", "\u0D3B", "\uA82C"}
	for i := 0; i < 200; i++ {
		para("a%sb%s\u0301%s c%s\u0334 %s%s", r.pick(newer), r.pick(newer), r.pick(newer), r.pick(newer), head(r.pick(prose), 8), r.pick(newer))
	}
	return b.Bytes()
}
