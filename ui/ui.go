package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"

	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/ui/conversation"
)

// Options configure New.
type Options struct {
	// Client makes the download requests; nil means a client without an overall timeout.
	Client *http.Client
	// Hub is the Hugging Face address; "" means hub.Endpoint() ($HF_ENDPOINT or huggingface.co).
	Hub string
	// MaxAnswer is the most tokens one answer may have until the user chooses an answer
	// length on the Chat screen (a choice the app's preferences keep); 0 means 1024.
	MaxAnswer int
	// Now is the clock conversations are stamped with; nil means time.Now.
	Now func() time.Time
	// FreeSpace, when set, replaces the operating system's free-disk figure for downloads
	// (tests play a full disk with it).
	FreeSpace func(dir string) (uint64, error)
	// OpenFolder shows a model file in the system's file manager ("Show in folder"); nil
	// means starting xdg-open, Explorer or Finder. Tests record the call instead.
	OpenFolder func(path string) error
	// Post hands a function to the UI goroutine; nil means fyne.Do. Fyne's test driver runs
	// fyne.Do on the calling goroutine, so headless tests pass a Post that does nothing and
	// apply results on their own goroutine with Wait (or flush), as the real driver would.
	Post func(func())
}

// UI is the window app: the Models, Chat and Machine screens over a Backend.
type UI struct {
	app  fyne.App
	win  fyne.Window
	be   Backend
	dirs library.Dirs
	opts Options
	tabs *container.AppTabs
	keys *keyRouter // the window's keys: Esc, Enter in dialogs, the shortcuts

	// ctx lives as long as the window; closing it cancels every background job.
	ctx    context.Context
	cancel context.CancelFunc
	jobs   sync.WaitGroup

	machine    *MachineReport // nil until measured
	machineErr error

	models *modelsScreen
	chat   *chatScreen
	mach   *machineScreen

	loaded  ChatModel // nil when no model is loaded
	closing bool

	mu      sync.Mutex
	pending []func() // results of jobs waiting for the UI goroutine (see later)
}

// New builds the window over be, with the app's folders dirs, and starts measuring the
// machine. Show the window with Window().ShowAndRun().
func New(app fyne.App, be Backend, dirs library.Dirs, opts Options) *UI {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Hub == "" {
		opts.Hub = hub.Endpoint()
	}
	if opts.MaxAnswer <= 0 {
		opts.MaxAnswer = 1024
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Post == nil {
		opts.Post = fyne.Do
	}
	if opts.OpenFolder == nil {
		opts.OpenFolder = openFolder
	}
	u := &UI{app: app, be: be, dirs: dirs, opts: opts, keys: &keyRouter{}}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.applyTheme(u.themeChoice())
	u.win = app.NewWindow("Trochilus")
	u.models = newModelsScreen(u)
	u.chat = newChatScreen(u, conversation.Store{Dir: dirs.Chats})
	u.mach = newMachineScreen(u)
	u.tabs = container.NewAppTabs(
		container.NewTabItem("Models", u.models.content),
		container.NewTabItem("Chat", u.chat.content),
		container.NewTabItem("Machine", u.mach.content),
	)
	u.win.SetContent(u.tabs)
	u.keys.escape = func() bool {
		if !u.chat.busy() {
			return false
		}
		u.chat.stop()
		return true
	}
	u.keys.install(u.win.Canvas(), map[fyne.Shortcut]func(){newShortcut(): u.newChatKey})
	u.win.Resize(fyne.NewSize(defaultWidth, defaultHeight))
	u.win.SetCloseIntercept(func() {
		u.Close()
		u.win.Close()
	})
	u.measure()
	u.models.refresh()
	return u
}

// The window's size at start; the screens are laid out to fit down to 1000×700 as well.
const (
	defaultWidth  = 1400
	defaultHeight = 900
)

// newChatKey is Ctrl+N (Cmd+N): the Chat screen, with a new chat ready for typing.
func (u *UI) newChatKey() {
	if u.chat.busy() {
		u.chat.status.setNote("Stop the answer (Esc) before starting a new chat.")
		return
	}
	u.tabs.SelectIndex(1)
	u.chat.newChat()
	u.chat.focusInput()
}

// Window returns the app's window.
func (u *UI) Window() fyne.Window { return u.win }

// ShowScreen brings the screen named by its tab ("models", "chat" or "machine", any case) to
// the front. Call it on the UI goroutine.
func (u *UI) ShowScreen(name string) error {
	for _, it := range u.tabs.Items {
		if strings.EqualFold(it.Text, name) {
			u.tabs.Select(it)
			return nil
		}
	}
	return fmt.Errorf("ui: no screen %q (models, chat or machine)", name)
}

// run starts job on its own goroutine, counted so Close and tests can wait for it. job hands
// its results to the UI goroutine through later.
func (u *UI) run(job func(ctx context.Context)) {
	u.jobs.Add(1)
	go func() {
		defer u.jobs.Done()
		job(u.ctx)
	}()
}

// later runs fn on the UI goroutine, after the functions passed before it. Unlike a bare
// fyne.Do, what a job hands over this way is never lost when the window closes: Close runs
// whatever is still queued once the jobs have ended (a stopped answer is saved with the chat,
// a model whose load finished is closed).
func (u *UI) later(fn func()) {
	u.mu.Lock()
	u.pending = append(u.pending, fn)
	u.mu.Unlock()
	u.opts.Post(u.flush)
}

// flush runs the queued functions, on the UI goroutine.
func (u *UI) flush() {
	for {
		u.mu.Lock()
		fns := u.pending
		u.pending = nil
		u.mu.Unlock()
		if len(fns) == 0 {
			return
		}
		for _, fn := range fns {
			fn()
		}
	}
}

// Wait blocks until every background job has ended and its results are applied (for tests).
// Results applied may start further jobs (a finished download refreshes the model list), so it
// repeats until nothing is left to wait for.
func (u *UI) Wait() {
	for {
		u.jobs.Wait()
		u.mu.Lock()
		n := len(u.pending)
		u.mu.Unlock()
		if n == 0 {
			return
		}
		u.flush()
	}
}

// measure asks the backend for the machine report, once at start or again on request.
func (u *UI) measure() {
	u.mach.measuring()
	u.run(func(ctx context.Context) {
		r, err := u.be.Machine(ctx)
		u.later(func() {
			if err != nil {
				u.machineErr = err
			} else {
				u.machine, u.machineErr = &r, nil
			}
			u.mach.refresh()
			u.models.refreshVerdicts()
		})
	})
}

// Close stops what runs: the answer being generated (kept, and the chat saved), downloads
// (paused, their partial files kept); then it closes the loaded model. Called when the window
// closes; safe to call twice.
func (u *UI) Close() {
	if u.closing {
		return
	}
	u.closing = true
	u.chat.stop()
	u.cancel()
	u.jobs.Wait()
	u.flush()
	u.chat.save()
	u.mach.server.shutdown("Stopped: the window closed.")
	if u.loaded != nil {
		u.loaded.Close()
		u.loaded = nil
	}
}

// showError shows err in a dialog, which Enter and Esc close, unless the window is closing.
func (u *UI) showError(err error) {
	if err != nil && !u.closing {
		u.keys.message(u.win, "Error", err.Error(), theme.ErrorIcon())
	}
}

// setLoaded makes m the model the chat uses, closing the previous one.
func (u *UI) setLoaded(m ChatModel) {
	u.mach.server.modelChanged(u.loaded) // its session is the model's
	if u.loaded != nil {
		u.loaded.Close()
	}
	u.loaded = m
	u.chat.modelChanged()
	u.mach.refresh()
	u.models.refreshLoaded()
}

// loadedPath returns the loaded model's file, or "".
func (u *UI) loadedPath() string {
	if u.loaded == nil {
		return ""
	}
	return u.loaded.Path()
}
