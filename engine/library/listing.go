package library

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Listed is one file of the library's list: where it is, what the file system and its header
// say about it, or why it cannot be described.
type Listed struct {
	Path    string
	Opened  bool      // added with AddOpened rather than found in the models folder
	Link    bool      // a symbolic link (followed: Size and Model are its target's)
	Size    int64     // bytes, from the file system, so that an undescribable file has one too
	ModTime time.Time // when the file (a link's target) last changed
	Model   Model     // the header's description; the zero Model when Err is set
	Err     error     // the file is not a model the app can describe
}

// List returns the known model files (ModelFiles), each described, in ModelFiles' order. It
// stops early, returning ctx's error, when ctx is cancelled: describing reads every header.
func (d Dirs) List(ctx context.Context) ([]Listed, error) {
	paths, err := d.ModelFiles()
	if err != nil {
		return nil, err
	}
	opened, _ := d.Opened() // ModelFiles read it already: an error would have been returned
	out := make([]Listed, 0, len(paths))
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := Listed{Path: p, Opened: slices.Contains(opened, p) && !d.InModels(p)}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			l.Link = true
		}
		if fi, err := os.Stat(p); err == nil {
			l.Size, l.ModTime = fi.Size(), fi.ModTime()
		}
		l.Model, l.Err = Describe(p)
		out = append(out, l)
	}
	return out, nil
}

// InModels reports whether path names an entry of the models folder itself (not of a folder
// inside it, not a file a link there points to).
func (d Dirs) InModels(path string) bool {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return false
	}
	models, err := filepath.Abs(d.Models)
	return err == nil && dir == models
}

// FileName returns the file's name, which is what tells two quantizations of one model apart
// in a list (their general.name is usually the same).
func (l *Listed) FileName() string { return filepath.Base(l.Path) }

// Quant returns the weight mix's name ("Q4_K_M"), or "" when the file could not be described.
func (l *Listed) Quant() string { return l.Model.Quant }

// SameName reports whether the header's model name says no more than the file's name does
// (the stem, in any case), so that a list need not show both.
func (l *Listed) SameName() bool {
	stem := strings.TrimSuffix(l.FileName(), filepath.Ext(l.Path))
	return l.Model.Name == "" || strings.EqualFold(l.Model.Name, stem)
}

// Matches reports whether every word of filter appears, in any case, in the file's name, the
// model's name, its weight mix or its architecture: the list's filter box. An empty filter
// matches everything.
func (l *Listed) Matches(filter string) bool {
	hay := strings.ToLower(strings.Join([]string{l.FileName(), l.Model.Name, l.Quant(), l.Model.Arch}, "\x00"))
	for _, w := range strings.Fields(strings.ToLower(filter)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// Order is how the list is sorted.
type Order int

const (
	ByName   Order = iota // by file name, ignoring case
	BySize                // largest first
	ByNewest              // most recently changed first
)

// Orders lists the orders with their names, for a choice in the window.
func Orders() []Order { return []Order{ByName, BySize, ByNewest} }

func (o Order) String() string {
	switch o {
	case ByName:
		return "Name"
	case BySize:
		return "Size"
	case ByNewest:
		return "Newest"
	}
	return fmt.Sprintf("order %d", int(o))
}

// Sort orders ls by o; ties (and an unknown order) fall back to the file name, then the path,
// so that the list never reshuffles between refreshes.
func Sort(ls []Listed, o Order) {
	byName := func(a, b *Listed) int {
		if c := strings.Compare(strings.ToLower(a.FileName()), strings.ToLower(b.FileName())); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	}
	slices.SortStableFunc(ls, func(a, b Listed) int {
		switch o {
		case BySize:
			if a.Size != b.Size {
				return cmpDesc(a.Size, b.Size)
			}
		case ByNewest:
			if c := b.ModTime.Compare(a.ModTime); c != 0 {
				return c
			}
		}
		return byName(&a, &b)
	})
}

func cmpDesc(a, b int64) int {
	if a > b {
		return -1
	}
	return 1
}

// Delete removes a model file of the models folder: a link there is removed, never the file it
// points to; the file is forgotten from the opened list too. A file elsewhere is refused (the
// app only forgets those: RemoveOpened), and so is a partial download's file (download.Discard
// is its owner).
func (d Dirs) Delete(path string) error {
	if !d.InModels(path) {
		return fmt.Errorf("library: deleting %s: only files in the models folder %s are deleted; this one can only be removed from the list", path, d.Models)
	}
	if !strings.EqualFold(filepath.Ext(path), Extension) {
		return fmt.Errorf("library: deleting %s: not a %s file", path, Extension)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("library: deleting %s: %w", path, err)
	}
	if opened, err := d.Opened(); err == nil && slices.Contains(opened, path) {
		return d.RemoveOpened(path)
	}
	return nil
}

// FolderCommand returns the program and arguments that show path in the system's file
// manager on goos: Explorer and Finder open its folder with the file selected, elsewhere
// xdg-open opens the folder. Explorer gets "/select," and the path as two arguments: Go quotes
// an argument with a space whole, and Explorer does not read a quoted "/select,C:\a b\m.gguf"
// (it opens Documents instead), while it does read /select, "C:\a b\m.gguf".
func FolderCommand(goos, path string) (name string, args []string) {
	switch goos {
	case "windows":
		return "explorer", []string{"/select,", path}
	case "darwin":
		return "open", []string{"-R", path}
	}
	return "xdg-open", []string{filepath.Dir(path)}
}
