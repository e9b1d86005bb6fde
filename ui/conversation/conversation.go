// Package conversation holds the chats of the window app and saves each one as a JSON file in
// the user's chats folder. It knows nothing of windows or of the engine.
package conversation

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
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
	"unicode/utf8"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// Roles of a message.
const (
	User      = "user"
	Assistant = "assistant"
	System    = "system"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`

	// For an answer: how it was made.
	Tokens  int     `json:"tokens,omitempty"`  // tokens generated
	Rate    float64 `json:"rate,omitempty"`    // generated tokens per second
	Stopped bool    `json:"stopped,omitempty"` // cut short (Stop, an error, the context's end)
	Seed    *uint64 `json:"seed,omitempty"`    // sampled with this seed (any value, 0 included); nil: greedy
}

// Conversation is a chat: a system prompt and the messages so far.
type Conversation struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Model    string    `json:"model,omitempty"` // the file of the model last used
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// New starts an empty conversation at now.
func New(now time.Time) *Conversation {
	var b [3]byte
	rand.Read(b[:])
	return &Conversation{
		ID:       now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]),
		Title:    "New chat",
		Messages: []Message{},
		Created:  now, Updated: now,
	}
}

// Turns returns the conversation as the chat template takes it: the system prompt (when set)
// and then every message.
func (c *Conversation) Turns() []chat.Message {
	out := make([]chat.Message, 0, len(c.Messages)+1)
	if strings.TrimSpace(c.System) != "" {
		out = append(out, chat.Message{Role: System, Content: c.System})
	}
	for _, m := range c.Messages {
		out = append(out, chat.Message{Role: m.Role, Content: m.Content})
	}
	return out
}

// Add appends a message, naming the conversation after its first user message.
func (c *Conversation) Add(m Message, now time.Time) {
	c.Messages = append(c.Messages, m)
	if m.Role == User && c.Title == "New chat" {
		c.Title = titleOf(m.Content)
	}
	c.Updated = now
}

// LastUser returns the index of the last user message, or -1.
func (c *Conversation) LastUser() int {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == User {
			return i
		}
	}
	return -1
}

// DropAfterLastUser removes the messages after the last user message (its answer), so it can
// be answered again; it reports whether there was a user message.
func (c *Conversation) DropAfterLastUser(now time.Time) bool {
	i := c.LastUser()
	if i < 0 {
		return false
	}
	c.Messages = c.Messages[:i+1]
	c.Updated = now
	return true
}

// titleOf makes a title from a message's first line, at most 48 characters.
func titleOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const most = 48
	if utf8.RuneCountInString(s) > most {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:most-1])) + "…"
	}
	if s == "" {
		return "New chat"
	}
	return s
}

// Store keeps conversations as <id>.json files in a folder.
type Store struct {
	Dir string
}

// Summary is a saved conversation as listed.
type Summary struct {
	ID       string
	Title    string
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

// Save writes c through a temporary file and a rename, so a crash leaves the old or the new
// file, never half of one.
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
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("conversation %s: %w", c.ID, err)
	}
	return nil
}

// Load reads the conversation id.
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
	for i, m := range c.Messages {
		if m.Role != User && m.Role != Assistant {
			return nil, fmt.Errorf("conversation: %s: message %d has role %q", p, i, m.Role)
		}
	}
	if c.Messages == nil {
		c.Messages = []Message{}
	}
	return &c, nil
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
		out = append(out, Summary{ID: c.ID, Title: c.Title, Updated: c.Updated, Messages: len(c.Messages)})
	}
	slices.SortFunc(out, func(a, b Summary) int { return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID)) })
	return out, errors.Join(errs...)
}
