// Package conversation holds the chats of the window app and saves each one as a JSON file in
// the user's chats folder. It knows nothing of windows or of the engine.
package conversation

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
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

// untitled is a new conversation's title, until its first user message names it.
const untitled = "New chat"

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`

	// For an answer: how it was made.
	Tokens  int     `json:"tokens,omitempty"`  // tokens generated
	Rate    float64 `json:"rate,omitempty"`    // generated tokens per second
	Stopped bool    `json:"stopped,omitempty"` // cut short (Stop, an error, the context's end)
	Seed    *uint64 `json:"seed,omitempty"`    // sampled with this seed (any value, 0 included); nil: greedy
	// Length marks an answer that ended because it took the most tokens it could (the
	// answer length setting, or the room the context had), not because the model ended it:
	// Continue can go on from it. A Stopped answer is not one (Stop, an error).
	Length bool `json:"length,omitempty"`

	// Versions, for an answer regenerated, holds every answer made for this turn, the oldest
	// first, and Shown the one the fields above are (Versions[Shown]): regenerating never
	// throws an answer away. Empty for an answer made once (and in files from before versions,
	// which read the same).
	Versions []Answer `json:"versions,omitempty"`
	Shown    int      `json:"shown,omitempty"`
}

// Answer is one version of an answer.
type Answer struct {
	Content string  `json:"content"`
	Tokens  int     `json:"tokens,omitempty"`
	Rate    float64 `json:"rate,omitempty"`
	Stopped bool    `json:"stopped,omitempty"`
	Seed    *uint64 `json:"seed,omitempty"`
	Length  bool    `json:"length,omitempty"`
}

// AnswerOf returns the answer m shows.
func AnswerOf(m Message) Answer {
	return Answer{Content: m.Content, Tokens: m.Tokens, Rate: m.Rate, Stopped: m.Stopped, Seed: m.Seed, Length: m.Length}
}

// Answered returns the assistant message showing the last of versions (at least one).
func Answered(versions []Answer) Message {
	a := versions[len(versions)-1]
	m := Message{Role: Assistant, Content: a.Content, Tokens: a.Tokens, Rate: a.Rate, Stopped: a.Stopped, Seed: a.Seed, Length: a.Length}
	if len(versions) > 1 {
		m.Versions, m.Shown = slices.Clone(versions), len(versions)-1
	}
	return m
}

// AllVersions returns every version of the answer m, the shown one included: one for an answer
// never regenerated.
func (m *Message) AllVersions() []Answer {
	if len(m.Versions) == 0 {
		return []Answer{AnswerOf(*m)}
	}
	return m.Versions
}

// Show makes version i the one shown; it reports whether there is such a version.
func (m *Message) Show(i int) bool {
	if i < 0 || i >= len(m.Versions) {
		return false
	}
	a := m.Versions[i]
	m.Content, m.Tokens, m.Rate, m.Stopped, m.Seed, m.Length, m.Shown = a.Content, a.Tokens, a.Rate, a.Stopped, a.Seed, a.Length, i
	return true
}

// Conversation is a chat: a system prompt and the messages so far.
type Conversation struct {
	ID       string    `json:"id"`
	Title    string    `json:"title"`
	Model    string    `json:"model,omitempty"` // the file of the model last used
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// Rolled is the number of messages at the start that no longer fit the model's context
	// with the rest: the model reads the system prompt and Messages[Rolled:]. They stay in
	// the chat (shown, saved, exported); only the model no longer sees them. It only grows
	// while the conversation does, so that what the model reads keeps its beginning and the
	// KV cache of it is reused from one turn to the next.
	Rolled  int       `json:"rolled,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// New starts an empty conversation at now.
func New(now time.Time) *Conversation {
	var b [3]byte
	rand.Read(b[:])
	return &Conversation{
		ID:       now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]),
		Title:    untitled,
		Messages: []Message{},
		Created:  now, Updated: now,
	}
}

// Clone returns a copy of c that shares nothing changeable with it, for a goroutine to save
// while the UI goes on changing c.
func (c *Conversation) Clone() *Conversation {
	out := *c
	out.Messages = slices.Clone(c.Messages)
	for i := range out.Messages {
		out.Messages[i].Versions = slices.Clone(out.Messages[i].Versions)
	}
	return &out
}

// Turns returns the conversation as the chat template takes it: the system prompt (when set)
// and then every message.
func (c *Conversation) Turns() []chat.Message { return c.TurnsFrom(0) }

// TurnsFrom returns the conversation as the model reads it when the messages before first have
// rolled out of its context: the system prompt (when set) and Messages[first:].
func (c *Conversation) TurnsFrom(first int) []chat.Message {
	first = min(max(first, 0), len(c.Messages))
	out := make([]chat.Message, 0, len(c.Messages)-first+1)
	if strings.TrimSpace(c.System) != "" {
		out = append(out, chat.Message{Role: System, Content: c.System})
	}
	for _, m := range c.Messages[first:] {
		out = append(out, chat.Message{Role: m.Role, Content: m.Content})
	}
	return out
}

// RollPoints returns where the model's view of the conversation may begin, in order: Rolled
// and then each later user message up to the last one. Each drops whole turns (a user
// message and what answered it), never part of one, never the last user message.
func (c *Conversation) RollPoints() []int {
	last := c.LastUser()
	first := min(max(c.Rolled, 0), max(last, 0))
	points := []int{first}
	for i := first + 1; i <= last; i++ {
		if c.Messages[i].Role == User {
			points = append(points, i)
		}
	}
	return points
}

// Add appends a message, naming the conversation after its first user message.
func (c *Conversation) Add(m Message, now time.Time) {
	c.Messages = append(c.Messages, m)
	if m.Role == User && c.Title == untitled {
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

// LastAnswer returns the index of the answer to the last user message (the last message, an
// assistant's), or -1.
func (c *Conversation) LastAnswer() int {
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == Assistant && c.LastUser() == n-2 {
		return n - 1
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

// maxTitle is the most characters of a title: the chat list shows a line of it.
const maxTitle = 48

// Rename sets the conversation's title (trimmed, its first line, at most maxTitle characters).
// It keeps Updated: a renamed chat keeps its place in the list.
func (c *Conversation) Rename(title string) error {
	if strings.TrimSpace(title) == "" {
		return errors.New("a chat's title cannot be empty")
	}
	c.Title = titleOf(title)
	return nil
}

// titleOf makes a title from a message's first line, at most maxTitle characters; "New chat"
// for a blank one.
func titleOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if utf8.RuneCountInString(s) > maxTitle {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxTitle-1])) + "…"
	}
	if s == "" {
		return untitled
	}
	return s
}
