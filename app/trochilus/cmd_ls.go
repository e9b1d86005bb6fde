package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runLs lists the models the app knows: those in its models folder, unfinished downloads,
// and the files opened from elsewhere that it remembers.
func runLs(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	if err := cl.parse(); err != nil {
		return err
	}
	dirs, found, err := readModelsFolder()
	if err != nil {
		return err
	}
	paths, err := dirs.ModelFiles()
	if err != nil {
		// A broken list of opened files must not hide the models folder.
		fmt.Fprintf(stderr, "trochilus ls: %v\n", err)
		paths = nil
		for _, name := range found.models {
			paths = append(paths, filepath.Join(dirs.Models, name))
		}
	}

	var prof *machine.Profile
	if mem, err := machine.ReadMemory(ctx); err == nil {
		prof = &machine.Profile{RAMTotal: mem.Total, RAMAvailable: mem.Available, RAMCgroup: mem.Cgroup}
	} else {
		fmt.Fprintf(stderr, "trochilus ls: fit unknown: %v\n", err)
	}
	var rows [][]string
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows = append(rows, lsModelRow(dirs.Models, p, prof))
	}
	for _, name := range found.partial {
		rows = append(rows, lsPartialRow(filepath.Join(dirs.Models, name)))
	}
	// The models folder's files first, by name; those opened from elsewhere (named by their
	// paths) after them.
	elsewhere := func(r []string) bool { return strings.ContainsAny(r[0], `/\`) }
	slices.SortFunc(rows, func(a, b []string) int {
		return cmp.Or(compareBool(elsewhere(a), elsewhere(b)), strings.Compare(a[0], b[0]))
	})

	fmt.Fprintf(stdout, "models folder: %s\n", dirs.Models)
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no models yet: 'trochilus pull REPO[:FILE]' downloads one")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tARCH\tTYPES\tCONTEXT\tFIT")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// lsModelRow is a model's line: a file in the models folder by its name, one opened from
// elsewhere by its path. A file that is not a usable GGUF is listed with why.
func lsModelRow(models, p string, prof *machine.Profile) []string {
	name := p
	if filepath.Dir(p) == models {
		name = filepath.Base(p)
	}
	size := "-"
	if fi, err := os.Stat(p); err == nil {
		size = units.Bytes(uint64(fi.Size()))
	}
	m, err := library.Describe(p)
	if err != nil {
		// The row names the file already.
		msg := strings.Replace(strings.TrimPrefix(err.Error(), "library: "), p+": ", "", 1)
		return []string{name, size, "-", "-", "-", "error: " + msg}
	}
	fit, ctx := "unknown", "-"
	if prof != nil {
		pl := m.PlanFor(*prof, 0) // at the context a load opens by default
		fit = lsFit(pl)
		if pl.Placement != engine.Refused {
			ctx = strconv.Itoa(pl.Context)
		}
	}
	types := make([]string, len(m.Types))
	for i, s := range m.Types { // by share of the bytes, largest first
		types[i] = s.Type.String()
	}
	return []string{name, size, m.Arch, strings.Join(types, ", "), ctx, fit}
}

// lsFit is the plan's verdict, with the share of the experts a streamed load keeps in RAM:
// the number that tells a fast load from a slow one.
func lsFit(p engine.Plan) string {
	if p.Placement != engine.ExpertsStreamed {
		return p.Placement.String()
	}
	return fmt.Sprintf("%s, %d of %d experts in RAM", p.Placement, min(p.UnitsInRAM, p.Units), p.Units)
}

// lsPartialRow is an unfinished download's line, named by the file it will be, with the share
// received when the download learnt the file's size.
func lsPartialRow(final string) []string {
	got, total := download.PartialProgress(final)
	size, state := units.Bytes(uint64(got)), "unfinished download"
	if total > 0 {
		size += " of " + units.Bytes(uint64(total))
		state = fmt.Sprintf("unfinished download, %.0f%%", 100*float64(got)/float64(total))
	}
	return []string{filepath.Base(final), size, "-", "-", "-", state + " ('trochilus pull' it again to resume)"}
}

// folderModels is what a models folder holds, by file name.
type folderModels struct {
	models  []string // *.gguf files
	partial []string // final names of unfinished downloads (whose partial file is there)
}

// readModelsFolder finds the app's models folder, making it when missing, and reads it.
func readModelsFolder() (library.Dirs, folderModels, error) {
	dirs, err := library.UserDirs()
	if err != nil {
		return library.Dirs{}, folderModels{}, err
	}
	found, err := scanModelsFolder(dirs.Models)
	return dirs, found, err
}

// scanModelsFolder reads the models folder. A missing folder holds nothing.
func scanModelsFolder(dir string) (folderModels, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return folderModels{}, nil
	}
	if err != nil {
		return folderModels{}, fmt.Errorf("models folder: %w", err)
	}
	var fm folderModels
	isModel := func(name string) bool { return strings.EqualFold(filepath.Ext(name), library.Extension) }
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if isModel(name) {
			fm.models = append(fm.models, name)
			continue
		}
		// A partial file is named after the file it will be (download.PartialPath): try the
		// name without its last extension.
		if final := strings.TrimSuffix(name, filepath.Ext(name)); isModel(final) && download.PartialPath(final) == name {
			fm.partial = append(fm.partial, final)
		}
	}
	return fm, nil
}

// names returns every model name the folder holds something of, sorted, once each.
func (fm folderModels) names() []string {
	all := slices.Concat(fm.models, fm.partial)
	slices.Sort(all)
	return slices.Compact(all)
}
