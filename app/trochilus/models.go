package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/library"
)

// resolveModel turns what the user gave after -m into a file: a path that exists as it is, or
// else a name in the models folder (where `pull` puts files): the file name itself, with
// ".gguf" added, or the one file whose name starts with it (case ignored), so that
// `trochilus chat -m OLMoE-1B-7B-0125-Instruct-Q4_K_M` finds a pulled model.
func resolveModel(name string) (string, error) {
	if _, err := os.Stat(name); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return name, nil // there, or there but unreadable: the loader reports why
	}
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("%s: no such file", name)
	}
	dirs, err := library.UserDirs()
	if err != nil {
		return "", fmt.Errorf("%s: no such file, and the models folder: %w", name, err)
	}
	found, err := scanModelsFolder(dirs.Models)
	if err != nil {
		return "", fmt.Errorf("%s: no such file, and the %w", name, err)
	}
	exact, matches := matchModel(found.models, name)
	if exact != "" {
		return filepath.Join(dirs.Models, exact), nil
	}
	switch len(matches) {
	case 1:
		return filepath.Join(dirs.Models, matches[0]), nil
	case 0:
		return "", fmt.Errorf("%s: no such file, nor a model of that name in %s (trochilus ls lists them)", name, dirs.Models)
	default:
		return "", fmt.Errorf("%s: no such file, and it names %d models in %s: %s", name, len(matches), dirs.Models, strings.Join(matches, ", "))
	}
}

// matchModel finds arg among the file names of the models folder: the name itself, or with
// ".gguf" added (exact); failing that, the names that start with it, case ignored (prefixed).
// -m and rm find models by this one rule.
func matchModel(names []string, arg string) (exact string, prefixed []string) {
	for _, n := range names {
		if n == arg || n == arg+library.Extension {
			return n, nil
		}
		if strings.HasPrefix(strings.ToLower(n), strings.ToLower(arg)) {
			prefixed = append(prefixed, n)
		}
	}
	return "", prefixed
}
