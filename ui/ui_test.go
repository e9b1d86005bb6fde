package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/engine/assistant"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/engine/machine"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

func TestMain(m *testing.M) { os.Exit(modelgentest.RunTests(m)) }

const gib = 1 << 30

// bigMachine has room for anything a test loads.
func bigMachine() machine.Profile {
	return machine.Profile{OS: "linux", Arch: "amd64", CPU: "Test CPU 9000", Vendor: "AMD", PhysicalCores: 2,
		LogicalCores: 4, UsableCPUs: 4, RAMTotal: 16 * gib, RAMAvailable: 12 * gib,
		Features: machine.Features{AVX2: true, FMA: true, AVX512F: true}}
}

// fakeBackend plays the engine for the screens; the real one is exercised in engine_test.go.
type fakeBackend struct {
	prof machine.Profile

	mu     sync.Mutex
	loads  []string
	models []*fakeModel
	answer []string // the pieces every model answers with
	gated  bool     // models wait for release between pieces
	pause  time.Duration
	bySeed bool // a sampled answer is "Sampled SEED." instead
	ctxLen int  // the models' context; 0: 4096
}

func (f *fakeBackend) Machine(context.Context) (MachineReport, error) {
	return MachineReport{Profile: f.prof, Threads: 2, Kernels: "avx512", GPU: "none used: test",
		Disk: machine.ReadSpeed{BytesPerSec: 2e9, Bytes: 512 << 20, Took: 268 * time.Millisecond, Unbuffered: true}}, nil
}

func (f *fakeBackend) Architectures() []string { return []string{"olmoe"} }

func (f *fakeBackend) Load(_ context.Context, path string) (ChatModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads = append(f.loads, path)
	m := &fakeModel{path: path, answer: f.answer, emitted: make(chan string, 100), pause: f.pause, bySeed: f.bySeed, ctxLen: f.ctxLen}
	if f.gated {
		m.release = make(chan struct{}, 100)
	}
	f.models = append(f.models, m)
	return m, nil
}

func (f *fakeBackend) last() *fakeModel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.models[len(f.models)-1]
}

// fakeModel answers every turn with the same pieces, a token each, as many as MaxTokens
// allows, recording the turns it was given. Continue goes on with the pieces the answer so far
// does not have yet, as a model that had not stopped would.
type fakeModel struct {
	path    string
	answer  []string
	emitted chan string   // each piece, once passed to onText
	release chan struct{} // when set, each piece after the first waits for a receive
	pause   time.Duration // between pieces
	bySeed  bool          // a sampled answer is "Sampled SEED."
	ctxLen  int           // 0: 4096

	mu       sync.Mutex
	turns    [][]chat.Message
	sampling []*engine.Sampling // each Reply's
	conts    []bool             // each call: a Continue
	closed   bool
}

func (m *fakeModel) Path() string { return m.path }

func (m *fakeModel) Context() int {
	if m.ctxLen > 0 {
		return m.ctxLen
	}
	return 4096
}

// Count is the fake's tokenizer: 4 tokens a message (the template's) and a token a word.
func (m *fakeModel) Count(turns []chat.Message, cont bool) (int, error) { return fakeCount(turns), nil }

func fakeCount(turns []chat.Message) int {
	n := 0
	for _, t := range turns {
		n += 4 + len(strings.Fields(t.Content.(string)))
	}
	return n
}

func (m *fakeModel) Reply(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	return m.reply(ctx, turns, opts, false)
}

func (m *fakeModel) Continue(ctx context.Context, turns []chat.Message, opts assistant.Options) (Reply, error) {
	return m.reply(ctx, turns, opts, true)
}

func (m *fakeModel) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

func (m *fakeModel) reply(ctx context.Context, turns []chat.Message, opts assistant.Options, cont bool) (Reply, error) {
	onText := opts.OnText
	m.mu.Lock()
	m.turns = append(m.turns, turns)
	m.sampling = append(m.sampling, opts.Sampling)
	m.conts = append(m.conts, cont)
	m.mu.Unlock()
	r := Reply{Prompt: 10 * len(turns), Context: m.Context(), Rate: 25, PPRate: 100}
	var text strings.Builder
	answer := m.answer
	if m.bySeed && opts.Sampling != nil {
		answer = []string{fmt.Sprintf("Sampled %d.", opts.Sampling.Seed)}
	}
	if cont { // the pieces the answer so far has are not said again
		so := turns[len(turns)-1].Content.(string)
		for len(answer) > 0 && strings.HasPrefix(so, answer[0]) {
			so, answer = so[len(answer[0]):], answer[1:]
		}
	}
	for i, p := range answer {
		if opts.MaxTokens > 0 && i == opts.MaxTokens {
			r.Text, r.Used = text.String(), r.Prompt+r.Tokens
			return r, nil // cut at the limit, not ended
		}
		if i > 0 && m.pause > 0 {
			time.Sleep(m.pause)
		}
		if i > 0 && m.release != nil {
			select {
			case <-ctx.Done():
			case <-m.release:
			}
		}
		if err := ctx.Err(); err != nil {
			r.Text, r.Used = text.String(), r.Prompt+r.Tokens
			return r, err
		}
		text.WriteString(p)
		r.Tokens++
		onText(p)
		select {
		case m.emitted <- p:
		default: // nobody counts this model's pieces
		}
	}
	r.Text, r.Tokens, r.Ended, r.Used = text.String(), r.Tokens+1, true, r.Prompt+r.Tokens
	return r, nil
}

func (m *fakeModel) lastTurns() []chat.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns[len(m.turns)-1]
}

// tinyModelFile writes the tiny Q8_0 model (no tokenizer needed by the fake) into dir.
func tinyModelFile(t *testing.T, dir, name string) string {
	t.Helper()
	src := modelgentest.TestModel(t, modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// newTestUI builds the window over be with fresh folders and waits for its first jobs.
func newTestUI(t *testing.T, be Backend, opts Options) (*UI, library.Dirs) {
	t.Helper()
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	for _, d := range []string{dirs.Models, dirs.Chats} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return startUI(t, be, dirs, opts), dirs
}

func startUI(t *testing.T, be Backend, dirs library.Dirs, opts Options) *UI {
	t.Helper()
	if opts.Now == nil {
		clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		opts.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		}
	}
	if opts.Post == nil {
		// Results reach the widgets only when this goroutine flushes them (Wait, or the
		// waitFor loops below): the test driver would otherwise apply them on the job's
		// goroutine, racing with the test's own widget calls.
		opts.Post = func(func()) {}
	}
	u := New(fyne.CurrentApp(), be, dirs, opts)
	t.Cleanup(u.Close)
	u.Wait()
	return u
}

// pickAndLoad selects the model at path and loads it through the Load button.
func pickAndLoad(t *testing.T, u *UI, path string) {
	t.Helper()
	u.models.refresh()
	u.Wait()
	i := u.models.index(path)
	if i < 0 {
		t.Fatalf("%s not listed (rows %v)", path, rowPaths(u))
	}
	u.models.list.Select(i)
	if u.models.loadBtn.Disabled() {
		t.Fatalf("Load disabled for %s: %s", path, u.models.detail.Text)
	}
	test.Tap(u.models.loadBtn)
	u.Wait()
	if u.loadedPath() != path {
		t.Fatalf("loaded %q, want %q (status %q)", u.loadedPath(), path, u.models.status.Text)
	}
}

// newTinyEngineUI builds the window over be (an engine backend) with fresh folders, the tiny
// Q8_0 model among the files opened and loaded through the Models screen; it returns the
// window and the model's path.
func newTinyEngineUI(t *testing.T, be Backend, opts Options) (*UI, string) {
	t.Helper()
	path := modelgentest.TinyQ8(t)
	u, dirs := newTestUI(t, be, opts)
	if err := dirs.AddOpened(path); err != nil {
		t.Fatal(err)
	}
	pickAndLoad(t, u, path)
	return u, path
}

// newLoadedUI builds the window over be with fresh folders and loads a tiny model file through
// it, ready to chat.
func newLoadedUI(t *testing.T, be Backend) *UI {
	t.Helper()
	u, dirs := newTestUI(t, be, Options{})
	pickAndLoad(t, u, tinyModelFile(t, dirs.Models, "tiny.gguf"))
	return u
}

func rowPaths(u *UI) []string {
	var p []string
	for _, r := range u.models.rows {
		p = append(p, r.path)
	}
	return p
}

// say types text and sends it, waiting for the answer.
func say(t *testing.T, u *UI, text string) {
	t.Helper()
	test.Type(u.chat.input, text)
	test.Tap(u.chat.sendBtn)
	u.Wait()
}

// sendAndWaitForAPiece types text and sends it to the gated model m, waiting until the answer's
// first piece is out (the answer still under way).
func sendAndWaitForAPiece(t *testing.T, u *UI, m *fakeModel, text string) {
	t.Helper()
	test.Type(u.chat.input, text)
	test.Tap(u.chat.sendBtn)
	waitPieces(t, m, 1)
}

// shownTexts returns the texts of the conversation view's messages (an answer's Markdown), after
// checking that the view shows each message's view in order.
func shownTexts(u *UI) []string {
	var out []string
	for i, v := range u.chat.views {
		if u.chat.messages.Objects[i] != v.obj {
			panic(fmt.Sprintf("message %d's view is not shown in its place", i))
		}
		out = append(out, v.text())
	}
	return out
}

func TestPickModel(t *testing.T) {
	be := &fakeBackend{prof: bigMachine()}
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	good := tinyModelFile(t, dirs.Models, "tiny.gguf")
	if err := os.WriteFile(filepath.Join(dirs.Models, "broken.gguf"), []byte("GGUF junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs.Models, "half.gguf.part"), []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := tinyModelFile(t, t.TempDir(), "opened.gguf")
	os.MkdirAll(dirs.Chats, 0o755)
	u := startUI(t, be, dirs, Options{})

	if len(u.models.rows) != 2 {
		t.Fatalf("listed %v, want broken.gguf and tiny.gguf (not the partial file)", rowPaths(u))
	}
	broken := u.models.rows[0]
	if broken.err == nil || !strings.HasPrefix(broken.summary(), "not usable: ") {
		t.Fatalf("broken file row: %q", broken.summary())
	}
	u.models.list.Select(0)
	if !u.models.loadBtn.Disabled() {
		t.Fatal("Load enabled for a broken file")
	}

	row := u.models.rows[1]
	if want := "Q8_0 · 6.67 MiB · olmoe · OLMoE tiny random q8_0 · fits"; row.summary() != want {
		t.Fatalf("row %q, want %q", row.summary(), want)
	}
	pickAndLoad(t, u, good)
	if u.tabs.SelectedIndex() != 1 || !strings.Contains(u.chat.modelLabel.Text, "tiny.gguf") {
		t.Fatalf("after load: tab %d, chat says %q", u.tabs.SelectedIndex(), u.chat.modelLabel.Text)
	}
	if !strings.Contains(u.models.rows[1].title(u.loadedPath()), "(loaded)") || !strings.Contains(u.mach.plan.Text, "fits") {
		t.Fatalf("loaded row %q, machine plan %q", u.models.rows[1].title(u.loadedPath()), u.mach.plan.Text)
	}

	// "Open file…" adds a file from elsewhere, selected; loading it closes the first model.
	u.models.open(elsewhere)
	u.Wait()
	if len(u.models.rows) != 3 || u.models.selected != elsewhere {
		t.Fatalf("after open: rows %v, selected %q", rowPaths(u), u.models.selected)
	}
	first := be.last()
	test.Tap(u.models.loadBtn)
	u.Wait()
	if u.loadedPath() != elsewhere || !first.closed {
		t.Fatalf("loaded %q, first closed %v", u.loadedPath(), first.closed)
	}
	t.Logf("rows: %q / %q", u.models.rows[1].summary(), u.models.rows[0].summary())
}

func TestModelThatWontFit(t *testing.T) {
	small := bigMachine()
	small.RAMTotal, small.RAMAvailable = 4*gib, 2*gib+1<<20 // 1 MiB above the 2 GiB reserve
	be := &fakeBackend{prof: small}
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	path := tinyModelFile(t, dirs.Models, "tiny.gguf")
	u := startUI(t, be, dirs, Options{})
	u.models.list.Select(u.models.index(path))
	if !u.models.loadBtn.Disabled() {
		t.Fatal("Load enabled for a model that won't fit")
	}
	if !strings.Contains(u.models.detail.Text, "Won't fit") || !strings.Contains(u.models.detail.Text, "Cannot load: it does not fit") {
		t.Fatalf("detail %q", u.models.detail.Text)
	}
	test.Tap(u.models.loadBtn)
	u.Wait()
	if len(be.loads) != 0 {
		t.Fatal("a disabled Load loaded")
	}
	t.Logf("detail: %s", u.models.detail.Text)
}

func TestChatTurnStreamsAndSaves(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hum", "ming", "birds ", "hover."}}
	u, dirs := newTestUI(t, be, Options{})
	path := tinyModelFile(t, dirs.Models, "tiny.gguf")
	u.models.refresh()
	u.Wait()
	if !u.chat.sendBtn.Disabled() {
		t.Fatal("Send enabled with no model")
	}
	pickAndLoad(t, u, path)
	u.chat.system.SetText("Be brief.")
	say(t, u, "What do hummingbirds do?")

	msgs := u.chat.conv.Messages
	if len(msgs) != 2 || msgs[1].Content != "Hummingbirds hover." || msgs[1].Tokens != 5 || msgs[1].Stopped {
		t.Fatalf("conversation %+v", msgs)
	}
	turns := be.last().lastTurns()
	if len(turns) != 2 || turns[0].Role != "system" || turns[0].Content != "Be brief." || turns[1].Content != "What do hummingbirds do?" {
		t.Fatalf("model got turns %+v", turns)
	}
	if got := shownTexts(u); len(got) != 2 || got[1] != "Hummingbirds hover." {
		t.Fatalf("view shows %q", got)
	}
	if st := u.chat.status; st.rate.Text != "25.0 tok/s" || st.context.Text != "context 24 / 4096" || st.seed.Text != "exact" {
		t.Fatalf("status %q", st)
	}
	if u.chat.input.Text != "" || u.chat.sendBtn.Disabled() || u.chat.regenBtn.Disabled() {
		t.Fatal("input not cleared or buttons not ready after the turn")
	}
	saved, err := conversation.Store{Dir: dirs.Chats}.Load(u.chat.conv.ID)
	if err != nil || len(saved.Messages) != 2 || saved.System != "Be brief." || saved.Title != "What do hummingbirds do?" {
		t.Fatalf("saved %+v, %v", saved, err)
	}
	if len(u.chat.lib.shown) != 1 {
		t.Fatalf("saved list %+v", u.chat.lib.shown)
	}

	// Copy puts a message on the clipboard.
	test.Tap(u.chat.views[1].copyBtn)
	if got := fyne.CurrentApp().Clipboard().Content(); got != "Hummingbirds hover." {
		t.Fatalf("clipboard %q", got)
	}
	t.Logf("status: %s", u.chat.status)
}

// TestVariedAnswersSample checks the answers choice: Exact asks the model for greedy answers,
// Varied for sampled ones with a fresh nonzero seed each, which the saved answer and the status
// line record.
func TestVariedAnswersSample(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hello."}}
	u := newLoadedUI(t, be)
	say(t, u, "Hi")
	u.chat.answers.SetSelected(answersVaried)
	say(t, u, "Again")
	u.chat.regenerate()
	u.Wait()
	m := be.last()
	m.mu.Lock()
	sp := slices.Clone(m.sampling)
	m.mu.Unlock()
	if len(sp) != 3 || sp[0] != nil || sp[1] == nil || sp[2] == nil {
		t.Fatalf("the model was asked with %v", sp)
	}
	if sp[1].Temperature != variedSampling(1).Temperature || sp[1].Seed > engine.MaxSeed || sp[1].Seed == sp[2].Seed {
		t.Fatalf("varied answers sampled with %+v and %+v", *sp[1], *sp[2])
	}
	msgs := u.chat.conv.Messages
	if last := msgs[len(msgs)-1]; last.Seed == nil || *last.Seed != sp[2].Seed || msgs[1].Seed != nil {
		t.Fatalf("saved seeds %v (greedy answer %v), asked with %d", last.Seed, msgs[1].Seed, sp[2].Seed)
	}
	if got := u.chat.status.seed.Text; got != fmt.Sprintf("seed %d", sp[2].Seed) {
		t.Fatalf("status %q", u.chat.status)
	}
}

// waitPieces waits until the model has emitted n pieces (without a deadline: the test binary's
// -timeout catches a hang, and a loaded machine is never mistaken for one).
func waitPieces(t *testing.T, m *fakeModel, n int) {
	t.Helper()
	for range n {
		<-m.emitted
	}
}

func TestStopKeepsThePartialAnswer(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"one ", "two ", "three"}, gated: true}
	u := newLoadedUI(t, be)
	m := be.last()

	sendAndWaitForAPiece(t, u, m, "Count.")
	if !u.chat.busy() || u.chat.stopBtn.Disabled() || !u.chat.sendBtn.Disabled() || !u.models.loadBtn.Disabled() {
		t.Fatal("while answering: Stop should be the only way out (Send and Load disabled)")
	}
	// The answer streams into the view as it comes, the last piece before a pause included.
	view := u.chat.turn.view.body
	waitFor(t, func() bool { u.flush(); return view.text == "one " })
	m.release <- struct{}{}
	waitPieces(t, m, 1)
	waitFor(t, func() bool { u.flush(); return view.text == "one two " })
	test.Tap(u.chat.stopBtn)
	u.Wait()
	msgs := u.chat.conv.Messages
	if len(msgs) != 2 || msgs[1].Content != "one two " || !msgs[1].Stopped {
		t.Fatalf("after Stop: %+v", msgs)
	}
	if !strings.HasPrefix(u.chat.status.note.Text, "Stopped · ") || u.chat.status.rate.Text != "25.0 tok/s" || u.chat.busy() {
		t.Fatalf("status %q, busy %v", u.chat.status, u.chat.busy())
	}
}

func TestRegenerateAndEdit(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Answer."}}
	u := newLoadedUI(t, be)
	m := be.last()
	say(t, u, "First question")
	say(t, u, "Second question")
	if len(u.chat.conv.Messages) != 4 {
		t.Fatalf("messages %+v", u.chat.conv.Messages)
	}

	test.Tap(u.chat.regenBtn)
	u.Wait()
	if n := len(u.chat.conv.Messages); n != 4 || len(m.turns) != 3 {
		t.Fatalf("after Regenerate: %d messages, %d replies", n, len(m.turns))
	}
	if turns := m.lastTurns(); len(turns) != 3 || turns[2].Content != "Second question" {
		t.Fatalf("regenerate sent %+v", turns)
	}

	test.Tap(u.chat.editBtn)
	if u.chat.input.Text != "Second question" {
		t.Fatalf("edit put %q in the input", u.chat.input.Text)
	}
	u.chat.input.SetText("Second question, rephrased")
	test.Tap(u.chat.sendBtn)
	u.Wait()
	msgs := u.chat.conv.Messages
	if len(msgs) != 4 || msgs[2].Content != "Second question, rephrased" || msgs[3].Content != "Answer." {
		t.Fatalf("after edit and resend: %+v", msgs)
	}
	if turns := m.lastTurns(); len(turns) != 3 || turns[1].Content != "Answer." || turns[2].Content != "Second question, rephrased" {
		t.Fatalf("resend sent %+v", turns)
	}
}

func TestNewChatAndOpenSaved(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"Hi."}}
	u := newLoadedUI(t, be)
	say(t, u, "Hello there")
	first := u.chat.conv.ID
	test.Tap(u.chat.lib.newBtn)
	if len(u.chat.conv.Messages) != 0 || u.chat.conv.ID == first || len(u.chat.messages.Objects) != 0 {
		t.Fatal("New chat did not start an empty conversation")
	}
	say(t, u, "Another chat")
	if len(u.chat.lib.shown) != 2 || u.chat.lib.shown[0].Title != "Another chat" {
		t.Fatalf("saved list %+v", u.chat.lib.shown)
	}
	u.chat.lib.list.Select(1)
	if u.chat.conv.ID != first || shownTexts(u)[0] != "Hello there" {
		t.Fatalf("opened %s showing %q", u.chat.conv.ID, shownTexts(u))
	}
}

func TestCloseStopsGenerationAndSaves(t *testing.T) {
	be := &fakeBackend{prof: bigMachine(), answer: []string{"partial ", "never"}, gated: true}
	u := newLoadedUI(t, be)
	m := be.last()
	sendAndWaitForAPiece(t, u, m, "Tell me everything.")
	id := u.chat.conv.ID

	u.Close() // hangs to the test binary's -timeout if generation is not stopped
	saved, err := conversation.Store{Dir: u.dirs.Chats}.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Messages) != 2 || saved.Messages[1].Content != "partial " || !saved.Messages[1].Stopped {
		t.Fatalf("saved on close: %+v", saved.Messages)
	}
	if !m.closed {
		t.Fatal("the model was not closed")
	}
}

func TestMachineScreen(t *testing.T) {
	be := &fakeBackend{prof: bigMachine()}
	u, dirs := newTestUI(t, be, Options{})
	path := tinyModelFile(t, dirs.Models, "tiny.gguf")
	u.models.refresh()
	u.Wait()
	for name, want := range map[string]string{
		"Processor":   "Test CPU 9000",
		"Cores":       "2 physical, 4 logical",
		"SIMD":        "AVX2 FMA AVX512F",
		"Kernels":     "avx512 (the fastest tier",
		"RAM":         "16.00 GiB total, 12.00 GiB available",
		"Reserve":     "2.00 GiB kept for the system",
		"Models disk": "2.00 GB/s (512 MiB read in 268ms, unbuffered)",
		"GPU":         "none used",
	} {
		if got := u.mach.values[name].Text; !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to contain %q", name, got, want)
		}
	}
	u.models.list.Select(u.models.index(path))
	if !strings.Contains(u.mach.plan.Text, "OLMoE tiny random q8_0 — fits") || !strings.Contains(u.mach.plan.Text, "16 units") {
		t.Fatalf("plan %q", u.mach.plan.Text)
	}
	t.Logf("plan: %s", u.mach.plan.Text)
}

func TestMachineError(t *testing.T) {
	test.NewTempApp(t)
	u := startUI(t, &failingMachine{}, library.DirsAt(t.TempDir()), Options{})
	if got := u.mach.values["Processor"].Text; !strings.Contains(got, "probe failed") {
		t.Fatalf("processor row %q", got)
	}
}

type failingMachine struct{ fakeBackend }

func (*failingMachine) Machine(context.Context) (MachineReport, error) {
	return MachineReport{}, errors.New("probe failed")
}
