package conversation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConversationTurns(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := New(now)
	if !idPattern.MatchString(c.ID) || !strings.HasPrefix(c.ID, "20261130-120000-") {
		t.Fatalf("id %q", c.ID)
	}
	c.System = "Be brief."
	c.Add(Message{Role: User, Content: "What is a hummingbird?\nAnd why?"}, now)
	c.Add(Message{Role: Assistant, Content: "A bird.", Tokens: 3}, now)
	c.Add(Message{Role: User, Content: "Tell me more."}, now.Add(time.Minute))
	if c.Title != "What is a hummingbird?" {
		t.Fatalf("title %q", c.Title)
	}
	turns := c.Turns()
	if len(turns) != 4 || turns[0].Role != System || turns[0].Content != "Be brief." || turns[3].Content != "Tell me more." {
		t.Fatalf("turns %+v", turns)
	}
	if c.LastUser() != 2 {
		t.Fatalf("last user %d", c.LastUser())
	}
	c.Add(Message{Role: Assistant, Content: "More."}, now)
	if !c.DropAfterLastUser(now) || len(c.Messages) != 3 {
		t.Fatalf("after drop: %+v", c.Messages)
	}
	long := strings.Repeat("é", 60)
	if got := titleOf(long); len([]rune(got)) != 48 || !strings.HasSuffix(got, "…") {
		t.Fatalf("long title %q (%d runes)", got, len([]rune(got)))
	}
	if (&Conversation{}).DropAfterLastUser(now) {
		t.Fatal("dropped in an empty conversation")
	}
}

func TestStore(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "chats")}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a, b := New(t0), New(t0.Add(time.Second))
	a.Add(Message{Role: User, Content: "first"}, t0)
	b.Add(Message{Role: User, Content: "second"}, t0.Add(time.Hour))
	b.Add(Message{Role: Assistant, Content: "answer ✓", Tokens: 2, Rate: 12.5, Stopped: true}, t0.Add(time.Hour))
	for _, c := range []*Conversation{a, b} {
		if err := s.Save(c); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].ID != b.ID || list[0].Title != "second" || list[0].Messages != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	got, err := s.Load(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 || !reflect.DeepEqual(got.Messages[1], b.Messages[1]) || !got.Updated.Equal(b.Updated) {
		t.Fatalf("loaded %+v, saved %+v", got, b)
	}

	// A corrupt file is reported and skipped; the good ones are still listed.
	if err := os.WriteFile(filepath.Join(s.Dir, "20260101-000000-abcdef.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err = s.List()
	if err == nil || len(list) != 2 {
		t.Fatalf("with a corrupt file: %d listed, error %v", len(list), err)
	}
	for _, id := range []string{"../../etc/passwd", "x", ""} {
		if _, err := s.Load(id); err == nil {
			t.Errorf("loaded id %q", id)
		}
	}
	if err := s.Delete(a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a.ID); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := s.Load(a.ID); err == nil {
		t.Fatal("deleted conversation loaded")
	}
}

// A sampled answer keeps its seed, 0 included, and a greedy one has none: the JSON says which
// (files written before seeds were pointers, where a greedy answer had no "seed", read the same).
func TestSeedRoundTrip(t *testing.T) {
	zero, big := uint64(0), uint64(1<<53-1)
	msgs := []Message{{Role: Assistant, Content: "a"}, {Role: Assistant, Content: "b", Seed: &zero}, {Role: Assistant, Content: "c", Seed: &big}}
	data, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"role":"assistant","content":"a"},{"role":"assistant","content":"b","seed":0},{"role":"assistant","content":"c","seed":9007199254740991}]`; string(data) != want {
		t.Fatalf("JSON %s\nwant %s", data, want)
	}
	var back []Message
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back[0].Seed != nil || back[1].Seed == nil || *back[1].Seed != 0 || *back[2].Seed != big {
		t.Fatalf("read back %+v", back)
	}
}

// Regenerating keeps every version: Answered shows the newest, Show flips between them, and
// the file keeps them all with the one shown.
func TestVersions(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	seed := uint64(7)
	c := New(now)
	c.Add(Message{Role: User, Content: "Hi"}, now)
	if c.LastAnswer() != -1 {
		t.Fatalf("last answer %d with none", c.LastAnswer())
	}
	c.Add(Answered([]Answer{{Content: "one", Tokens: 2}}), now)
	if m := c.Messages[1]; len(m.Versions) != 0 || len(m.AllVersions()) != 1 || m.AllVersions()[0].Content != "one" {
		t.Fatalf("a first answer: %+v", m)
	}
	i := c.LastAnswer()
	prev := c.Messages[i].AllVersions()
	c.DropAfterLastUser(now)
	c.Add(Answered(append(prev, Answer{Content: "two", Seed: &seed, Rate: 3})), now)
	m := &c.Messages[1]
	if m.Content != "two" || m.Shown != 1 || len(m.Versions) != 2 || *m.Seed != 7 {
		t.Fatalf("after a regenerate: %+v", *m)
	}
	if !m.Show(0) || m.Content != "one" || m.Seed != nil || m.Rate != 0 || m.Tokens != 2 || m.Show(2) || m.Show(-1) {
		t.Fatalf("showing version 1: %+v", *m)
	}
	if turns := c.Turns(); turns[1].Content != "one" {
		t.Fatalf("the model is told %q", turns[1].Content)
	}

	s := Store{Dir: t.TempDir()}
	if err := s.Save(c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Messages, c.Messages) {
		t.Fatalf("loaded %+v\nsaved %+v", got.Messages, c.Messages)
	}
	// A clone shares no versions with the original.
	cl := c.Clone()
	cl.Messages[1].Versions[0].Content = "changed"
	if c.Messages[1].Versions[0].Content != "one" {
		t.Fatal("Clone shares versions")
	}
}

// Files that are JSON but not a conversation the app can show are errors naming the file and
// the problem, never a crash; the file shown version is what is shown.
func TestCorruptFiles(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	const id = "20261130-120000-abcdef"
	for _, c := range []struct{ body, want string }{
		{`{"id":"` + id + `","messages":[{"role":"assistant","content":"x","versions":[{"content":"a"}],"shown":3}]}`, "message 0 shows version 3 of 1"},
		{`{"id":"` + id + `","messages":[{"role":"assistant","content":"x","shown":-1}]}`, "message 0 shows version -1 of none"},
		{`{"id":"` + id + `","messages":[{"role":"user","content":"x","versions":[{"content":"a"}]}]}`, "a user message has answer versions"},
		{`{"id":"` + id + `","messages":[{"role":"tool","content":"x"}]}`, `message 0 has role "tool"`},
		{`{"id":"` + id + `","messages":[{"role":"user","content":`, "unexpected end of JSON input"},
		{`[]`, "cannot unmarshal array"},
	} {
		if err := os.WriteFile(filepath.Join(s.Dir, id+".json"), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.Load(id)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), id+".json") {
			t.Errorf("%s: %v, want an error naming the file and saying %q", c.body, err, c.want)
		}
		if list, err := s.List(); len(list) != 0 || err == nil {
			t.Errorf("%s: listed %v, %v", c.body, list, err)
		}
	}
	// The version shown is taken from the versions, whatever the fields beside them say.
	body := `{"id":"` + id + `","title":"  ","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"stale","versions":[{"content":"a"},{"content":"b","tokens":4}],"shown":1}]}`
	if err := os.WriteFile(filepath.Join(s.Dir, id+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load(id)
	if err != nil || c.Messages[1].Content != "b" || c.Messages[1].Tokens != 4 || c.Title != "New chat" {
		t.Fatalf("loaded %+v, %v", c, err)
	}
}

// Renaming trims and shortens the title, refuses a blank one and keeps the chat's place in
// the list; a save leaves no temporary file behind.
func TestRenameAndSave(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := New(now)
	c.Add(Message{Role: User, Content: "first words"}, now)
	if err := c.Rename("  \n "); err == nil || c.Title != "first words" {
		t.Fatalf("blank rename: %v, title %q", err, c.Title)
	}
	if err := c.Rename("  Birds\nand more"); err != nil || c.Title != "Birds" || !c.Updated.Equal(now) {
		t.Fatalf("rename: %v, title %q, updated %v", err, c.Title, c.Updated)
	}
	c.Add(Message{Role: User, Content: "more"}, now)
	if c.Title != "Birds" {
		t.Fatalf("a renamed chat was renamed by a message: %q", c.Title)
	}
	s := Store{Dir: filepath.Join(t.TempDir(), "chats")}
	for range 3 {
		if err := s.Save(c); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != c.ID+".json" {
		t.Fatalf("folder holds %v (%v)", entries, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Title != "Birds" || !list[0].Created.Equal(now) {
		t.Fatalf("list %+v, %v", list, err)
	}
}

// Whatever a chat file holds, Load returns an error or a conversation the app can show: every
// answer showing a version it has, never a panic.
func FuzzLoad(f *testing.F) {
	const id = "20261130-120000-abcdef"
	f.Add([]byte(`{"id":"` + id + `","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","versions":[{"content":"a"},{"content":"b"}],"shown":1}]}`))
	f.Add([]byte(`{"id":"` + id + `","messages":[{"role":"assistant","shown":-3}]}`))
	f.Add([]byte(`{"id":"` + id + `","messages":null,"title":""}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Store{Dir: t.TempDir()}
		if err := os.WriteFile(filepath.Join(s.Dir, id+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := s.Load(id)
		if err != nil {
			return
		}
		if c.Messages == nil || c.Title == "" {
			t.Fatalf("loaded %+v", c)
		}
		for i, m := range c.Messages {
			vs := m.AllVersions()
			if m.Shown < 0 || m.Shown >= len(vs) || vs[m.Shown].Content != m.Content {
				t.Fatalf("message %d shows %d of %d", i, m.Shown, len(vs))
			}
		}
		c.Turns()
	})
}

// The model's view of a rolled conversation begins at a user message: RollPoints starts at
// Rolled and offers each later user message up to the last, so whole turns go, never the last
// question; TurnsFrom puts the system prompt before the messages kept.
func TestRollPoints(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := New(now)
	c.System = "Be brief."
	for _, m := range []Message{{Role: User, Content: "q1"}, {Role: Assistant, Content: "a1"}, {Role: User, Content: "q2"},
		{Role: User, Content: "q3"}, {Role: Assistant, Content: "a3"}, {Role: User, Content: "q4"}} {
		c.Add(m, now)
	}
	if got := c.RollPoints(); !reflect.DeepEqual(got, []int{0, 2, 3, 5}) {
		t.Fatalf("roll points %v", got)
	}
	c.Rolled = 3
	if got := c.RollPoints(); !reflect.DeepEqual(got, []int{3, 5}) {
		t.Fatalf("roll points from 3: %v", got)
	}
	turns := c.TurnsFrom(3)
	if len(turns) != 4 || turns[0].Content != "Be brief." || turns[1].Content != "q3" || turns[3].Content != "q4" {
		t.Fatalf("turns from 3: %+v", turns)
	}
	c.Rolled = 9 // past the last question (messages removed since): the last question stays
	if got := c.RollPoints(); !reflect.DeepEqual(got, []int{5}) {
		t.Fatalf("roll points from 9: %v", got)
	}
	if got := New(now).RollPoints(); !reflect.DeepEqual(got, []int{0}) {
		t.Fatalf("empty chat: %v", got)
	}
}

// Where the model's view begins and an answer cut at the length limit are saved, and the
// limit follows the version shown.
func TestRolledAndLengthSaved(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := Store{Dir: t.TempDir()}
	c := New(now)
	c.Add(Message{Role: User, Content: "q"}, now)
	c.Add(Answered([]Answer{{Content: "cut", Tokens: 4, Stopped: true, Length: true}, {Content: "whole", Tokens: 2}}), now)
	c.Messages = append([]Message{{Role: User, Content: "old"}, {Role: Assistant, Content: "old answer"}}, c.Messages...)
	c.Rolled = 2
	if err := s.Save(c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(c.ID)
	if err != nil || got.Rolled != 2 || got.Messages[3].Length || !got.Messages[3].Versions[0].Length {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	m := got.Messages[3]
	if !m.Show(0) || !m.Length || m.Content != "cut" || !AnswerOf(m).Length {
		t.Fatalf("version 0 shown: %+v", m)
	}
}
