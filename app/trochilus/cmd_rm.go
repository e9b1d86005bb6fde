package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// runRm deletes models from the app's models folder, with what unfinished downloads of them
// left.
func runRm(ctx context.Context, cl *commandLine, stdout, stderr io.Writer) error {
	if err := cl.parse(); err != nil {
		return err
	}
	dirs, found, err := readModelsFolder()
	if err != nil {
		return err
	}
	// Every name is resolved before anything is deleted, so a typo in the second name does not
	// leave the first deleted and the command failed.
	var names []string
	for _, arg := range cl.Args() {
		name, err := rmTarget(dirs.Models, found.names(), arg)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rmModel(filepath.Join(dirs.Models, name), stdout); err != nil {
			return err
		}
	}
	return nil
}

// rmTarget finds the model arg names among the folder's by matchModel, as -m finds a pulled
// model. A path is refused, so that rm deletes nothing outside the models
// folder.
func rmTarget(dir string, names []string, arg string) (string, error) {
	if arg == "" || arg == "." || arg == ".." || strings.ContainsAny(arg, `/\`) ||
		filepath.Base(arg) != arg || filepath.IsAbs(arg) || filepath.VolumeName(arg) != "" {
		return "", fmt.Errorf("%w: %q is not a file name in the models folder %s: rm deletes only from there", errUsage, arg, dir)
	}
	exact, prefixed := matchModel(names, arg)
	if exact != "" {
		return exact, nil
	}
	switch len(prefixed) {
	case 0:
		return "", fmt.Errorf("no model %q in %s ('trochilus ls' lists them)", arg, dir)
	case 1:
		return prefixed[0], nil
	}
	return "", fmt.Errorf("%w: %q is the start of %d models in %s; name one:\n  %s",
		errUsage, arg, len(prefixed), dir, strings.Join(prefixed, "\n  "))
}

// rmModel deletes the model file at p and any unfinished download of it, saying what
// went.
func rmModel(p string, stdout io.Writer) error {
	name := filepath.Base(p)
	if fi, err := os.Lstat(p); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a folder, not a model: not deleted", p)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("deleting %s: %w", p, err)
		}
		fmt.Fprintf(stdout, "deleted %s (%s)\n", name, units.Bytes(uint64(fi.Size())))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", p, err)
	}
	kept := download.Partial(p)
	if err := download.Discard(p); err != nil {
		return fmt.Errorf("deleting the unfinished download of %s: %w", name, err)
	}
	if kept > 0 {
		fmt.Fprintf(stdout, "deleted the unfinished download of %s (%s)\n", name, units.Bytes(uint64(kept)))
	}
	return nil
}
