package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/app"

	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/ui"
)

// solid returns a 4×4 image of one colour, with pixel (0,0) set to mark when mark is not 0.
func solid(c color.RGBA, mark uint8) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			img.SetRGBA(x, y, c)
		}
	}
	if mark != 0 {
		img.SetRGBA(0, 0, color.RGBA{mark, mark, mark, 255})
	}
	return img
}

// settledCapture skips blank frames, frames still showing the previous screen and frames
// that change, and returns the first frame seen twice in a row; it gives up with a reason.
func TestSettledCapture(t *testing.T) {
	grey := color.RGBA{23, 23, 24, 255}
	prev := solid(grey, 1)
	frames := []image.Image{solid(grey, 0), solid(grey, 0), prev, prev, solid(grey, 2), solid(grey, 3), solid(grey, 3)}
	n := 0
	capture := func() image.Image { n++; return frames[min(n, len(frames))-1] }
	img, err := settledCapture(capture, prev, 0, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n != len(frames) || !sameImage(img, solid(grey, 3)) {
		t.Fatalf("settled after %d captures on %v, want %d captures and the frame marked 3", n, img.Pix[:4], len(frames))
	}

	for _, c := range []struct {
		name    string
		capture func() image.Image
		want    string
	}{
		{"blank", func() image.Image { return solid(grey, 0) }, "never drawn"},
		{"previous", func() image.Image { return prev }, "never drawn"},
		{"changing", func() image.Image { n++; return solid(grey, uint8(10+n%2)) }, "never settled"},
	} {
		_, err := settledCapture(c.capture, prev, time.Millisecond, time.Now().Add(20*time.Millisecond))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A capture without alpha (as Mesa reads back under Xvfb) becomes opaque.
func TestToRGBAOpaque(t *testing.T) {
	img := toRGBA(solid(color.RGBA{23, 23, 24, 0}, 0))
	if img.RGBAAt(3, 3) != (color.RGBA{23, 23, 24, 255}) || !singleColour(img) {
		t.Fatalf("toRGBA: %v", img.RGBAAt(3, 3))
	}
}

// takeScreenshots, on Fyne's headless driver (-tags ci; make screenshot runs the real one),
// writes one PNG per screen at the window's size, each different from the others.
func TestTakeScreenshots(t *testing.T) {
	dirs := library.DirsAt(t.TempDir())
	for _, d := range []string{dirs.Models, dirs.Chats} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a := app.NewWithID(appID)
	u := ui.New(a, &ui.EngineBackend{ModelsDir: dirs.Models}, dirs, ui.Options{})
	defer u.Close()
	fixWindowSize(u.Window())
	out := filepath.Join(t.TempDir(), "shots")
	if err := takeScreenshots(u, out, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var seen []*image.RGBA
	for _, name := range screenNames() {
		f, err := os.Open(filepath.Join(out, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rgba := toRGBA(img)
		if b := rgba.Bounds(); b.Dx() != screenshotWidth || b.Dy() != screenshotHeight || singleColour(rgba) {
			t.Fatalf("%s: %v, blank %v", name, b, singleColour(rgba))
		}
		for i, s := range seen {
			if sameImage(s, rgba) {
				t.Fatalf("%s is the same image as %s", name, screenNames()[i])
			}
		}
		seen = append(seen, rgba)
	}
}
