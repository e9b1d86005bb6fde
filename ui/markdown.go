package ui

import (
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// The Markdown of an answer becomes Fyne rich text here, block by block. Fyne's own
// NewRichTextFromMarkdown drops raw HTML (a model's "<think>" block would vanish), fetches the
// images a model names and cannot give a code block a button, so the app walks goldmark's tree
// (the parser Fyne itself uses) on its own: prose to rich text, links and images as text (an
// answer never opens or loads an address), code blocks and tables apart (markdown_view.go).

// mdProse renders the prose of one top-level block (a paragraph, heading, list, quote, rule or
// HTML block) of src as rich-text segments.
type mdProse struct {
	src  []byte
	segs []widget.RichTextSegment
}

// linkStyle is a link's address after its text, and an image's stand-in: dimmed.
func linkStyle() widget.RichTextStyle {
	return widget.RichTextStyle{ColorName: theme.ColorNamePlaceHolder, Inline: true, SizeName: theme.SizeNameText}
}

func proseSegments(src []byte, n ast.Node) []widget.RichTextSegment {
	p := &mdProse{src: src}
	p.block(n, "")
	// A trailing line end would add nothing but an empty row.
	for len(p.segs) > 0 {
		if t, ok := p.segs[len(p.segs)-1].(*widget.TextSegment); ok && t.Text == "" {
			p.segs = p.segs[:len(p.segs)-1]
			continue
		}
		break
	}
	return p.segs
}

// endLine ends the row of text being written.
func (p *mdProse) endLine() {
	p.segs = append(p.segs, &widget.TextSegment{Style: widget.RichTextStyleParagraph})
}

// text appends inline text in style, merged with the segment before when that has the same
// style (a paragraph is then a few segments, not one a word).
func (p *mdProse) text(s string, style widget.RichTextStyle) {
	if s == "" {
		return
	}
	if n := len(p.segs); n > 0 {
		if last, ok := p.segs[n-1].(*widget.TextSegment); ok && last.Style == style && style.Inline {
			last.Text += s
			return
		}
	}
	p.segs = append(p.segs, &widget.TextSegment{Style: style, Text: s})
}

// block writes block node n, each of its rows starting with indent (a list item's depth).
func (p *mdProse) block(n ast.Node, indent string) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		p.text(indent, widget.RichTextStyleInline)
		p.inlines(n, widget.RichTextStyleInline)
		p.endLine()
	case *ast.Heading:
		style := widget.RichTextStyleHeading
		switch {
		case n.Level == 2:
			style = widget.RichTextStyleSubHeading
		case n.Level > 2:
			style = widget.RichTextStyleParagraph
			style.TextStyle.Bold = true
		}
		p.segs = append(p.segs, &widget.TextSegment{Style: style, Text: plainText(p.src, n)})
	case *ast.List:
		p.list(n, indent)
	case *ast.Blockquote:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if c.Kind() == ast.KindParagraph {
				p.segs = append(p.segs, &widget.TextSegment{Style: widget.RichTextStyleBlockquote, Text: plainText(p.src, c)})
			} else {
				p.block(c, indent)
			}
		}
	case *ast.ThematicBreak:
		p.segs = append(p.segs, &widget.SeparatorSegment{})
	case *ast.HTMLBlock:
		// Shown as written: what a model puts in tags is still part of its answer.
		lines := linesText(p.src, n)
		if n.HasClosure() {
			lines += string(n.ClosureLine.Value(p.src))
		}
		p.plainLines(strings.TrimRight(lines, "\n"), indent, widget.RichTextStyleInline)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		// Only inside a list (a top-level one gets a box of its own, with a Copy button).
		code := strings.ReplaceAll(strings.TrimRight(linesText(p.src, n), "\n"), "\t", "    ")
		p.plainLines(code, indent+"    ", widget.RichTextStyleCodeInline)
	default:
		if n.Type() == ast.TypeBlock {
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				p.block(c, indent)
			}
		}
	}
}

// plainLines writes text as rows of style, each after indent.
func (p *mdProse) plainLines(text, indent string, style widget.RichTextStyle) {
	for _, line := range strings.Split(text, "\n") {
		p.text(indent, widget.RichTextStyleInline)
		p.text(line, style)
		p.endLine()
	}
}

// list writes a list's items, each with its bullet or number, nested lists indented further.
func (p *mdProse) list(n *ast.List, indent string) {
	num := n.Start
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		bullet := "•  "
		if n.IsOrdered() {
			bullet = strconv.Itoa(num) + ".  "
			num++
		} else if indent != "" {
			bullet = "◦  "
		}
		first := true
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			switch c.Kind() {
			case ast.KindParagraph, ast.KindTextBlock:
				lead := indent + "      "
				if first {
					lead = indent + bullet
				}
				p.text(lead, widget.RichTextStyleInline)
				p.inlines(c, widget.RichTextStyleInline)
				p.endLine()
			default:
				if first { // an item that starts with a list or code: its bullet on a row alone
					p.text(indent+bullet, widget.RichTextStyleInline)
					p.endLine()
				}
				p.block(c, indent+"      ")
			}
			first = false
		}
		if first { // an empty item
			p.text(indent+bullet, widget.RichTextStyleInline)
			p.endLine()
		}
	}
}

// inlines writes n's inline children in style, emphasis and code adding to it.
func (p *mdProse) inlines(n ast.Node, style widget.RichTextStyle) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			p.text(string(c.Value(p.src)), style)
			switch {
			case c.HardLineBreak():
				p.endLine()
			case c.SoftLineBreak():
				p.text(" ", style)
			}
		case *ast.String:
			p.text(string(c.Value), style)
		case *ast.CodeSpan:
			s := style
			s.TextStyle.Monospace = true
			p.text(plainText(p.src, c), s)
		case *ast.Emphasis:
			s := style
			if c.Level >= 2 {
				s.TextStyle.Bold = true
			} else {
				s.TextStyle.Italic = true
			}
			p.inlines(c, s)
		case *ast.Link:
			p.inlines(c, style)
			if dest := string(c.Destination); dest != "" && dest != plainText(p.src, c) {
				p.text(" ("+dest+")", linkStyle())
			}
		case *ast.AutoLink:
			p.text(string(c.Label(p.src)), style)
		case *ast.Image:
			alt := plainText(p.src, c)
			p.text("[image: "+strings.TrimSpace(alt+" "+string(c.Destination))+"]", linkStyle())
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				p.text(string(seg.Value(p.src)), style)
			}
		case *east.Strikethrough:
			// Fyne draws no struck-through text: the markers stay, so the meaning does.
			p.text("~~", style)
			p.inlines(c, style)
			p.text("~~", style)
		default:
			p.inlines(c, style)
		}
	}
}

// plainText returns the text of n's inline content, without markup.
func plainText(src []byte, n ast.Node) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				seg := c.Segments.At(i)
				b.Write(seg.Value(src))
			}
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// linesText returns the source lines of block n as they are (a code block's code).
func linesText(src []byte, n ast.Node) string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// tableText lays a table out in aligned columns of plain text, for a monospace font: the
// header, a rule, the rows.
func tableText(src []byte, t *east.Table) string {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			row = append(row, plainText(src, c))
		}
		rows = append(rows, row)
	}
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	for ri, row := range rows {
		for i, w := range widths {
			cell := ""
			if i < len(row) {
				cell = row[i]
			}
			align := east.AlignNone
			if i < len(t.Alignments) {
				align = t.Alignments[i]
			}
			if i > 0 {
				b.WriteString(" │ ")
			}
			b.WriteString(pad(cell, w, align))
		}
		b.WriteByte('\n')
		if ri == 0 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			b.WriteByte('\n')
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// pad widens s to w characters as align says.
func pad(s string, w int, align east.Alignment) string {
	gap := w - len([]rune(s))
	switch align {
	case east.AlignRight:
		return strings.Repeat(" ", gap) + s
	case east.AlignCenter:
		return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
	}
	return s + strings.Repeat(" ", gap)
}

// newProse makes the rich text of a prose block, wrapped at words.
func newProse(segs []widget.RichTextSegment) *widget.RichText {
	rt := widget.NewRichText(segs...)
	rt.Wrapping = fyne.TextWrapWord
	return rt
}
