// Command trochilus-app is Trochilus' window app: pick or download a model, chat with it, and
// see what the machine offers. It needs a display; without one it says so and points to the
// command-line tool, trochilus, which needs none. With $TROCHILUS_SCREENSHOTS set to a folder it
// photographs each screen into it and quits (make screenshot; see screenshot.go).
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/trochilus-llm/trochilus/assets"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/ui"
)

// appID names the app to the desktop (its preferences and notifications).
const appID = "io.github.trochilus_llm.trochilus"

func main() { os.Exit(run(os.Stderr)) }

// run starts the window and returns the exit code.
func run(stderr io.Writer) int {
	if msg := displayProblem(); msg != "" {
		fmt.Fprintf(stderr, "trochilus-app: %s\n\n%s", msg, cliHint)
		return 1
	}
	shots := os.Getenv(screenshotsEnv)
	var tmp string
	if shots != "" {
		var err error
		if tmp, err = prepareScreenshots(); err != nil {
			fmt.Fprintf(stderr, "trochilus-app: %v\n", err)
			return 1
		}
		defer func() {
			// Fyne's settings watcher complains, on its own goroutine, when its folder
			// disappears under it; nothing is left to log once the screenshots are written.
			log.SetOutput(io.Discard)
			os.RemoveAll(tmp)
		}()
	}
	dirs, err := library.UserDirs()
	if err != nil {
		fmt.Fprintf(stderr, "trochilus-app: %v\n", err)
		return 1
	}
	a := app.NewWithID(appID)
	a.SetIcon(fyne.NewStaticResource("icon.png", assets.IconPNG()))
	// One window per data folder: two would write the same chats and partial downloads.
	lock, err := dirs.Lock()
	if errors.Is(err, library.ErrLocked) {
		fmt.Fprintf(stderr, "trochilus-app: %v\n", err)
		ui.AlreadyRunning(a, err).ShowAndRun()
		return 1
	}
	if err != nil {
		// A file system without locks: run all the same, as the app did before it had one.
		fmt.Fprintf(stderr, "trochilus-app: %v; running without the single-instance check\n", err)
	}
	defer lock.Release()
	u := ui.New(a, &ui.EngineBackend{ModelsDir: dirs.Models}, dirs, ui.Options{})
	if shots != "" {
		return runScreenshots(a, u, shots, tmp, stderr)
	}

	// Ctrl-C or a TERM signal closes the window the way its close button does: the answer
	// being generated stops, the chat is saved, downloads pause.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fyne.Do(func() {
			u.Close()
			a.Quit()
		})
	}()
	u.Window().ShowAndRun()
	u.Close()
	return 0
}

// cliHint points to the command-line tool.
const cliHint = `The command-line tool needs no display:
  trochilus cpu                         what this machine offers
  trochilus run -m MODEL.gguf -p TEXT   generate from a prompt
  trochilus inspect MODEL.gguf          what a model file holds
`
