package library

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Dirs are the app's folders in the user's data directory.
type Dirs struct {
	Data   string // the app's data folder, holding the others
	Models string // GGUF files; downloads land here
	Chats  string // saved conversations
}

// HomeEnv names an environment variable that, when set, replaces the app's data folder (for a
// portable install, or tests).
const HomeEnv = "TROCHILUS_HOME"

// UserDirs returns the app's folders for this user, creating them if needed: under $TROCHILUS_HOME
// when set, otherwise $XDG_DATA_HOME/trochilus (~/.local/share/trochilus) on Linux and other
// Unix systems, ~/Library/Application Support/Trochilus on macOS and %LocalAppData%\Trochilus
// on Windows (local, not roaming: models are gigabytes).
func UserDirs() (Dirs, error) {
	root, err := dataRoot()
	if err != nil {
		return Dirs{}, fmt.Errorf("library: finding the data folder: %w", err)
	}
	d := DirsAt(root)
	for _, dir := range []string{d.Data, d.Models, d.Chats} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Dirs{}, fmt.Errorf("library: creating the data folder: %w", err)
		}
	}
	return d, nil
}

// DirsAt returns the folders under root, without creating them.
func DirsAt(root string) Dirs {
	return Dirs{Data: root, Models: filepath.Join(root, "models"), Chats: filepath.Join(root, "chats")}
}

func dataRoot() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		return filepath.Abs(h)
	}
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "Trochilus"), nil
		}
		return "", errors.New("%LocalAppData% is not set")
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support", "Trochilus"), nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "trochilus"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "share", "trochilus"), nil
}

// Extension is the file extension of the models the app lists.
const Extension = ".gguf"

// ModelFiles returns the GGUF files the app knows, sorted and without duplicates: those in
// the models folder (a partial download, named *.gguf.part, is not one; a symbolic link to a
// GGUF file elsewhere is, listed under the link's name, so that a folder of models can be
// linked in rather than copied) and the opened files that still exist.
func (d Dirs) ModelFiles() ([]string, error) {
	entries, err := os.ReadDir(d.Models)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("library: models folder: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if !strings.EqualFold(filepath.Ext(e.Name()), Extension) {
			continue
		}
		p := filepath.Join(d.Models, e.Name())
		switch {
		case e.Type().IsRegular():
			paths = append(paths, p)
		case e.Type()&fs.ModeSymlink != 0:
			// A link to a folder, or one whose target is gone, is not a model.
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				paths = append(paths, p)
			}
		}
	}
	opened, err := d.Opened()
	if err != nil {
		return nil, err
	}
	for _, p := range opened {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// openedFile lists the models opened from outside the models folder.
func (d Dirs) openedFile() string { return filepath.Join(d.Data, "opened.json") }

// maxOpened bounds the opened-files list, so a corrupt or huge file is refused, not read.
const maxOpened = 1 << 20

// Opened returns the files added with AddOpened, in the order added.
func (d Dirs) Opened() ([]string, error) {
	f, err := os.Open(d.openedFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("library: opened models: %w", err)
	}
	defer f.Close()
	var paths []string
	dec := json.NewDecoder(&limitedReader{r: f, n: maxOpened})
	if err := dec.Decode(&paths); err != nil {
		return nil, fmt.Errorf("library: opened models list %s: %w", d.openedFile(), err)
	}
	return paths, nil
}

// AddOpened remembers a model file opened from anywhere, so it is listed next time.
func (d Dirs) AddOpened(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("library: %w", err)
	}
	paths, err := d.Opened()
	if err != nil {
		return err
	}
	if slices.Contains(paths, abs) {
		return nil
	}
	return d.writeOpened(append(paths, abs))
}

// RemoveOpened forgets an opened file (the file itself is left alone).
func (d Dirs) RemoveOpened(path string) error {
	paths, err := d.Opened()
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(paths, func(p string) bool { return p == path })
	return d.writeOpened(kept)
}

func (d Dirs) writeOpened(paths []string) error {
	if paths == nil {
		paths = []string{}
	}
	data, err := json.MarshalIndent(paths, "", "  ")
	if err != nil {
		return fmt.Errorf("library: %w", err)
	}
	if err := writeAtomic(d.openedFile(), append(data, '\n')); err != nil {
		return fmt.Errorf("library: saving the opened models list: %w", err)
	}
	return nil
}

// writeAtomic writes a small file through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// limitedReader fails, rather than truncating, past n bytes.
type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("file too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
