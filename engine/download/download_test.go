package download

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// server serves one file and can misbehave on chosen requests. Requests are numbered from 1.
type server struct {
	mu      sync.Mutex
	data    []byte
	etag    string
	ranges  []string      // the Range header of each request ("" when none)
	dropAt  map[int]int64 // request -> bytes of body sent before the connection is cut
	stallAt map[int]int64 // request -> bytes sent before the server goes silent
	status  map[int]int   // request -> status code answered instead of the file
	noRange bool          // ignore Range headers (answer 200 with the whole file)
	release chan struct{} // closed at the end of the test, to free stalled handlers
}

func newServer(t *testing.T, data []byte) (*server, *httptest.Server) {
	s := &server{data: data, etag: `"v1"`, dropAt: map[int]int64{}, stallAt: map[int]int64{},
		status: map[int]int{}, release: make(chan struct{})}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { close(s.release); ts.Close() })
	return s, ts
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ranges)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	n := len(s.ranges)
	data, etag := s.data, s.etag
	drop, dropping := s.dropAt[n]
	stall, stalling := s.stallAt[n]
	code, failing := s.status[n]
	noRange := s.noRange
	s.mu.Unlock()

	if failing {
		http.Error(w, http.StatusText(code), code)
		return
	}
	if !dropping && !stalling && !noRange {
		// The standard library's Range and If-Range handling, as a real server would do it.
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, "model.gguf", time.Time{}, bytes.NewReader(data))
		return
	}
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" && !noRange && (r.Header.Get("If-Range") == "" || r.Header.Get("If-Range") == etag) {
		v, _ := strings.CutSuffix(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.ParseInt(v, 10, 64)
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)-int(start)))
	if start > 0 {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
		w.WriteHeader(http.StatusPartialContent)
	}
	body := data[start:]
	switch {
	case dropping:
		w.Write(body[:min(drop, int64(len(body)))])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cuts the connection mid-body
	case stalling:
		w.Write(body[:min(stall, int64(len(body)))])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
	default:
		w.Write(body)
	}
}

func testData(n int) ([]byte, string) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// quick are options for tests: fast retries, plenty of free space, and stall timers that
// never fire by themselves, so that no test depends on how fast a loaded machine moves bytes.
func quick() Options {
	return Options{Backoff: time.Millisecond, StallTimeout: 2 * time.Second,
		FreeSpace:     func(string) (uint64, error) { return 1 << 40, nil },
		newStallTimer: (&manualTimers{}).start}
}

// once are quick options with retries off: a Fetch makes one attempt.
func once() Options {
	opts := quick()
	opts.Retries = -1
	return opts
}

// fetchCutOff fetches req from a server set to cut the transfer off, with opts that do not
// retry it (see once), and fails the test if that succeeds.
func fetchCutOff(t *testing.T, req Request, opts Options) {
	t.Helper()
	if err := Fetch(context.Background(), req, opts); err == nil {
		t.Fatal("dropped download succeeded")
	}
}

// manualTimers make stall timers that fire only when the test calls fire.
type manualTimers struct {
	mu     sync.Mutex
	latest *manualTimer // the timer of the attempt under way
}

type manualTimer struct {
	mu      sync.Mutex
	stalled func()
	armed   bool
}

func (m *manualTimers) start(_ time.Duration, stalled func()) stallTimer {
	t := &manualTimer{stalled: stalled, armed: true}
	m.mu.Lock()
	m.latest = t
	m.mu.Unlock()
	return t
}

// fire plays the latest attempt's server having been silent for the whole stall timeout.
func (m *manualTimers) fire() {
	m.mu.Lock()
	t := m.latest
	m.mu.Unlock()
	if t == nil {
		panic("no stall timer to fire")
	}
	t.mu.Lock()
	armed := t.armed
	t.armed = false
	t.mu.Unlock()
	if armed {
		t.stalled()
	}
}

func (t *manualTimer) Reset(time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	t.armed = true
	return was
}

func (t *manualTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

// hooks is an http.RoundTripper that lets a test act at an exact point of a transfer: on a
// chosen request (numbered from 1), once the body has handed the client a given number of
// bytes and the client asks for more, it calls the test's function before reading on. When
// the server went silent at that byte, this is the moment the client starts waiting on it.
type hooks struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    int
	at   map[int]hook
}

type hook struct {
	after int64
	do    func()
}

func newHooks(ts *httptest.Server) *hooks {
	return &hooks{base: ts.Client().Transport, at: map[int]hook{}}
}

func (h *hooks) client() *http.Client { return &http.Client{Transport: h} }

func (h *hooks) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.n++
	hk, ok := h.at[h.n]
	h.mu.Unlock()
	resp, err := h.base.RoundTrip(r)
	if err != nil || !ok {
		return resp, err
	}
	resp.Body = &hookBody{ReadCloser: resp.Body, left: hk.after, do: hk.do}
	return resp, nil
}

type hookBody struct {
	io.ReadCloser
	left int64 // bytes to hand over before calling do
	do   func()
	done bool
}

func (b *hookBody) Read(p []byte) (int, error) {
	if b.left == 0 && !b.done {
		b.done = true
		b.do()
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	return n, err
}

// fetchWhole fetches req with opts and checks that the download completed: req.Path holds
// exactly want and nothing was left beside it.
func fetchWhole(t *testing.T, req Request, opts Options, want []byte) {
	t.Helper()
	if err := Fetch(context.Background(), req, opts); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(req.Path)
	if err != nil {
		t.Fatalf("reading the downloaded file: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("downloaded %d bytes, not the %d served (or different bytes)", len(got), len(want))
	}
	checkOnly(t, filepath.Dir(req.Path), filepath.Base(req.Path))
}

// partialAt returns a path in a fresh folder whose partial file holds part, as a download cut
// off after len(part) bytes leaves it.
func partialAt(t *testing.T, part []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(PartialPath(path), part, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkOnly asserts dir holds exactly the named files.
func checkOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("folder holds %q, want %q", got, names)
	}
}

const size = 3<<20 + 12345

func TestFetchWhole(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	path := filepath.Join(t.TempDir(), "models", "m.gguf") // the folder does not exist yet
	var phases []Phase
	var last Progress
	opts := quick()
	opts.OnProgress = func(p Progress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		last = p
	}
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts, data)
	if srv.requests() != 1 || srv.ranges[0] != "" {
		t.Fatalf("requests with ranges %q, want one without a range", srv.ranges)
	}
	want := []Phase{Connecting, Transferring, Verifying, Done}
	if fmt.Sprint(phases) != fmt.Sprint(want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	if last.Received != size || last.Total != size || last.Fraction() != 1 {
		t.Fatalf("last progress %+v", last)
	}
	t.Logf("%d bytes in 1 request; phases %v", size, phases)

	// A second Fetch does not overwrite the file.
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum}, opts)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("fetching over an existing file: %v, want ErrExists", err)
	}
}

// An interrupted transfer with no retries left fails with a message saying what is kept; the
// next Fetch resumes with a Range request from the end of the partial file.
func TestFetchResumesAfterDrop(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.dropAt[1] = 1<<20 + 777
	path := filepath.Join(t.TempDir(), "m.gguf")
	opts := once()
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts)
	if err == nil {
		t.Fatal("a dropped connection with retries off succeeded")
	}
	kept := Partial(path)
	if kept <= 0 || kept > 1<<20+777 {
		t.Fatalf("partial file holds %d bytes after a drop at %d", kept, 1<<20+777)
	}
	if !strings.Contains(err.Error(), "kept in "+PartialPath(path)) || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("error does not say the partial file is kept: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("destination exists after a failed download: %v", err)
	}
	t.Logf("drop: %v", err)

	var resumed int64
	opts.OnProgress = func(p Progress) { resumed = p.Resumed }
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts, data)
	if want := "bytes=" + strconv.FormatInt(kept, 10) + "-"; srv.requests() != 2 || srv.ranges[1] != want {
		t.Fatalf("requests %q, want a second one with Range %q", srv.ranges, want)
	}
	if resumed != kept {
		t.Fatalf("progress says %d bytes resumed, partial file had %d", resumed, kept)
	}
	t.Logf("resumed from byte %d of %d", kept, size)
}

// Within one Fetch, drops and a stall are retried from where they stopped.
func TestFetchRetriesDropsAndStalls(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.dropAt[1] = 500_000
	srv.stallAt[2] = 700_000
	srv.status[3] = http.StatusServiceUnavailable
	path := filepath.Join(t.TempDir(), "m.gguf")
	opts := quick()
	// The stall timer fires when, and only when, the client has taken the 700,000 bytes the
	// second request sends and waits for more from a server that went silent.
	timers := &manualTimers{}
	opts.newStallTimer = timers.start
	h := newHooks(ts)
	h.at[2] = hook{after: 700_000, do: timers.fire}
	opts.Client = h.client()
	var waits []string
	opts.OnProgress = func(p Progress) {
		if p.Phase == Waiting {
			waits = append(waits, p.Err.Error())
		}
	}
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts, data)
	if srv.requests() != 4 {
		t.Fatalf("%d requests (%q), want 4", srv.requests(), srv.ranges)
	}
	if srv.ranges[1] != "bytes=500000-" || srv.ranges[2] != "bytes=1200000-" || srv.ranges[3] != "bytes=1200000-" {
		t.Fatalf("ranges %q", srv.ranges)
	}
	if len(waits) != 3 || !strings.Contains(waits[1], "stalled") || !strings.Contains(waits[2], "503") {
		t.Fatalf("retry reasons %q", waits)
	}
	t.Logf("4 requests, ranges %q; retry reasons %q", srv.ranges, waits)
}

// The production stall timer (time.AfterFunc) ends an attempt whose server sends nothing. The
// test asserts only what no machine's speed can change: the first attempt, which the server
// never answers with a byte, ends as a stall, and the file arrives. A healthy attempt taken for
// a stall on a very loaded machine would only cost a retry from where it stopped.
func TestFetchStallTimerFires(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.stallAt[1] = 0
	path := filepath.Join(t.TempDir(), "m.gguf")
	opts := quick()
	opts.newStallTimer = nil // the real one
	opts.StallTimeout = 500 * time.Millisecond
	var waits []string
	opts.OnProgress = func(p Progress) {
		if p.Phase == Waiting {
			waits = append(waits, p.Err.Error())
		}
	}
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts, data)
	if len(waits) == 0 || !strings.Contains(waits[0], "stalled") || srv.ranges[0] != "" {
		t.Fatalf("retry reasons %q, ranges %q: want the first attempt to stall", waits, srv.ranges)
	}
}

// PartialProgress tells an unfinished download's share from its partial file and state.
func TestPartialProgress(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.dropAt[1] = 100_000
	path := filepath.Join(t.TempDir(), "m.gguf")
	if got, total := PartialProgress(path); got != 0 || total != 0 {
		t.Fatalf("nothing downloaded: %d of %d", got, total)
	}
	fetchCutOff(t, Request{URL: ts.URL, Path: path, SHA256: sum}, once())
	got, total := PartialProgress(path)
	if got != Partial(path) || got <= 0 || total != size {
		t.Fatalf("PartialProgress %d of %d, want %d of %d", got, total, Partial(path), size)
	}
}

func TestFetchGivesUpAfterRetries(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	for i := 1; i <= 10; i++ {
		srv.status[i] = http.StatusBadGateway
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	opts := quick()
	opts.Retries = 2
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadGateway || !strings.Contains(err.Error(), "3 failed attempts") {
		t.Fatalf("error %v, want a 502 StatusError after 3 attempts", err)
	}
	if srv.requests() != 3 {
		t.Fatalf("%d requests, want 3", srv.requests())
	}
}

func TestFetchNotFoundIsNotRetried(t *testing.T) {
	data, sum := testData(1000)
	srv, ts := newServer(t, data)
	srv.status[1] = http.StatusNotFound
	path := filepath.Join(t.TempDir(), "m.gguf")
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum}, quick())
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || srv.requests() != 1 {
		t.Fatalf("error %v after %d requests, want 404 after 1", err, srv.requests())
	}
	checkOnly(t, filepath.Dir(path))
}

// Cancelling the context pauses: the error is the context's, the partial file stays, and a
// later Fetch completes it.
func TestFetchPauseAndResume(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.stallAt[1] = 1 << 20
	path := filepath.Join(t.TempDir(), "m.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	opts := quick()
	// Pause once the client holds the first MiB and waits for more: not from a progress
	// report, which the clock spaces and could skip the moment.
	h := newHooks(ts)
	h.at[1] = hook{after: 1 << 20, do: cancel}
	opts.Client = h.client()
	err := Fetch(ctx, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("paused fetch returned %v, want context.Canceled", err)
	}
	if got := Partial(path); got != 1<<20 {
		t.Fatalf("partial file holds %d bytes, want %d", got, 1<<20)
	}
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, opts, data)
	if srv.ranges[1] != "bytes=1048576-" {
		t.Fatalf("resume asked for %q", srv.ranges[1])
	}
}

func TestDiscard(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.dropAt[1] = 100_000
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	fetchCutOff(t, Request{URL: ts.URL, Path: path, SHA256: sum}, once())
	checkOnly(t, dir, "m.gguf.part", "m.gguf.part.json")
	if err := Discard(path); err != nil {
		t.Fatal(err)
	}
	checkOnly(t, dir)
	if err := Discard(path); err != nil {
		t.Fatalf("discarding nothing: %v", err)
	}
}

// A file whose digest is wrong is deleted, never put in place; so is a partial file whose
// bytes are not the server's.
func TestFetchRejectsWrongChecksum(t *testing.T) {
	data, sum := testData(size)
	_, ts := newServer(t, data)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	wrong := strings.Repeat("ab", 32)
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: wrong, Size: size}, quick())
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), sum) {
		t.Fatalf("error %v, want ErrChecksum naming the digest received", err)
	}
	checkOnly(t, dir)
	t.Logf("wrong digest: %v", err)

	// A corrupt partial file (one byte flipped) resumed: the whole is rejected and removed.
	bad := bytes.Clone(data[:1<<20])
	bad[1234] ^= 1
	if err := os.WriteFile(PartialPath(path), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	err = Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, quick())
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt partial file: %v, want ErrChecksum", err)
	}
	checkOnly(t, dir)
}

func TestFetchRefusesWithoutFreeSpace(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	opts := quick()
	opts.FreeSpace = func(string) (uint64, error) { return 100 << 20, nil }
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum, Size: 8 << 30}, opts)
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "8.00 GiB") {
		t.Fatalf("error %v, want ErrNoSpace saying 8.00 GiB are needed", err)
	}
	if srv.requests() != 0 {
		t.Fatalf("%d requests made before the disk check", srv.requests())
	}
	checkOnly(t, dir)
	t.Logf("full disk: %v", err)

	// With the size unknown beforehand the check happens once the server tells it.
	err = Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum}, opts)
	if err != nil {
		t.Fatalf("3 MiB with 100 MiB free (64 MiB margin): %v", err)
	}
}

func TestFetchUnknownSizeNeedsRoom(t *testing.T) {
	data, sum := testData(size)
	_, ts := newServer(t, data)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	opts := quick()
	opts.FreeSpace = func(string) (uint64, error) { return 1 << 20, nil }
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum}, opts)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("error %v, want ErrNoSpace once the server gave the size", err)
	}
	checkOnly(t, dir) // not even an empty partial file
}

func TestFetchUnwritableFolder(t *testing.T) {
	data, sum := testData(1000)
	_, ts := newServer(t, data)
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-folder")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(file, "m.gguf")
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum}, quick())
	if err == nil || !strings.Contains(err.Error(), "models folder "+file) {
		t.Fatalf("error %v, want one naming the models folder", err)
	}
	t.Logf("unwritable folder: %v", err)

	if os.Geteuid() == 0 {
		t.Log("running as root: a read-only folder cannot be played by permissions")
		return
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	err = Fetch(context.Background(), Request{URL: ts.URL, Path: filepath.Join(ro, "m.gguf"), SHA256: sum}, quick())
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("read-only folder: %v, want a permission error", err)
	}
}

// A server that ignores Range sends the whole file again; the partial file starts over.
func TestFetchServerWithoutRanges(t *testing.T) {
	data, sum := testData(size)
	srv, ts := newServer(t, data)
	srv.noRange = true
	path := partialAt(t, data[:2<<20])
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: sum, Size: size}, quick(), data)
	if srv.ranges[0] != "bytes=2097152-" {
		t.Fatalf("first request range %q", srv.ranges[0])
	}
}

// When the file changed on the server since the partial file began, If-Range makes the server
// send the new file whole, and the partial file's old bytes are dropped.
func TestFetchFileChangedOnServer(t *testing.T) {
	old, oldSum := testData(size)
	srv, ts := newServer(t, old)
	srv.dropAt[1] = 1 << 20
	path := filepath.Join(t.TempDir(), "m.gguf")
	opts := once()
	fetchCutOff(t, Request{URL: ts.URL, Path: path, SHA256: oldSum}, opts)
	newData := bytes.Clone(old)
	newData[0] ^= 0xff // a change inside the part already received
	sum := sha256.Sum256(newData)
	srv.mu.Lock()
	srv.data, srv.etag = newData, `"v2"`
	srv.mu.Unlock()
	// The catalog now publishes the new digest; the partial file's state names the old one.
	fetchWhole(t, Request{URL: ts.URL, Path: path, SHA256: hex.EncodeToString(sum[:])}, opts, newData)
	if srv.ranges[1] != "" {
		t.Fatalf("a partial file of another digest was resumed with %q", srv.ranges[1])
	}

	// Same digest expected, server changed under it: If-Range answers 200 and the file restarts;
	// the digest then rejects it.
	dir2 := t.TempDir()
	path2 := filepath.Join(dir2, "m.gguf")
	srv.mu.Lock()
	srv.data, srv.etag = old, `"v1"`
	srv.dropAt[3] = 1 << 20
	srv.mu.Unlock()
	fetchCutOff(t, Request{URL: ts.URL, Path: path2, SHA256: oldSum}, opts)
	srv.mu.Lock()
	srv.data, srv.etag = newData, `"v2"`
	srv.mu.Unlock()
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path2, SHA256: oldSum}, opts)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("changed file: %v, want ErrChecksum", err)
	}
	checkOnly(t, dir2)
	if srv.ranges[3] != "bytes=1048576-" {
		t.Fatalf("resume range %q", srv.ranges[3])
	}
}

func TestFetchServerSizeDisagrees(t *testing.T) {
	data, sum := testData(size)
	_, ts := newServer(t, data)
	path := filepath.Join(t.TempDir(), "m.gguf")
	err := Fetch(context.Background(), Request{URL: ts.URL, Path: path, SHA256: sum, Size: size + 1}, quick())
	if err == nil || !strings.Contains(err.Error(), "expected "+strconv.Itoa(size+1)) {
		t.Fatalf("error %v, want a size disagreement", err)
	}
}

func TestFetchBadRequests(t *testing.T) {
	for _, r := range []Request{
		{URL: "http://x", Path: "p", SHA256: "12"},
		{URL: "http://x", Path: "p", SHA256: strings.Repeat("z", 64)},
		{URL: "", Path: "p", SHA256: strings.Repeat("0", 64)},
		{URL: "http://x", Path: "p", SHA256: strings.Repeat("0", 64), Size: -1},
	} {
		if err := Fetch(context.Background(), r, quick()); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

func TestProgressEstimates(t *testing.T) {
	p := Progress{Received: 25, Total: 100, Rate: 5}
	if p.Fraction() != 0.25 || p.Remaining() != 15*time.Second {
		t.Fatalf("fraction %v remaining %v", p.Fraction(), p.Remaining())
	}
	if (Progress{Received: 5}).Remaining() != -1 || (Progress{Total: 5}).Remaining() != -1 {
		t.Fatal("remaining without a total or a rate is not -1")
	}
}

func TestRateMeter(t *testing.T) {
	var m rateMeter
	t0 := time.Unix(1000, 0)
	m.reset(t0, 0)
	// 10 MB/s for 20 s in 10 ms steps; the meter keeps only the last ~5 s.
	for i := 1; i <= 2000; i++ {
		m.add(t0.Add(time.Duration(i)*10*time.Millisecond), int64(i)*100_000)
	}
	if r := m.perSecond(); r < 9.99e6 || r > 10.01e6 {
		t.Fatalf("rate %v, want 10e6", r)
	}
	// Then 1 MB/s for 10 s: the window forgets the faster past.
	for i := 1; i <= 1000; i++ {
		m.add(t0.Add(20*time.Second+time.Duration(i)*10*time.Millisecond), 200_000_000+int64(i)*10_000)
	}
	if r := m.perSecond(); r < 0.99e6 || r > 1.01e6 {
		t.Fatalf("rate %v, want 1e6", r)
	}
	allocs := testing.AllocsPerRun(100, func() { m.add(time.Now(), 1); _ = m.perSecond() })
	if allocs != 0 {
		t.Fatalf("%v allocations per sample", allocs)
	}
}

func TestParseContentRange(t *testing.T) {
	for _, c := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 10-99/100", 10, 100, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes 10-99", 0, 0, false},
		{"items 10-99/100", 0, 0, false},
		{"bytes x-99/100", 0, 0, false},
		{"bytes 10-99/5", 0, 0, false},
		{"bytes -5-99/100", 0, 0, false},
	} {
		s, n, err := parseContentRange(c.in)
		if (err == nil) != c.ok || (c.ok && (s != c.start || n != c.total)) {
			t.Errorf("%q: %d %d %v", c.in, s, n, err)
		}
	}
}

// FileSHA256 hashes a whole file with the loop resuming uses, and stops on a cancelled context.
func TestFileSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if sum, err := FileSHA256(context.Background(), p); err != nil || sum != abc {
		t.Fatalf("FileSHA256 = %q, %v; want %s", sum, err, abc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FileSHA256(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := FileSHA256(context.Background(), p+".missing"); err == nil {
		t.Fatal("a missing file hashed")
	}
}
