package conversation

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	if len(got.Messages) != 2 || got.Messages[1] != b.Messages[1] || !got.Updated.Equal(b.Updated) {
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
