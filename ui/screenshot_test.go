package ui

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// TestScreenshots draws the three screens with Fyne's software painter into PNG files under
// $TROCHILUS_SCREENSHOTS (docs/screenshots for the README), running the real engine on the
// tiny random-weight model, so the chat shows what such a model answers: word salad.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("TROCHILUS_SCREENSHOTS")
	if dir == "" {
		t.Skip("set TROCHILUS_SCREENSHOTS to a folder to draw the screenshots")
	}
	path := modelgentest.TinyQ8(t)
	be := &EngineBackend{Context: chatContext}
	u, dirs := newTestUI(t, be, Options{MaxAnswer: 24})
	be.ModelsDir = dirs.Models
	fyne.CurrentApp().Settings().SetTheme(theme.DefaultTheme())
	u.models.downloads.refresh()
	if err := dirs.AddOpened(path); err != nil {
		t.Fatal(err)
	}
	u.measure()
	u.Wait()
	pickAndLoad(t, u, path)
	// Show a paused download as a user would see it.
	if it := u.models.downloads.item("OLMoE-1B-7B-0125-Instruct-Q4_K_M.gguf"); it != nil {
		it.prog = download.Progress{Phase: download.Transferring, Received: 1_650_000_000, Total: 4_212_000_000, Rate: 48e6}
		it.stop = func() {}
		it.showLine(download.RunningLine(it.prog))
		it.status.SetText("downloading…")
		it.start.Disable()
		it.pause.Enable()
		it.cancel.Enable()
		defer func() { it.stop = nil }()
	}
	u.chat.system.SetText("You are a helpful assistant.")
	say(t, u, "What is a hummingbird?")
	say(t, u, "How fast do its wings beat?")

	u.win.Resize(fyne.NewSize(1100, 720))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"models", "chat", "machine"} {
		u.tabs.SelectIndex(i)
		if name == "models" {
			u.models.list.Select(u.models.index(path))
		}
		img := u.win.Canvas().Capture()
		if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 700 || uniform(img) {
			t.Fatalf("%s: capture %v is empty or blank", name, b)
		}
		f, err := os.Create(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// uniform reports whether every pixel of img is the same colour.
func uniform(img image.Image) bool {
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			if img.At(x, y) != first {
				return false
			}
		}
	}
	return true
}
