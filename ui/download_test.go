package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/gguf"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// hubServer plays Hugging Face for one repository holding the tiny model: the tree API and the
// file, which can be made to drop or hang on chosen requests.
type hubServer struct {
	t      *testing.T
	data   []byte
	digest string // what the tree API publishes

	mu      sync.Mutex
	ranges  []string      // Range header of each file request
	dropAt  map[int]int   // file request -> bytes sent before the connection is cut
	holdAt  map[int]int   // file request -> bytes sent before the server waits for the client to go
	holding chan struct{} // gets a value when a held request has sent its bytes
	noRange bool          // answer every request with the whole file, as a server without ranges does
}

func newHub(t *testing.T) (*hubServer, *httptest.Server) {
	src := modelgentest.TestModel(t, modelgen.Tiny(modelgen.Uniform(gguf.TypeQ8_0)))
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	h := &hubServer{t: t, data: data, digest: hex.EncodeToString(sum[:]), dropAt: map[int]int{}, holdAt: map[int]int{},
		holding: make(chan struct{}, 10)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/models/org/tiny/tree/main", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		digest := h.digest
		h.mu.Unlock()
		fmt.Fprintf(w, `[{"type":"file","oid":"abc","size":134,"path":"tiny.gguf","lfs":{"oid":%q,"size":%d,"pointerSize":134}}]`,
			digest, len(data))
	})
	mux.HandleFunc("/org/tiny/resolve/main/tiny.gguf", h.serveFile)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return h, ts
}

func (h *hubServer) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

func (h *hubServer) serveFile(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	n := len(h.ranges)
	drop, dropping := h.dropAt[n]
	hold, holding := h.holdAt[n]
	if h.noRange {
		r.Header.Del("Range")
	}
	h.mu.Unlock()
	if !dropping && !holding {
		http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(h.data))
		return
	}
	start := 0
	if rg := r.Header.Get("Range"); rg != "" {
		start, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(h.data)-1, len(h.data)))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(h.data)-start))
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	}
	limit := min(drop+hold, len(h.data)-start)
	w.Write(h.data[start : start+limit])
	w.(http.Flusher).Flush()
	if dropping {
		panic(http.ErrAbortHandler)
	}
	h.holding <- struct{}{}
	<-r.Context().Done()
}

// downloadUI builds the window with a catalog of the one tiny model on the hub.
func downloadUI(t *testing.T, ts *httptest.Server, opts Options) (*UI, library.Dirs) {
	t.Helper()
	test.NewTempApp(t)
	dirs := library.DirsAt(t.TempDir())
	entries := []library.Entry{{Name: "Tiny Q8_0", Repo: "org/tiny", File: "tiny.gguf", Quant: "Q8_0", Size: 7 << 20}}
	data, _ := json.Marshal(entries)
	if err := os.MkdirAll(dirs.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirs.CatalogFile(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Hub, opts.Client = ts.URL, ts.Client()
	return startUI(t, &fakeBackend{prof: bigMachine()}, dirs, opts), dirs
}

// folder lists a folder's file names.
func folder(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestDownloadTinyModel(t *testing.T) {
	h, ts := newHub(t)
	h.dropAt[1] = 1 << 20 // the first transfer breaks after 1 MiB and is resumed by itself
	u, dirs := downloadUI(t, ts, Options{})
	it := u.models.downloads.item("tiny.gguf")
	if it == nil || it.status.Text != "Not downloaded." || it.start.Disabled() {
		t.Fatalf("before: %+v", it)
	}
	test.Tap(it.start)
	u.Wait()
	path := filepath.Join(dirs.Models, "tiny.gguf")
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, h.data) {
		t.Fatalf("downloaded file: %d bytes, %v", len(got), err)
	}
	if names := folder(t, dirs.Models); len(names) != 1 {
		t.Fatalf("models folder holds %q", names)
	}
	if reqs := h.requests(); len(reqs) != 2 || reqs[1] != "bytes=1048576-" {
		t.Fatalf("file requests %q, want a resume from 1 MiB", reqs)
	}
	if !strings.HasPrefix(it.status.Text, "Downloaded and verified (SHA-256): "+path) || !it.start.Disabled() || it.bar.Value != 1 {
		t.Fatalf("after: status %q", it.status.Text)
	}
	if u.models.index(path) < 0 {
		t.Fatalf("the downloaded model is not listed: %v", rowPaths(u))
	}
	t.Logf("%d bytes in %d requests %q; %s", len(got), len(h.requests()), h.requests(), it.status.Text)
}

func TestDownloadPauseResumeCancel(t *testing.T) {
	h, ts := newHub(t)
	h.holdAt[1] = 3 << 20
	h.holdAt[3] = 1 << 20
	u, dirs := downloadUI(t, ts, Options{})
	it := u.models.downloads.item("tiny.gguf")
	path := filepath.Join(dirs.Models, "tiny.gguf")

	startHeld(t, h, it, path, 3<<20)
	test.Tap(it.pause)
	u.Wait()
	if !strings.HasPrefix(it.status.Text, "Paused: 3.00 MiB kept") || it.start.Text != "Resume" || it.start.Disabled() {
		t.Fatalf("after pause: %q, button %q", it.status.Text, it.start.Text)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a paused download is in place")
	}
	if u.models.index(path) >= 0 {
		t.Fatal("a paused download is listed as a model")
	}

	test.Tap(it.start) // Resume
	u.Wait()
	if got, _ := os.ReadFile(path); !bytes.Equal(got, h.data) {
		t.Fatal("resumed download differs from the file served")
	}
	if reqs := h.requests(); len(reqs) != 2 || reqs[1] != "bytes=3145728-" {
		t.Fatalf("requests %q", reqs)
	}

	// Cancel deletes what was received.
	os.Remove(path)
	u.models.downloads.refresh()
	startHeld(t, h, it, path, 1<<20)
	// Cancel asks first; the download goes on meanwhile and nothing is deleted yet.
	test.Tap(it.cancel)
	if it.confirm == nil || !it.confirm.open || it.stop == nil || download.Partial(path) != 1<<20 {
		t.Fatalf("Cancel did not ask: dialog %v, running %v, partial %d", it.confirm, it.stop != nil, download.Partial(path))
	}
	test.Tap(it.confirm.buttons[1]) // Delete
	u.Wait()
	if names := folder(t, dirs.Models); len(names) != 0 || !strings.Contains(it.status.Text, "Cancelled") {
		t.Fatalf("after cancel: folder %q, status %q", names, it.status.Text)
	}
}

// startHeld taps Start and returns once the request the hub holds (holdAt) has sent its bytes
// and the partial file at path holds all n of them.
func startHeld(t *testing.T, h *hubServer, it *downloadItem, path string, n int64) {
	t.Helper()
	test.Tap(it.start)
	<-h.holding
	waitFor(t, func() bool { return download.Partial(path) == n })
}

// waitFor polls cond until it holds, without a deadline: the test binary's -timeout catches a
// condition that never comes, and a loaded machine is never mistaken for one.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDownloadWrongChecksum(t *testing.T) {
	h, ts := newHub(t)
	h.digest = strings.Repeat("0", 64)
	u, dirs := downloadUI(t, ts, Options{})
	it := u.models.downloads.item("tiny.gguf")
	test.Tap(it.start)
	u.Wait()
	if !strings.Contains(it.status.Text, "SHA-256 mismatch") || it.start.Text != "Retry" {
		t.Fatalf("status %q, button %q", it.status.Text, it.start.Text)
	}
	// Nothing like 100% is shown once the checksum failed.
	if strings.Contains(it.barText(), "100%") || it.bar.Value != 0 {
		t.Fatalf("after a failed checksum: bar %q (%v), status %q", it.barText(), it.bar.Value, it.status.Text)
	}
	if names := folder(t, dirs.Models); len(names) != 0 {
		t.Fatalf("a file that failed verification was left: %q", names)
	}
	if len(u.models.rows) != 0 {
		t.Fatalf("a file that failed verification is offered: %v", rowPaths(u))
	}
	t.Logf("status: %s", it.status.Text)
}

func TestDownloadFullDisk(t *testing.T) {
	h, ts := newHub(t)
	u, dirs := downloadUI(t, ts, Options{FreeSpace: func(string) (uint64, error) { return 1 << 20, nil }})
	it := u.models.downloads.item("tiny.gguf")
	test.Tap(it.start)
	u.Wait()
	if !strings.HasPrefix(it.status.Text, "Not enough disk space:") {
		t.Fatalf("status %q", it.status.Text)
	}
	if len(h.requests()) != 0 {
		t.Fatalf("the file was requested despite a full disk: %q", h.requests())
	}
	if names := folder(t, dirs.Models); len(names) != 0 {
		t.Fatalf("folder holds %q", names)
	}
	t.Logf("status: %s", it.status.Text)
}

func TestDownloadUnwritableFolder(t *testing.T) {
	h, ts := newHub(t)
	u, dirs := downloadUI(t, ts, Options{})
	// The models folder's place is taken by a file: nothing can be written there.
	os.RemoveAll(dirs.Models)
	if err := os.WriteFile(dirs.Models, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	it := u.models.downloads.item("tiny.gguf")
	test.Tap(it.start)
	u.Wait()
	if !strings.Contains(it.status.Text, "models folder "+dirs.Models) {
		t.Fatalf("status %q", it.status.Text)
	}
	if len(h.requests()) != 0 {
		t.Fatalf("requests %q", h.requests())
	}
	t.Logf("status: %s", it.status.Text)
}
