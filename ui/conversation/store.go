package conversation

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Store keeps conversations as <id>.json files in a folder.
type Store struct {
	Dir string
}

// Summary is a saved conversation as listed.
type Summary struct {
	ID       string
	Title    string
	Model    string // the file of the model last used, "" when none answered
	Created  time.Time
	Updated  time.Time
	Messages int
}

// ids are New's: they make safe file names and keep a stored id from naming another path.
var idPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// maxFile bounds a conversation file read back, so a corrupt file is an error, not an
// allocation of gigabytes.
const maxFile = 64 << 20

func (s Store) path(id string) (string, error) {
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("conversation: %q is not a conversation id", id)
	}
	return filepath.Join(s.Dir, id+".json"), nil
}

// Save writes c to a temporary file of its own, flushes it to the disk and renames it over
// the conversation's file, so a crash (or a power cut) leaves the old file or the new one,
// never half of one, and two saves of one conversation at once never write the same file.
func (s Store) Save(c *Conversation) error {
	p, err := s.path(c.ID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, err)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, err)
	}
	f, err := os.CreateTemp(s.Dir, c.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644) // CreateTemp's 0600; the folder is the user's anyway
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("conversation %s: saving %s: %w", c.ID, p, err)
	}
	return nil
}

// Load reads the conversation id. A file that is not a conversation (corrupt, cut short,
// edited by hand into nonsense) is an error saying what is wrong and where.
func (s Store) Load(id string) (*Conversation, error) {
	p, err := s.path(id)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("conversation: %s: %d bytes is too large", p, fi.Size())
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	var c Conversation
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("conversation: %s: %w", p, err)
	}
	if c.ID != id {
		return nil, fmt.Errorf("conversation: %s holds conversation %q", p, c.ID)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("conversation: %s: %w", p, err)
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	if strings.TrimSpace(c.Title) == "" {
		c.Title = untitled
	}
	return &c, nil
}

// check validates what was read and makes each answer show its version Shown, so that the
// rest of the app can index without checking again.
func (c *Conversation) check() error {
	for i := range c.Messages {
		m := &c.Messages[i]
		if m.Role != User && m.Role != Assistant {
			return fmt.Errorf("message %d has role %q", i, m.Role)
		}
		if m.Role == User && (len(m.Versions) > 0 || m.Shown != 0) {
			return fmt.Errorf("message %d: a user message has answer versions", i)
		}
		if len(m.Versions) == 0 {
			if m.Shown != 0 {
				return fmt.Errorf("message %d shows version %d of none", i, m.Shown)
			}
		} else if !m.Show(m.Shown) {
			return fmt.Errorf("message %d shows version %d of %d", i, m.Shown, len(m.Versions))
		}
	}
	return nil
}

// Delete removes the conversation id; a missing one is not an error.
func (s Store) Delete(id string) error {
	p, err := s.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("conversation: %w", err)
	}
	return nil
}

// List returns the saved conversations, the most recently updated first. Files that cannot be
// read are skipped and reported together in the error, with the list of the good ones.
func (s Store) List() ([]Summary, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	var out []Summary
	var errs []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !idPattern.MatchString(id) {
			continue
		}
		c, err := s.Load(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c.Summary())
	}
	SortSummaries(out)
	return out, errors.Join(errs...)
}

// Summary returns c as List lists it.
func (c *Conversation) Summary() Summary {
	return Summary{ID: c.ID, Title: c.Title, Model: c.Model, Created: c.Created, Updated: c.Updated, Messages: len(c.Messages)}
}

// SortSummaries puts list in List's order: the most recently updated first.
func SortSummaries(list []Summary) {
	slices.SortFunc(list, func(a, b Summary) int { return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID)) })
}
