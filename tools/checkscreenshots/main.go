// Command checkscreenshots checks the window app's screenshots (make screenshot): each named
// PNG exists, decodes, has the window's size in pixels and is not blank.
//
// Usage: checkscreenshots [-size 1100x720] [-screens models,chat,machine] DIR
//
// An image counts as drawn when it has at least -colours distinct colours and at least
// -content of its pixels differ from its most common colour (the background): a blank window,
// a single-colour fill or a background with a stray pixel or two all fail.
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// limits are what a drawn screenshot must reach.
type limits struct {
	width, height int
	colours       int     // distinct colours, at least
	content       float64 // share of pixels not the background colour, at least
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkscreenshots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.String("size", "1100x720", "the window's size in pixels, WIDTHxHEIGHT")
	screens := fs.String("screens", "models,chat,machine", "the screens, comma-separated; each is DIR/NAME.png")
	colours := fs.Int("colours", 16, "distinct colours an image must have, at least")
	content := fs.Float64("content", 0.01, "share of pixels that must differ from the background colour, at least")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: checkscreenshots [flags] DIR")
		return 2
	}
	lim := limits{colours: *colours, content: *content}
	if _, err := fmt.Sscanf(*size, "%dx%d", &lim.width, &lim.height); err != nil || lim.width <= 0 || lim.height <= 0 {
		fmt.Fprintf(stderr, "checkscreenshots: -size %q: want WIDTHxHEIGHT, both positive\n", *size)
		return 2
	}
	failed := 0
	for _, name := range strings.Split(*screens, ",") {
		path := filepath.Join(fs.Arg(0), name+".png")
		st, err := check(path, lim)
		if err != nil {
			fmt.Fprintf(stdout, "%s: FAIL: %v\n", path, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "%s: ok: %dx%d, %d colours, %.1f%% not background\n", path, lim.width, lim.height, st.colours, 100*st.content)
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "checkscreenshots: %d of %d screenshots failed\n", failed, len(strings.Split(*screens, ",")))
		return 1
	}
	return 0
}

// stats describe an image's colours.
type stats struct {
	colours int     // distinct colours
	content float64 // share of pixels not the most common colour
}

// check decodes the PNG at path and holds it to lim.
func check(path string, lim limits) (stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return stats{}, err
	}
	defer f.Close()
	// Read the header first, so a corrupt or huge PNG is refused before its pixels are
	// allocated.
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		return stats{}, fmt.Errorf("not a PNG: %w", err)
	}
	if cfg.Width != lim.width || cfg.Height != lim.height {
		return stats{}, fmt.Errorf("size %dx%d, want %dx%d", cfg.Width, cfg.Height, lim.width, lim.height)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return stats{}, err
	}
	img, err := png.Decode(f)
	if err != nil {
		return stats{}, fmt.Errorf("decoding: %w", err)
	}
	st := measure(img)
	switch {
	case st.colours < lim.colours:
		return st, fmt.Errorf("blank: %d distinct colours, want at least %d", st.colours, lim.colours)
	case st.content < lim.content:
		return st, fmt.Errorf("blank: %.2f%% of pixels differ from the background, want at least %.2f%%", 100*st.content, 100*lim.content)
	}
	return st, nil
}

// measure counts img's distinct colours and the share of pixels that are not its most
// common one.
func measure(img image.Image) stats {
	b := img.Bounds()
	counts := map[[4]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r, g, bl, a}]++
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := b.Dx() * b.Dy()
	if total == 0 {
		return stats{}
	}
	return stats{colours: len(counts), content: float64(total-most) / float64(total)}
}
