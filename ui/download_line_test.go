package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/internal/units"
)

// checkLine fails the test unless the item's bar shows want (a prefix) with a percentage that
// is its value's, and, when idle, neither a speed nor a time left.
func checkLine(t *testing.T, it *downloadItem, want string, idle bool) {
	t.Helper()
	text := it.barText()
	if !strings.HasPrefix(text, want) {
		t.Fatalf("bar %q (value %v), want %q", text, it.bar.Value, want)
	}
	if it.bar.Value != it.line.Fraction {
		t.Fatalf("bar value %v, line %v", it.bar.Value, it.line.Fraction)
	}
	if pct, _, ok := strings.Cut(strings.TrimPrefix(text, "Paused at "), "%"); ok {
		if n, err := strconv.Atoi(pct); err != nil || n != int(math.Round(100*it.bar.Value)) {
			t.Fatalf("bar %q says %s%%, its value is %v", text, pct, it.bar.Value)
		}
	}
	if idle && (strings.Contains(text, "/s") || strings.Contains(text, "left")) {
		t.Fatalf("idle bar %q shows a speed or a time left", text)
	}
}

// partialTiny puts part in the models folder as the partial file of a paused download of
// tiny.gguf, and returns the path the download finishes at.
func partialTiny(t *testing.T, dirs library.Dirs, part []byte) string {
	t.Helper()
	path := filepath.Join(dirs.Models, "tiny.gguf")
	os.MkdirAll(dirs.Models, 0o755)
	if err := os.WriteFile(download.PartialPath(path), part, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// One truthful line: the real size once the file list gave it, no speed or time left while
// paused, the finished file's size (after a restart too); nothing like 100% after a failed
// checksum is TestDownloadWrongChecksum's.
func TestDownloadLineTruthful(t *testing.T) {
	h, ts := newHub(t)
	h.holdAt[1] = 3 << 20
	u, dirs := downloadUI(t, ts, Options{})
	it := u.models.downloads.item("tiny.gguf")
	real := units.Bytes(len(h.data))
	checkLine(t, it, "about 7.00 MiB", true) // the catalog's figure, said to be one
	path := filepath.Join(dirs.Models, "tiny.gguf")

	startHeld(t, h, it, path, 3<<20)
	test.Tap(it.pause)
	u.Wait()
	pct := 100 * (3 << 20) / len(h.data)
	checkLine(t, it, "Paused at "+strconv.Itoa(pct)+"% · 3.00 MiB of "+real, true)

	// The app restarted: the paused file is shown the same way, not as "0 B".
	u.Close()
	u2 := startUI(t, &fakeBackend{prof: bigMachine()}, dirs, Options{Hub: ts.URL, Client: ts.Client()})
	it2 := u2.models.downloads.item("tiny.gguf")
	checkLine(t, it2, "Paused at "+strconv.Itoa(pct)+"% · 3.00 MiB of "+real, true)
	test.Tap(it2.start)
	u2.Wait()
	checkLine(t, it2, "100% · "+real, true)
	u2.Close()
	u3 := startUI(t, &fakeBackend{prof: bigMachine()}, dirs, Options{Hub: ts.URL, Client: ts.Client()})
	checkLine(t, u3.models.downloads.item("tiny.gguf"), "100% · "+real, true)
	t.Logf("paused: %s", it.barText())
}

// A server that ignores Range: the download restarts from zero and the window says so.
func TestDownloadRangeIgnoredNote(t *testing.T) {
	h, ts := newHub(t)
	h.noRange = true
	u, dirs := downloadUI(t, ts, Options{})
	path := partialTiny(t, dirs, h.data[:1<<20])
	it := u.models.downloads.item("tiny.gguf")
	u.models.downloads.refresh()
	test.Tap(it.start) // Resume
	u.Wait()
	if reqs := h.requests(); len(reqs) != 1 || reqs[0] != "bytes=1048576-" {
		t.Fatalf("requests %q, want one resume", reqs)
	}
	if !it.note.Visible() || !strings.Contains(it.note.Text, "started again from zero") || !strings.Contains(it.note.Text, "1.00 MiB") {
		t.Fatalf("note %q (visible %v)", it.note.Text, it.note.Visible())
	}
	if got, _ := os.ReadFile(path); len(got) != len(h.data) {
		t.Fatalf("file of %d bytes", len(got))
	}
	// The next download of it starts without the old note.
	os.Remove(path)
	h.noRange = false
	u.models.downloads.refresh()
	test.Tap(it.start)
	u.Wait()
	if it.note.Visible() {
		t.Fatalf("a download that restarted nothing shows %q", it.note.Text)
	}
	t.Logf("note: %s", it.note.Text)
}

// A catalog entry with its own digest and a rounded size: the size is not enforced, the
// digest is.
func TestDownloadCatalogSizeIsApproximate(t *testing.T) {
	h, ts := newHub(t)
	sum := sha256.Sum256(h.data)
	for _, c := range []struct {
		digest string
		ok     bool
	}{{hex.EncodeToString(sum[:]), true}, {strings.Repeat("1", 64), false}} {
		test.NewTempApp(t)
		dirs := library.DirsAt(t.TempDir())
		entries := []library.Entry{{Name: "Tiny Q8_0", Repo: "org/tiny", File: "tiny.gguf", Quant: "Q8_0",
			Size: int64(len(h.data)) + 300_000, SHA256: c.digest, URL: ts.URL + "/org/tiny/resolve/main/tiny.gguf"}}
		data, _ := json.Marshal(entries)
		os.MkdirAll(dirs.Data, 0o755)
		if err := os.WriteFile(dirs.CatalogFile(), data, 0o644); err != nil {
			t.Fatal(err)
		}
		u := startUI(t, &fakeBackend{prof: bigMachine()}, dirs, Options{Hub: ts.URL, Client: ts.Client()})
		it := u.models.downloads.item("tiny.gguf")
		test.Tap(it.start)
		u.Wait()
		_, err := os.Stat(filepath.Join(dirs.Models, "tiny.gguf"))
		if c.ok && (err != nil || !strings.HasPrefix(it.status.Text, "Downloaded and verified")) {
			t.Fatalf("a file 300 kB off the catalog's size: %q, %v", it.status.Text, err)
		}
		if !c.ok && (err == nil || !strings.Contains(it.status.Text, "SHA-256 mismatch")) {
			t.Fatalf("a wrong digest: %q, %v", it.status.Text, err)
		}
	}
}

// Cancel on a paused download asks; Keep keeps the partial file, Delete deletes it.
func TestDownloadCancelPausedAsks(t *testing.T) {
	h, ts := newHub(t)
	u, dirs := downloadUI(t, ts, Options{})
	path := partialTiny(t, dirs, h.data[:2<<20])
	it := u.models.downloads.item("tiny.gguf")
	u.models.downloads.refresh()
	test.Tap(it.cancel)
	if it.confirm == nil || !it.confirm.open || !strings.Contains(dialogText(it.confirm), "2.00 MiB") {
		t.Fatalf("no question before deleting 2 MiB: %v", it.confirm)
	}
	test.Tap(it.confirm.buttons[0]) // Keep
	if download.Partial(path) != 2<<20 || it.confirm.open {
		t.Fatal("Keep deleted the partial file or left the dialog open")
	}
	test.Tap(it.cancel)
	test.Tap(it.confirm.buttons[1]) // Delete
	if download.Partial(path) != 0 || it.start.Text != "Download" || !strings.Contains(it.status.Text, "Cancelled") {
		t.Fatalf("after Delete: partial %d, button %q, status %q", download.Partial(path), it.start.Text, it.status.Text)
	}
	if len(h.requests()) != 0 {
		t.Fatalf("requests %q", h.requests())
	}
}
