package library

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/trochilus-llm/trochilus/engine/hub"
)

// Entry is a model that can be downloaded from Hugging Face.
type Entry struct {
	Name  string `json:"name"`  // shown to people
	Repo  string `json:"repo"`  // the repository, owner/name
	File  string `json:"file"`  // the file's path in the repository
	Quant string `json:"quant"` // weight mix, e.g. Q4_K_M

	// Size is the file's size as last seen, shown before the download starts; the download
	// takes the exact size from the repository's file list.
	Size int64 `json:"size"`

	// SHA256 and URL, when set, are used instead of asking Hugging Face (a mirror without its
	// API). Without SHA256 the digest comes from the repository's file list.
	SHA256 string `json:"sha256,omitempty"`
	URL    string `json:"url,omitempty"`
}

// Builtin returns the models the app offers unless the user's catalog file says otherwise:
// OLMoE-1B-7B-0125-Instruct in Q4_K_M (Ai2's own conversion) and Q8_0 (mradermacher's
// conversion of the same model; Ai2's repository listing seen when this was written showed
// Q4_K_M but was cut before any Q8_0), and Qwen3-30B-A3B in Q4_K_M and Q8_0 (Qwen's own
// conversions: the first the file a 32 GB PC holds in RAM, or a 16 GB one with experts from
// disk). Sizes are approximate (Hugging Face's rounded figures); the download takes the exact
// size and digest from the repository's file list.
func Builtin() []Entry {
	return []Entry{
		{
			Name: "OLMoE-1B-7B-0125-Instruct Q4_K_M", Quant: "Q4_K_M", Size: 4_210_000_000,
			Repo: "allenai/OLMoE-1B-7B-0125-Instruct-GGUF", File: "OLMoE-1B-7B-0125-Instruct-Q4_K_M.gguf",
		},
		{
			Name: "OLMoE-1B-7B-0125-Instruct Q8_0", Quant: "Q8_0", Size: 7_360_000_000,
			Repo: "mradermacher/OLMoE-1B-7B-0125-Instruct-GGUF", File: "OLMoE-1B-7B-0125-Instruct.Q8_0.gguf",
		},
		{
			Name: "Qwen3-30B-A3B Q4_K_M", Quant: "Q4_K_M", Size: 18_600_000_000,
			Repo: "Qwen/Qwen3-30B-A3B-GGUF", File: "Qwen3-30B-A3B-Q4_K_M.gguf",
		},
		{
			Name: "Qwen3-30B-A3B Q8_0", Quant: "Q8_0", Size: 32_500_000_000,
			Repo: "Qwen/Qwen3-30B-A3B-GGUF", File: "Qwen3-30B-A3B-Q8_0.gguf",
		},
	}
}

// Check reports the first thing wrong with an entry: a repository or file name that is not
// one, a file that would land outside the models folder, a negative size, a bad digest.
func (e *Entry) Check() error {
	switch {
	case strings.TrimSpace(e.Name) == "":
		return fmt.Errorf("entry for %s/%s has no name", e.Repo, e.File)
	case !hub.IsRepo(e.Repo):
		return fmt.Errorf("entry %q: repository %q is not owner/name", e.Name, e.Repo)
	case !hub.IsFilePath(e.File):
		return fmt.Errorf("entry %q: file %q is not a plain path in the repository", e.Name, e.File)
	case !strings.EqualFold(path.Ext(e.File), Extension):
		return fmt.Errorf("entry %q: file %q is not a %s file", e.Name, e.File, Extension)
	case e.Size < 0:
		return fmt.Errorf("entry %q: size %d", e.Name, e.Size)
	}
	if e.SHA256 != "" && !hub.IsSHA256(e.SHA256) {
		return fmt.Errorf("entry %q: sha256 %q is not 64 hex digits", e.Name, e.SHA256)
	}
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("entry %q: url %q is not an http(s) address", e.Name, e.URL)
		}
	}
	return nil
}

// LocalName returns the name the file takes in the models folder.
func (e *Entry) LocalName() string { return path.Base(e.File) }

// DownloadURL returns where the file is fetched: Entry.URL, or the resolve address of the
// repository's main branch at the Hub at endpoint.
func (e *Entry) DownloadURL(endpoint string) string {
	if e.URL != "" {
		return e.URL
	}
	return hub.FileURL(endpoint, e.Repo, e.File)
}

// catalogFile is the user's editable list of downloadable models.
func (d Dirs) catalogFile() string { return filepath.Join(d.Data, "catalog.json") }

// CatalogFile returns the path of the user's list of downloadable models.
func (d Dirs) CatalogFile() string { return d.catalogFile() }

// Entries returns the downloadable models: those in the user's catalog.json when it exists,
// else the built-in ones, which are then written there so that the user has a file to fix or
// extend. Every entry is checked; one bad entry makes the whole file an error naming it.
func (d Dirs) Entries() ([]Entry, error) {
	data, err := os.ReadFile(d.catalogFile())
	if errors.Is(err, fs.ErrNotExist) {
		list := Builtin()
		out, merr := json.MarshalIndent(list, "", "  ")
		if merr == nil {
			// Failing to write the example only costs the user the file to edit.
			_ = writeAtomic(d.catalogFile(), append(out, '\n'))
		}
		return list, nil
	}
	if err != nil {
		return nil, fmt.Errorf("library: %w", err)
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("library: %s: %d bytes is too large for a list of models", d.catalogFile(), len(data))
	}
	var list []Entry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("library: %s: %w", d.catalogFile(), err)
	}
	seen := map[string]bool{}
	for i := range list {
		if err := list[i].Check(); err != nil {
			return nil, fmt.Errorf("library: %s: %w", d.catalogFile(), err)
		}
		if seen[list[i].LocalName()] {
			return nil, fmt.Errorf("library: %s: two entries download to %s", d.catalogFile(), list[i].LocalName())
		}
		seen[list[i].LocalName()] = true
	}
	return list, nil
}
