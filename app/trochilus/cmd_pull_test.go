package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trochilus-llm/trochilus/engine/download"
	"github.com/trochilus-llm/trochilus/engine/hub"
	"github.com/trochilus-llm/trochilus/engine/library"
	"github.com/trochilus-llm/trochilus/internal/modelgen"
	"github.com/trochilus-llm/trochilus/internal/modelgen/modelgentest"
)

// fakeHub plays Hugging Face for pull: the tree API listing a repository's files (in two
// pages), and the resolve address serving them with Range, If-Range and an ETag, the way
// http.ServeContent does.
type fakeHub struct {
	repo  string
	files map[string][]byte
	order []string
	sha   map[string]string // published SHA-256 when not the real one ("" publishes none)
	ts    *httptest.Server

	// searchAnswer is what /api/models answers (the search API); searchQuery records the query.
	searchAnswer string
	searchQuery  url.Values

	// headerless answers bounded range requests (the header reads) with the whole file, as a
	// server that ignores ranges would; whole-file downloads are served as usual.
	headerless bool

	mu        sync.Mutex
	downloads []string // the Range header of each whole-file request ("" or "bytes=N-")
	probes    int      // header reads: requests for a bounded range
}

func newFakeHub(t *testing.T, repo string) *fakeHub {
	h := &fakeHub{repo: repo, files: map[string][]byte{}, sha: map[string]string{}}
	h.ts = httptest.NewServer(h)
	t.Cleanup(h.ts.Close)
	home := t.TempDir()
	t.Setenv(library.HomeEnv, home)
	t.Setenv(hub.EndpointEnv, h.ts.URL)
	return h
}

func (h *fakeHub) add(p string, data []byte) {
	h.files[p] = data
	h.order = append(h.order, p)
}

func (h *fakeHub) published(p string) string {
	if s, ok := h.sha[p]; ok {
		return s
	}
	sum := sha256.Sum256(h.files[p])
	return hex.EncodeToString(sum[:])
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	listing := "/api/models/" + h.repo + "/tree/main"
	resolve := "/" + h.repo + "/resolve/main/"
	switch {
	case r.URL.Path == "/api/models":
		h.mu.Lock()
		h.searchQuery = r.URL.Query()
		h.mu.Unlock()
		fmt.Fprint(w, h.searchAnswer)
	case r.URL.Path == listing && r.URL.Query().Get("recursive") == "true":
		names := h.order[:len(h.order)/2]
		if r.URL.Query().Get("cursor") == "" {
			w.Header().Set("Link", `<`+listing+`?recursive=true&cursor=2>; rel="next"`)
		} else {
			names = h.order[len(h.order)/2:]
		}
		items := []string{`{"type":"directory","oid":"d1","size":0,"path":"sub"}`}
		for _, p := range names {
			lfs := ""
			if s := h.published(p); s != "" {
				lfs = fmt.Sprintf(`,"lfs":{"oid":%q,"size":%d,"pointerSize":134}`, s, len(h.files[p]))
			}
			items = append(items, fmt.Sprintf(`{"type":"file","oid":"g1","size":%d,"path":%q%s}`, len(h.files[p]), p, lfs))
		}
		fmt.Fprint(w, "["+strings.Join(items, ",")+"]")
	case strings.HasPrefix(r.URL.Path, resolve):
		p := strings.TrimPrefix(r.URL.Path, resolve)
		data, ok := h.files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		probe := false
		if rg := r.Header.Get("Range"); rg == "" || strings.HasSuffix(rg, "-") {
			h.downloads = append(h.downloads, rg)
		} else {
			h.probes++
			probe = true
		}
		h.mu.Unlock()
		if probe && h.headerless {
			w.Write(data)
			return
		}
		sum := sha256.Sum256(data)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
		http.ServeContent(w, r, path.Base(p), time.Time{}, bytes.NewReader(data))
	default:
		http.NotFound(w, r)
	}
}

func (h *fakeHub) probeCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probes
}

func (h *fakeHub) downloadRanges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.downloads...)
}

// pullTestModelBytes returns the bytes of a small Q4_K_M OLMoE-shaped GGUF (no tokenizer: the
// listing needs only its header), written once per test binary.
func pullTestModelBytes(t *testing.T) []byte {
	t.Helper()
	cfg := modelgen.Tiny(modelgen.Q4KM())
	cfg.Vocab = 512
	data, err := os.ReadFile(modelgentest.TestModel(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func modelsDir(t *testing.T) string {
	t.Helper()
	return library.DirsAt(os.Getenv(library.HomeEnv)).Models
}

// folderHolds asserts the models folder holds exactly the named files.
func folderHolds(t *testing.T, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(modelsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("models folder holds %q, want %q", got, names)
	}
}

func TestPullChooseFile(t *testing.T) {
	files := func(paths ...string) []hub.FileInfo {
		var out []hub.FileInfo
		for _, p := range paths {
			out = append(out, hub.FileInfo{Path: p, Size: 1000})
		}
		return out
	}
	repo := files("README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "sub/m-IQ4_XS.gguf", "m-Q4_K_S.gguf",
		"big/m-Q6_K-00001-of-00002.gguf", "big/m-Q6_K-00002-of-00002.gguf", "mmproj-m-f16.gguf")
	for _, c := range []struct {
		want, got, err string
	}{
		{want: "Q4_K_M", got: "m-Q4_K_M.gguf"},
		{want: "q8_0", got: "m-Q8_0.gguf"},
		{want: "iq4_xs", got: "sub/m-IQ4_XS.gguf"},
		{want: "m-IQ4_XS.gguf", got: "sub/m-IQ4_XS.gguf"}, // a file name, found in its folder
		{want: "sub/m-IQ4_XS.gguf", got: "sub/m-IQ4_XS.gguf"},
		{want: "", got: "m-Q4_K_M.gguf"}, // several models: Q4_K_M is preferred
		{want: "Q4_K", err: "no model in org/repo is tagged Q4_K"},
		{want: "Q4_XS", err: "no model in org/repo is tagged Q4_XS"}, // not IQ4_XS
		{want: "Q6_K", err: "split in 2 parts"},
		{want: "nope.gguf", err: "has no file nope.gguf"},
	} {
		fi, err := chooseFile(repo, "org/repo", c.want)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %+v, %v; want an error with %q", c.want, fi, err, c.err)
			}
			continue
		}
		if err != nil || fi.Path != c.got {
			t.Errorf("%q: %+v, %v; want %s", c.want, fi, err, c.got)
		}
	}
	// A tag two models carry, and several models without a Q4_K_M, ask to choose, naming them.
	two := files("a/m-Q8_0.gguf", "b/m-Q8_0.gguf", "m-Q5_K_M.gguf")
	if _, err := chooseFile(two, "org/two", "Q8_0"); !errors.Is(err, errUsage) ||
		!strings.Contains(err.Error(), "a/m-Q8_0.gguf") || !strings.Contains(err.Error(), "b/m-Q8_0.gguf") {
		t.Errorf("ambiguous tag: %v", err)
	}
	if _, err := chooseFile(two, "org/two", "m-Q8_0.gguf"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "2 files named") {
		t.Errorf("ambiguous file name: %v", err)
	}
	if _, err := chooseFile(two, "org/two", ""); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "m-Q5_K_M.gguf") {
		t.Errorf("no default: %v", err)
	}
	// One model is taken whatever its tag; a projector file does not count as one.
	if fi, err := chooseFile(files("x-Q5_K_M.gguf", "mmproj-x.gguf"), "org/one", ""); err != nil || fi.Path != "x-Q5_K_M.gguf" {
		t.Errorf("single model: %+v %v", fi, err)
	}
	if _, err := chooseFile(files("README.md"), "org/none", ""); err == nil || !strings.Contains(err.Error(), "no .gguf") {
		t.Errorf("no model: %v", err)
	}
	for _, bad := range []string{"norepo", "org/", "/x", "a/b/c", "org/repo:"} {
		if _, _, err := parseTarget(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseTarget(%q): %v, want a usage error", bad, err)
		}
	}
}

// A full pull lists the repository, tells the fit from the header read over HTTP, downloads,
// verifies and lands under the file's name; pulling again finds it verified.
func TestPullDownloadsAndVerifies(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	data := pullTestModelBytes(t)
	hub.add("README.md", []byte("# hello"))
	hub.add("OLMoE-tiny-Q4_K_M.gguf", data)
	hub.add("OLMoE-tiny-Q8_0.gguf", []byte("another model"))

	code, out, errOut := runCLI("pull", "org/repo:q4_k_m")
	if code != 0 {
		t.Fatalf("pull: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("pull:\n%s%s", out, errOut)
	dest := filepath.Join(modelsDir(t), "OLMoE-tiny-Q4_K_M.gguf")
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded file: %d bytes, %v; want the %d served", len(got), err, len(data))
	}
	folderHolds(t, "OLMoE-tiny-Q4_K_M.gguf")
	for _, want := range []string{"model: olmoe, Q4_K", "downloaded and verified"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The verdict line (which one depends on this machine's RAM) comes before the download.
	verdict := regexp.MustCompile(`(?m)^(Fits: |Fits with experts from disk: |Won't fit: )`).FindStringIndex(out)
	if verdict == nil || verdict[0] > strings.Index(out, "downloaded and verified") {
		t.Errorf("no verdict line before the download:\n%s", out)
	}
	if hub.probeCount() == 0 {
		t.Error("the fit was not told from the header")
	}
	// Not a terminal: plain progress lines, no carriage returns, ending complete.
	if strings.Contains(errOut, "\r") || !strings.Contains(errOut, "OLMoE-tiny-Q4_K_M.gguf: 100%") {
		t.Errorf("progress lines:\n%q", errOut)
	}

	code, out, errOut = runCLI("pull", "org/repo:OLMoE-tiny-Q4_K_M.gguf")
	if code != 0 || !strings.Contains(out, "already downloaded and verified") {
		t.Fatalf("second pull: exit %d\n%s%s", code, out, errOut)
	}
	if n := len(hub.downloadRanges()); n != 1 {
		t.Fatalf("%d downloads, want the first pull's only", n)
	}

	// A different file under the same name is not taken for the published one.
	if err := os.WriteFile(dest, bytes.Repeat([]byte{1}, len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI("pull", "org/repo:Q4_K_M")
	if code != 1 || !strings.Contains(errOut, "is not org/repo/OLMoE-tiny-Q4_K_M.gguf") || !strings.Contains(errOut, "trochilus rm") {
		t.Fatalf("pull over another file: exit %d: %s", code, errOut)
	}

	// Without FILE the Q4_K_M file is the one taken (and found to be another here).
	code, _, errOut = runCLI("pull", "org/repo")
	if code != 1 || !strings.Contains(errOut, "is not org/repo/OLMoE-tiny-Q4_K_M.gguf") {
		t.Fatalf("pull without FILE did not pick the Q4_K_M file: exit %d: %s", code, errOut)
	}
	code, _, errOut = runCLI("pull", "org/repo:Q5_K_M")
	if code != 2 || !strings.Contains(errOut, "OLMoE-tiny-Q8_0.gguf") {
		t.Fatalf("unknown tag: exit %d: %s", code, errOut)
	}
}

// interrupter is an http.RoundTripper that cancels a pull at an exact byte: once the first
// whole-file download has handed over `after` bytes and the client asks for more. Acting
// there, not on a progress report or a timer, keeps the test independent of timing.
type interrupter struct {
	base   http.RoundTripper
	after  int64
	cancel context.CancelFunc
	mu     sync.Mutex
	done   bool
}

func (it *interrupter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := it.base.RoundTrip(r)
	rg := r.Header.Get("Range")
	if err != nil || !strings.Contains(r.URL.Path, "/resolve/") || (rg != "" && !strings.HasSuffix(rg, "-")) {
		return resp, err
	}
	it.mu.Lock()
	first := !it.done
	it.done = true
	it.mu.Unlock()
	if first {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: it.after, cancel: it.cancel}
	}
	return resp, nil
}

type cutBody struct {
	io.ReadCloser
	left   int64
	cancel context.CancelFunc
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		b.cancel()
		return 0, context.Canceled
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// pullInterrupted pulls target as Ctrl-C would stop it once cut bytes of the file have come,
// and returns what the pull printed; a pull that does not end interrupted fails the test.
func pullInterrupted(t *testing.T, target string, cut int64) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &interrupter{base: http.DefaultTransport, after: cut, cancel: cancel}}
	var out, errOut bytes.Buffer
	if err := pull(ctx, newCommandLine("pull", []string{target}, &errOut), &out, &errOut, client); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted pull returned %v, want context.Canceled\n%s%s", err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// Ctrl-C in the middle keeps the partial file and says how to resume; the next pull resumes
// at its last byte with a Range request and the result verifies.
func TestPullResumesAfterInterrupt(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	data := pullTestModelBytes(t)
	hub.add("sub/OLMoE-tiny-Q4_K_M.gguf", data)
	cut := int64(len(data) / 3)

	out, errOut := pullInterrupted(t, "org/repo:Q4_K_M", cut)
	t.Logf("interrupted pull:\n%s%s", out, errOut)
	dest := filepath.Join(modelsDir(t), "OLMoE-tiny-Q4_K_M.gguf")
	if kept := download.Partial(dest); kept != cut {
		t.Fatalf("partial file holds %d bytes, want %d", kept, cut)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("an interrupted pull left a file under the final name")
	}
	if !strings.Contains(errOut, "run 'trochilus pull org/repo:Q4_K_M' again to resume") {
		t.Fatalf("no resume hint:\n%s", errOut)
	}

	code, stdout, stderr := runCLI("pull", "org/repo:Q4_K_M")
	if code != 0 {
		t.Fatalf("resumed pull: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("resumed pull:\n%s%s", stdout, stderr)
	ranges := hub.downloadRanges()
	if want := fmt.Sprintf("bytes=%d-", cut); len(ranges) != 2 || ranges[0] != "" || ranges[1] != want {
		t.Fatalf("download requests with ranges %q, want a whole one then %q", ranges, want)
	}
	got, err := os.ReadFile(dest)
	if sum, want := sha256.Sum256(got), sha256.Sum256(data); err != nil || sum != want {
		t.Fatalf("resumed file: %d bytes, %v, SHA-256 %x; want %x", len(got), err, sum, want)
	}
	if !strings.Contains(stdout, "resuming: ") {
		t.Errorf("the resume was not announced:\n%s", stdout)
	}
	folderHolds(t, "OLMoE-tiny-Q4_K_M.gguf")
}

// A file that does not match the published SHA-256 is deleted: nothing takes the model's
// name, and no partial file stays to be resumed.
func TestPullWrongChecksum(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	hub.add("m-Q4_K_M.gguf", pullTestModelBytes(t))
	hub.sha["m-Q4_K_M.gguf"] = strings.Repeat("ab", 32)
	code, out, errOut := runCLI("pull", "org/repo")
	if code != 1 || !strings.Contains(errOut, "checksum mismatch") {
		t.Fatalf("wrong digest: exit %d\n%s%s", code, out, errOut)
	}
	folderHolds(t)
}

// Without a published SHA-256 (a file not stored with LFS) nothing is downloaded.
func TestPullRefusesUnverifiable(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	hub.add("m.gguf", pullTestModelBytes(t))
	hub.sha["m.gguf"] = ""
	code, _, errOut := runCLI("pull", "org/repo:m.gguf")
	if code != 1 || !strings.Contains(errOut, "no SHA-256") {
		t.Fatalf("unverifiable file: exit %d: %s", code, errOut)
	}
	if len(hub.downloadRanges()) != 0 {
		t.Fatal("an unverifiable file was downloaded")
	}
	// A missing repository is the hub's answer, named.
	code, _, errOut = runCLI("pull", "org/missing")
	if code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("missing repository: exit %d: %s", code, errOut)
	}
}

// A server that does not answer the header's range requests leaves the fit to the file's size;
// the download goes ahead.
func TestPullFitFromSize(t *testing.T) {
	hub := newFakeHub(t, "org/repo")
	hub.headerless = true
	hub.add("m-Q4_K_M.gguf", pullTestModelBytes(t))
	code, out, errOut := runCLI("pull", "org/repo")
	if code != 0 || !strings.Contains(out, "by the size alone") || !strings.Contains(out, "200 OK") {
		t.Fatalf("pull: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("pull:\n%s", out)
	folderHolds(t, "m-Q4_K_M.gguf")
}
