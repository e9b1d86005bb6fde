package download

import (
	"encoding/json"
	"os"
)

// state is what a partial file is a part of, kept beside it so that a resume can tell its own
// bytes from those of another download and ask the server for the same version of the file.
type state struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
	ETag   string `json:"etag,omitempty"`
}

// readState returns the state saved at path, or the zero state when there is none or it is
// unreadable (the partial file is then checked by its digest alone).
func readState(path string) state {
	var s state
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 1<<16 {
		return state{}
	}
	if json.Unmarshal(data, &s) != nil {
		return state{}
	}
	return s
}

// writeState saves s at path through a temporary file and a rename, so a crash leaves the old
// state or the new, never half of one.
func writeState(path string, s state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
