package download

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A catalog's approximate size sizes the disk check and the progress until the server says the
// real size, and is never enforced: a file larger or smaller than it arrives when its digest is
// the published one.
func TestFetchSizeHintIsApproximate(t *testing.T) {
	data, sum := testData(size)
	_, ts := newServer(t, data)
	for _, hint := range []int64{size - 12345, size + 999_999} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		var mu sync.Mutex
		var seen []Progress
		opts := quick()
		opts.OnProgress = func(p Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }
		fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, SizeHint: hint}, opts, data)
		first, last := seen[0], seen[len(seen)-1]
		if first.Total != hint || !first.Approximate {
			t.Fatalf("hint %d: first report total %d approximate %v, want the hint", hint, first.Total, first.Approximate)
		}
		if last.Phase != Done || last.Total != size || last.Approximate {
			t.Fatalf("hint %d: last report %+v, want the real size %d", hint, last, size)
		}
	}
	// The hint alone refuses a download the disk cannot hold, before any request.
	srv, ts2 := newServer(t, data)
	opts := quick()
	opts.FreeSpace = func(string) (uint64, error) { return size, nil }
	err := Fetch(context.Background(), Request{URL: ts2.URL, Path: filepath.Join(t.TempDir(), "m.gguf"), SHA256: sum, SizeHint: 1 << 30}, opts)
	if !errors.Is(err, ErrNoSpace) || srv.requests() != 0 {
		t.Fatalf("a 1 GiB hint on a disk of %d bytes: %v after %d requests", size, err, srv.requests())
	}
	// An exact Size is still enforced.
	err = Fetch(context.Background(), Request{URL: ts.URL, Path: filepath.Join(t.TempDir(), "m.gguf"), SHA256: sum, Size: size - 1}, quick())
	if err == nil || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("an exact size off by one: %v", err)
	}
	if err := Fetch(context.Background(), Request{URL: ts.URL, Path: "p", SHA256: sum, SizeHint: -1}, quick()); err == nil {
		t.Fatal("a negative size hint was taken")
	}
}

// A server that ignores Range makes the download start over; the report says how much was
// thrown away, so the window can say so.
func TestFetchReportsRangeIgnored(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.noRange = true
	path := partialAt(t, data[:2<<20])
	var last Progress
	opts := quick()
	opts.OnProgress = func(p Progress) { last = p }
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum}, opts, data)
	if last.Discarded != 2<<20 || last.Resumed != 2<<20 {
		t.Fatalf("discarded %d (resumed %d), want the 2 MiB the server did not continue", last.Discarded, last.Resumed)
	}
	// A server that honours Range discards nothing.
	srv.noRange = false
	path = partialAt(t, data[:2<<20])
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum}, opts, data)
	if last.Discarded != 0 {
		t.Fatalf("discarded %d on a resume the server honoured", last.Discarded)
	}
}

func TestRunningLine(t *testing.T) {
	const gb = 1_000_000_000
	for _, c := range []struct {
		p    Progress
		frac float64
		text string
	}{
		{Progress{Phase: Transferring, Received: 1_650_000_000, Total: 4_212_000_000, Rate: 48e6},
			0.39, "39% · 1.54 GiB of 3.92 GiB · 48.0 MB/s · 53 s left"},
		// An approximate total: said so, and never 100% however far past it the file goes.
		{Progress{Phase: Transferring, Received: 5 * gb, Total: 4 * gb, Approximate: true},
			0.99, "99% · 4.66 GiB of about 3.73 GiB · — MB/s · time left unknown"},
		// All bytes in but not yet verified: the bar is full, the words do not say 100%.
		{Progress{Phase: Verifying, Received: 4 * gb, Total: 4 * gb}, 1, "Verifying the SHA-256 of 3.73 GiB…"},
		{Progress{Phase: Done, Received: 4 * gb, Total: 4 * gb}, 1, "100% · 3.73 GiB"},
		// While waiting to retry there is no speed or time left to show.
		{Progress{Phase: Waiting, Received: gb, Total: 4 * gb, Rate: 0}, 0.25, "25% · 953.67 MiB of 3.73 GiB"},
		{Progress{Phase: Checking, Received: gb, Total: 4 * gb}, 0.25, "25% · 953.67 MiB of 3.73 GiB"},
		{Progress{Phase: Transferring, Received: 3 << 20, Rate: 2e6}, 0, "3.00 MiB received · 2.0 MB/s"},
		{Progress{Phase: Connecting}, 0, "0 B received"},
		{Progress{Phase: Transferring, Received: 4*gb - 1, Total: 4 * gb}, 0.99, "99% · 3.73 GiB of 3.73 GiB · — MB/s · time left unknown"},
	} {
		l := RunningLine(c.p)
		if l.Fraction != c.frac || l.Text != c.text {
			t.Errorf("%+v: %v %q, want %v %q", c.p, l.Fraction, l.Text, c.frac, c.text)
		}
		checkAgrees(t, l)
	}
}

// A file no download works on is shown from the folder: the real size of a finished file
// (not "0 B"), a paused file's share without speed or time left (after a restart of the app
// too, from the size its state file learnt), nothing after a failed checksum deleted it.
func TestIdleLine(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.dropAt[1] = 1 << 20
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if l := IdleLine(path, 4_210_000_000); l.Fraction != 0 || l.Text != "about 3.92 GiB" {
		t.Fatalf("nothing there: %v %q", l.Fraction, l.Text)
	}
	if l := IdleLine(path, 0); l.Text != "size unknown" {
		t.Fatalf("nothing there, no catalog size: %q", l.Text)
	}
	fetchCutOff(t, Request{URL: ts.URL, Path: path, SHA256: sum, SizeHint: 999}, once())
	// The server said the real size, which the state file keeps: the hint is not used.
	if l := IdleLine(path, 999); l.Text != "Paused at 33% · 1.00 MiB of 3.01 MiB" || l.Fraction != 0.33 {
		t.Fatalf("paused: %v %q", l.Fraction, l.Text)
	}
	os.Remove(statePath(path))
	if l := IdleLine(path, 4<<20); l.Text != "Paused at 25% · 1.00 MiB of about 4.00 MiB" {
		t.Fatalf("paused without a state file: %q", l.Text)
	}
	checkAgrees(t, IdleLine(path, 4<<20))
	if l := IdleLine(path, 0); l.Text != "Paused · 1.00 MiB kept" || l.Fraction != 0 {
		t.Fatalf("paused, no size known: %v %q", l.Fraction, l.Text)
	}
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum}, quick(), data)
	if l := IdleLine(path, 999); l.Fraction != 1 || l.Text != "100% · 3.01 MiB" {
		t.Fatalf("finished: %v %q", l.Fraction, l.Text)
	}
	// A failed checksum deletes the file: nothing is left to be 100% of.
	path2 := filepath.Join(dir, "bad.gguf")
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path2, SHA256: strings.Repeat("0", 64)}, quick())
	if !errors.Is(err, ErrChecksum) {
		t.Fatal(err)
	}
	if l := IdleLine(path2, 8<<20); l.Fraction != 0 || strings.Contains(l.Text, "100%") {
		t.Fatalf("after a failed checksum: %v %q", l.Fraction, l.Text)
	}
}

// checkAgrees fails the test when a line's percentage is not its bar's.
func checkAgrees(t *testing.T, l Line) {
	t.Helper()
	text := strings.TrimPrefix(l.Text, "Paused at ")
	pct, _, ok := strings.Cut(text, "%")
	if !ok {
		return
	}
	if n, err := strconv.Atoi(pct); err != nil || n != int(math.Round(100*l.Fraction)) {
		t.Errorf("%q: the percentage is not the bar's %v", l.Text, l.Fraction)
	}
}

func TestFormatRateAndTimeLeft(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{-1, "time left unknown"}, {1500 * time.Millisecond, "2 s left"}, {125 * time.Second, "2 min 05 s left"},
		{3*time.Hour + 7*time.Minute, "3 h 07 min left"}} {
		if got := LeftText(c.d); got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
	}
	if RateText(12.34e6) != "12.3 MB/s" || RateText(1500) != "2 kB/s" || RateText(0) != "— MB/s" {
		t.Error("RateText")
	}
}
