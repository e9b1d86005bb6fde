package main

import (
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/ui"
)

// Screenshot mode: with $TROCHILUS_SCREENSHOTS set to a folder, the app opens its window at a
// fixed size over a private, temporary data folder, brings each screen to the front in turn,
// writes what the window's driver drew to FOLDER/NAME.png and quits. tools/screenshot.sh runs
// it under Xvfb, so CI sees the real GL driver draw every screen.
const screenshotsEnv = "TROCHILUS_SCREENSHOTS"

// The window's size in screenshot mode, in pixels at scale 1 (tools/checkscreenshots checks
// the PNGs against it).
const (
	screenshotWidth  = 1100
	screenshotHeight = 720
)

// screenshotTimeout bounds the whole mode, so a driver that never draws cannot hang CI.
const screenshotTimeout = 3 * time.Minute

// screenNames returns the screens photographed, in tab order; each gives its PNG its name.
func screenNames() []string { return []string{"models", "chat", "machine"} }

// prepareScreenshots points the app at a new temporary folder for its data and the toolkit's
// settings, so screenshot mode neither reads nor changes the user's models, chats or settings,
// and fixes the scale at 1 so the window's pixels match its size whatever the display's DPI.
// It returns the folder, for the caller to remove.
func prepareScreenshots() (string, error) {
	tmp, err := os.MkdirTemp("", "trochilus-screenshots-")
	if err != nil {
		return "", fmt.Errorf("screenshots: creating a private data folder: %w", err)
	}
	for k, v := range map[string]string{
		library.HomeEnv:              filepath.Join(tmp, "data"),
		"XDG_CONFIG_HOME":            filepath.Join(tmp, "config"),
		"FYNE_SCALE":                 "1",
		"FYNE_DISABLE_DPI_DETECTION": "1",
	} {
		if err := os.Setenv(k, v); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("screenshots: setting $%s: %w", k, err)
		}
	}
	return tmp, nil
}

// fixWindowSize gives w the screenshots' size, which the user cannot change.
func fixWindowSize(w fyne.Window) {
	w.Resize(fyne.NewSize(screenshotWidth, screenshotHeight))
	w.SetFixedSize(true)
}

// runScreenshots shows the window in screenshot mode and returns the exit code: 0 once every
// PNG is written, 1 with a message on stderr otherwise. tmp is removed even on a timeout.
func runScreenshots(a fyne.App, u *ui.UI, dir, tmp string, stderr io.Writer) int {
	w := u.Window()
	fixWindowSize(w)
	timer := time.AfterFunc(screenshotTimeout, func() {
		fmt.Fprintf(stderr, "trochilus-app: screenshots: not done after %v; giving up\n", screenshotTimeout)
		os.RemoveAll(tmp)
		os.Exit(1)
	})
	defer timer.Stop()

	done := make(chan error, 1)
	go func() {
		done <- takeScreenshots(u, dir, 300*time.Millisecond)
		fyne.Do(a.Quit)
	}()
	w.ShowAndRun()
	u.Close()
	var err error
	select {
	case err = <-done:
	default:
		err = errors.New("the window closed before the screenshots were taken")
	}
	if err != nil {
		fmt.Fprintf(stderr, "trochilus-app: screenshots: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "trochilus-app: screenshots of %d screens written to %s\n", len(screenNames()), dir)
	return 0
}

// takeScreenshots runs beside the UI goroutine: it waits for the start-up jobs (the machine
// measured, the model list read), then shows each screen and writes its settled capture to
// dir/NAME.png. settle is the pause between the captures compared.
func takeScreenshots(u *ui.UI, dir string, settle time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// Wait flushes the jobs' results into the widgets, which only the UI goroutine may do; it
	// holds that goroutine meanwhile, which the jobs (machine probe, model list) never need.
	fyne.DoAndWait(u.Wait)
	deadline := time.Now().Add(screenshotTimeout)
	var prev *image.RGBA
	for _, name := range screenNames() {
		var err error
		fyne.DoAndWait(func() { err = u.ShowScreen(name) })
		if err != nil {
			return err
		}
		capture := func() image.Image {
			var img image.Image
			fyne.DoAndWait(func() { img = u.Window().Canvas().Capture() })
			return img
		}
		img, err := settledCapture(capture, prev, settle, deadline)
		if err != nil {
			return fmt.Errorf("screen %s: %w", name, err)
		}
		if b := img.Bounds(); b.Dx() != screenshotWidth || b.Dy() != screenshotHeight {
			return fmt.Errorf("screen %s: captured %dx%d pixels, want %dx%d (is the scale 1?)",
				name, b.Dx(), b.Dy(), screenshotWidth, screenshotHeight)
		}
		if err := writePNG(filepath.Join(dir, name+".png"), img); err != nil {
			return fmt.Errorf("screen %s: %w", name, err)
		}
		prev = img
	}
	return nil
}

// settledCapture captures until two captures settle apart are equal, are not a single colour
// and differ from prev (the screen shown before): the new screen has been drawn and nothing on
// it still changes. It gives up at deadline.
func settledCapture(capture func() image.Image, prev *image.RGBA, settle time.Duration, deadline time.Time) (*image.RGBA, error) {
	var last *image.RGBA
	for {
		time.Sleep(settle)
		img := toRGBA(capture())
		drawn := !singleColour(img) && (prev == nil || !sameImage(img, prev))
		if drawn && last != nil && sameImage(img, last) {
			return img, nil
		}
		last = img
		if time.Now().After(deadline) {
			if !drawn {
				return nil, errors.New("the window was never drawn: every capture is blank or shows the previous screen")
			}
			return nil, errors.New("the window never settled: consecutive captures differ")
		}
	}
}

// toRGBA copies img into an opaque RGBA image with its origin at 0,0, which sameImage
// compares byte for byte. The window is opaque, but a GL framebuffer without an alpha channel
// (Mesa's under Xvfb) reads back alpha 0, which would make the PNG fully transparent.
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Bounds(), img, b.Min, draw.Src)
	for i := 3; i < len(out.Pix); i += 4 {
		out.Pix[i] = 0xff
	}
	return out
}

// sameImage reports whether a and b have the same size and pixels.
func sameImage(a, b *image.RGBA) bool {
	return a.Bounds() == b.Bounds() && string(a.Pix) == string(b.Pix)
}

// singleColour reports whether every pixel of img has the same colour (an empty image too).
func singleColour(img *image.RGBA) bool {
	p := img.Pix
	for i := 4; i+4 <= len(p); i += 4 {
		if p[i] != p[0] || p[i+1] != p[1] || p[i+2] != p[2] || p[i+3] != p[3] {
			return false
		}
	}
	return true
}

// writePNG writes img to path as a PNG.
func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return f.Close()
}
