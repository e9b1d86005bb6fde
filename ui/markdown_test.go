package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// segmentsText returns a prose block's text, styled runs marked: **bold**, _italic_, `code`,
// # heading, > quote, and each row on a line of its own.
func segmentsText(segs []widget.RichTextSegment) string {
	var b strings.Builder
	for _, s := range segs {
		switch s := s.(type) {
		case *widget.TextSegment:
			t := s.Text
			st := s.Style.TextStyle
			switch {
			case s.Style == widget.RichTextStyleHeading:
				t = "# " + t
			case s.Style == widget.RichTextStyleSubHeading:
				t = "## " + t
			case s.Style == widget.RichTextStyleBlockquote:
				t = "> " + t
			case st.Monospace:
				t = "`" + t + "`"
			case st.Bold && st.Italic:
				t = "***" + t + "***"
			case st.Bold:
				t = "**" + t + "**"
			case st.Italic:
				t = "_" + t + "_"
			}
			b.WriteString(t)
			if !s.Inline() {
				b.WriteByte('\n')
			}
		case *widget.SeparatorSegment:
			b.WriteString("---\n")
		default:
			b.WriteString("?unexpected segment?")
		}
	}
	return b.String()
}

func newTestMarkdown(t *testing.T) (*markdownView, *[]string) {
	t.Helper()
	test.NewTempApp(t)
	var copied []string
	return newMarkdownView(&keyRouter{}, func(s string) { copied = append(copied, s) }), &copied
}

// An answer's Markdown: emphasis, inline code, headings, lists (numbered from where they start,
// nested), links and images as text (nothing opens or loads), raw HTML kept, quotes, rules;
// code blocks apart in monospace with the code exactly; tables in aligned columns.
func TestMarkdownRendering(t *testing.T) {
	v, _ := newTestMarkdown(t)
	v.SetText("# Birds\n\n## Small ones\n\n### Smallest\n\n" +
		"They are **small**, *fast* and ***both***; call `hover()`.\nSoft break.  \nHard break.\n\n" +
		"3. three\n4. four with a [link](https://example.com/a) and <https://example.org>\n   - nested\n\n" +
		"> quoted *text*\n\n" +
		"![a bird](https://example.com/b.png) <think>kept</think> ~~gone~~\n\n---\n\n" +
		"```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n\n" +
		"| Bird | Beats/s |\n|:--|--:|\n| Ruby-throated | 53 |\n| Bee **hummingbird** | 80 |\n\n" +
		"    indented code\n")
	var kinds []string
	for _, b := range v.blocks {
		kinds = append(kinds, b.kind)
	}
	if got := strings.Join(kinds, " "); got != "prose prose prose prose prose prose prose prose code table code" {
		t.Fatalf("blocks %s", got)
	}
	want := []string{
		"# Birds\n",
		"## Small ones\n",
		"**Smallest**\n",
		"They are **small**, _fast_ and ***both***; call `hover()`. Soft break.\nHard break.",
		"3.  three\n4.  four with a link (https://example.com/a) and https://example.org\n      ◦  nested",
		"> quoted text\n",
		"[image: a bird https://example.com/b.png] <think>kept</think> ~~gone~~",
		"---\n",
	}
	for i, w := range want {
		if got := segmentsText(v.blocks[i].rich.Segments); got != w {
			t.Errorf("block %d:\n%q\nwant\n%q", i, got, w)
		}
	}
	if code := v.blocks[8]; code.code != "func main() {\n\tprintln(\"hi\")\n}" || code.mono.Text != "func main() {\n    println(\"hi\")\n}" || !code.mono.TextStyle.Monospace {
		t.Errorf("code block %q shown %q", code.code, code.mono.Text)
	}
	table := "Bird            │ Beats/s\n" +
		"────────────────┼────────\n" +
		"Ruby-throated   │      53\n" +
		"Bee hummingbird │      80"
	if got := v.blocks[9].mono.Text; got != table || !v.blocks[9].mono.TextStyle.Monospace {
		t.Errorf("table\n%s\nwant\n%s", got, table)
	}
	if v.blocks[10].code != "indented code" {
		t.Errorf("indented code %q", v.blocks[10].code)
	}
}

// Each code block's Copy button copies that block's code, exactly as written.
func TestCodeBlockCopy(t *testing.T) {
	v, copied := newTestMarkdown(t)
	v.SetText("Two blocks:\n\n```python\nprint('a')\n```\n\nand\n\n```\n\tx := 1\n  y\n```")
	first, second := v.blocks[1], v.blocks[3]
	test.Tap(second.copyBtn)
	test.Tap(first.copyBtn)
	if len(*copied) != 2 || (*copied)[0] != "\tx := 1\n  y" || (*copied)[1] != "print('a')" || first.copyBtn.Text != "Copied" {
		t.Fatalf("copied %q", *copied)
	}
	// Through the chat: the app's clipboard.
	be := &fakeBackend{prof: bigMachine(), answer: []string{"```sh\nls -l\n```"}}
	u := newLoadedUI(t, be)
	say(t, u, "List files")
	test.Tap(u.chat.views[1].body.blocks[0].copyBtn)
	if got := fyne.CurrentApp().Clipboard().Content(); got != "ls -l" {
		t.Fatalf("clipboard %q", got)
	}
}

// As an answer grows, the blocks before the last are kept (their widgets are not made again),
// and the last one changes in place while its kind stays.
func TestMarkdownKeepsFinishedBlocks(t *testing.T) {
	v, _ := newTestMarkdown(t)
	src := "First paragraph, done.\n\n```go\nx := 1\ny := 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nLast words here."
	var kept []fyne.CanvasObject
	for n := 1; n <= len(src); n++ {
		v.SetText(src[:n])
		// Every block but the last is finished: it must be the very object shown before.
		for i := 0; i < len(v.blocks)-1 && i < len(kept); i++ {
			if v.blocks[i].obj != kept[i] {
				t.Fatalf("at %d bytes block %d (%s) was made again", n, i, v.blocks[i].kind)
			}
		}
		kept = kept[:0]
		for _, b := range v.blocks {
			kept = append(kept, b.obj)
		}
	}
	if len(v.blocks) != 4 || v.blocks[3].rich == nil || segmentsText(v.blocks[3].rich.Segments) != "Last words here." {
		t.Fatalf("%d blocks at the end", len(v.blocks))
	}
	// One make per block, and a few more where a block changed kind as it came (a table is a
	// paragraph until its second line).
	if v.built > 8 {
		t.Fatalf("%d blocks made for 4", v.built)
	}
	t.Logf("%d bytes streamed, %d blocks made", len(src), v.built)
}
