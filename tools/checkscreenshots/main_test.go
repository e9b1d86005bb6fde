package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drawn returns a w×h image like a screen: a background with bands of text-like pixels in a
// spread of greys.
func drawn(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{23, 23, 24, 255}
			if y%20 < 8 && x%9 < 5 {
				v := uint8(100 + (x*7+y*3)%150)
				c = color.RGBA{v, v, v, 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	f, err := os.Create(path)
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

// The checker passes drawn screenshots of the right size and fails, naming the file and the
// reason, on a blank one, a single stray pixel on a background, a wrong size, a missing file
// and a file that is not a PNG.
func TestCheck(t *testing.T) {
	const w, h = 110, 72
	good := drawn(w, h)
	blank := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range blank.Pix {
		blank.Pix[i] = 0xee
	}
	stray := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(stray.Pix, blank.Pix)
	for i := range 20 {
		stray.Set(i, 0, color.RGBA{uint8(10 * i), 0, 0, 255}) // 20 colours, 0.25% of the pixels
	}
	for _, c := range []struct {
		name string
		img  image.Image // nil: no file
		raw  string      // written instead of img when set
		want string      // "" for ok
	}{
		{"good", good, "", ""},
		{"blank", blank, "", "FAIL: blank: 1 distinct colours, want at least 16"},
		{"stray", stray, "", "FAIL: blank: 0.25% of pixels differ from the background, want at least 1.00%"},
		{"wide", drawn(w+1, h), "", "FAIL: size 111x72, want 110x72"},
		{"short", drawn(w, h/2), "", "FAIL: size 110x36, want 110x72"},
		{"missing", nil, "", "FAIL: open"},
		{"text", nil, "not a png", "FAIL: not a PNG"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "models.png")
			switch {
			case c.raw != "":
				if err := os.WriteFile(path, []byte(c.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			case c.img != nil:
				writePNG(t, path, c.img)
			}
			var out, errOut strings.Builder
			code := run([]string{"-size", "110x72", "-screens", "models", dir}, &out, &errOut)
			t.Logf("%s", strings.TrimSpace(out.String()))
			if c.want == "" {
				if code != 0 || !strings.Contains(out.String(), "models.png: ok: 110x72, ") {
					t.Fatalf("exit %d, printed %q %q", code, out.String(), errOut.String())
				}
				return
			}
			if code != 1 || !strings.Contains(out.String(), path+": "+c.want) {
				t.Fatalf("exit %d, printed %q, want exit 1 and %q", code, out.String(), c.want)
			}
		})
	}
}

// measure counts colours and the background's share exactly.
func TestMeasure(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 10, 10))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	img.Set(1, 0, color.RGBA{0, 255, 0, 255})
	img.Set(2, 0, color.RGBA{0, 255, 0, 255})
	st := measure(img)
	if st.colours != 3 || st.content != 0.03 {
		t.Fatalf("measure: %+v, want 3 colours and 0.03", st)
	}
}

// Every screen is checked, and one failure among good ones fails the run.
func TestRunAllScreens(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"models", "chat"} {
		writePNG(t, filepath.Join(dir, name+".png"), drawn(110, 72))
	}
	var out, errOut strings.Builder
	if code := run([]string{"-size", "110x72", dir}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d with machine.png missing", code)
	}
	if strings.Count(out.String(), ": ok: ") != 2 || !strings.Contains(errOut.String(), "1 of 3 screenshots failed") {
		t.Fatalf("printed %q %q", out.String(), errOut.String())
	}
	if code := run([]string{"-size", "110by72", dir}, &out, &errOut); code != 2 {
		t.Fatalf("bad -size: exit %d, want 2", code)
	}
}
