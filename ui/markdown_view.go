package ui

import (
	"cmp"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// markdownView shows Markdown (a model's answer) as a column of blocks: prose as rich text,
// each code block in a monospace box with a Copy button of its own, each table as aligned
// columns. SetText keeps the widgets of the blocks that did not change, so that an answer
// growing as it streams redraws its last block only.
type markdownView struct {
	box    *fyne.Container // the blocks, top to bottom
	blocks []*mdBlock
	md     goldmark.Markdown
	keys   *keyRouter
	copy   func(string) // puts text on the clipboard
	text   string       // the Markdown shown
	built  int          // blocks made since the view was (kept ones are not made again)
}

// mdBlock is one top-level block as shown.
type mdBlock struct {
	kind string // "prose", "code" or "table"
	key  string // the block's source and place: equal keys show the same
	obj  fyne.CanvasObject

	rich    *widget.RichText // prose
	mono    *widget.Label    // code and tables
	code    string           // a code block's code, which Copy copies
	copyBtn *keyButton       // a code block's
}

func newMarkdownView(keys *keyRouter, copy func(string)) *markdownView {
	return &markdownView{
		box:  container.NewVBox(),
		md:   goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)),
		keys: keys, copy: copy,
	}
}

// SetText shows src, remaking only the blocks whose source changed.
func (v *markdownView) SetText(src string) {
	if src == v.text && len(v.blocks) > 0 {
		return
	}
	v.text = src
	b := []byte(src)
	doc := v.md.Parser().Parse(text.NewReader(b))
	var blocks []*mdBlock
	i := 0
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		kind := "prose"
		switch n.Kind() {
		case ast.KindFencedCodeBlock, ast.KindCodeBlock:
			kind = "code"
		case east.KindTable:
			kind = "table"
		}
		key := fmt.Sprintf("%s/%s@%d:%s", kind, n.Kind(), i, sourceOf(b, n))
		if l, ok := n.(*ast.List); ok {
			key = fmt.Sprintf("%s %c%d", key, l.Marker, l.Start)
		}
		if i < len(v.blocks) && v.blocks[i].key == key {
			blocks = append(blocks, v.blocks[i])
		} else if i < len(v.blocks) && v.blocks[i].kind == kind {
			// The block is still growing (the last one of a streaming answer): change its
			// widgets in place rather than make new ones.
			old := v.blocks[i]
			v.update(old, b, n)
			old.key = key
			blocks = append(blocks, old)
		} else {
			blk := &mdBlock{kind: kind, key: key}
			v.make(blk, b, n)
			v.built++
			blocks = append(blocks, blk)
		}
		i++
	}
	v.blocks = blocks
	objs := make([]fyne.CanvasObject, len(blocks))
	for i, blk := range blocks {
		objs[i] = blk.obj
	}
	v.box.Objects = objs
	v.box.Refresh()
}

// make builds the widgets of a new block.
func (v *markdownView) make(blk *mdBlock, src []byte, n ast.Node) {
	switch blk.kind {
	case "prose":
		blk.rich = newProse(proseSegments(src, n))
		blk.obj = blk.rich
	case "code":
		blk.code = codeOf(src, n)
		blk.mono = monoLabel(blk.code)
		lang := ""
		if f, ok := n.(*ast.FencedCodeBlock); ok {
			lang = string(f.Language(src))
		}
		name := widget.NewLabelWithStyle(cmp.Or(lang, "code"), fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
		name.SizeName = theme.SizeNameCaptionText
		blk.copyBtn = newKeyButton(v.keys, "Copy", theme.ContentCopyIcon(), nil)
		blk.copyBtn.OnTapped = func() {
			v.copy(blk.code)
			blk.copyBtn.SetText("Copied")
		}
		blk.copyBtn.Importance = widget.LowImportance
		head := container.NewBorder(nil, nil, name, blk.copyBtn)
		blk.obj = monoBox(container.NewBorder(head, nil, nil, nil, container.NewHScroll(blk.mono)))
	case "table":
		blk.mono = monoLabel(tableText(src, n.(*east.Table)))
		blk.obj = monoBox(container.NewHScroll(blk.mono))
	}
}

// update shows a changed block of the same kind in its widgets.
func (v *markdownView) update(blk *mdBlock, src []byte, n ast.Node) {
	switch blk.kind {
	case "prose":
		blk.rich.Segments = proseSegments(src, n)
		blk.rich.Refresh()
	case "code":
		blk.code = codeOf(src, n)
		blk.mono.SetText(shownCode(blk.code))
	case "table":
		blk.mono.SetText(tableText(src, n.(*east.Table)))
	}
}

// codeOf returns a code block's code, without the line end after its last line.
func codeOf(src []byte, n ast.Node) string {
	return strings.TrimSuffix(linesText(src, n), "\n")
}

// shownCode is code as drawn: tabs as four spaces (Fyne's labels draw a tab as one).
func shownCode(code string) string { return strings.ReplaceAll(code, "\t", "    ") }

func monoLabel(s string) *widget.Label {
	return widget.NewLabelWithStyle(shownCode(s), fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
}

// monoBox sets a code block or table on a panel of the input colour, so it stands out of the
// prose around it.
func monoBox(content fyne.CanvasObject) fyne.CanvasObject {
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	return container.NewStack(bg, content)
}

// sourceOf returns the source a top-level block spans, from the first line of its first leaf
// block to the last of its last: a block whose span is unchanged shows the same.
func sourceOf(src []byte, n ast.Node) string {
	start, stop := -1, -1
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || c.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		lines := c.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			if start < 0 || seg.Start < start {
				start = seg.Start
			}
			stop = max(stop, seg.Stop)
		}
		if h, ok := c.(*ast.HTMLBlock); ok && h.HasClosure() {
			stop = max(stop, h.ClosureLine.Stop)
		}
		return ast.WalkContinue, nil
	})
	if start < 0 || stop > len(src) || start > stop {
		return ""
	}
	return string(src[start:stop])
}
