// Package hub is a client of Hugging Face's Hub (or a mirror of it): the file listings of a
// model repository with each file's size and SHA-256, the address a file downloads from, and
// the description of a GGUF model read from its header over HTTP range requests, so that
// whether it fits can be told before it is downloaded. Downloading is package download's job.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/trochilus-llm/trochilus/engine"
	"github.com/trochilus-llm/trochilus/gguf"
)

// FileInfo is what a Hugging Face repository publishes about one of its files.
type FileInfo struct {
	Path   string
	Size   int64
	SHA256 string // the Git LFS object id: the SHA-256 of the file's contents
}

// Limits on the repository listing, so a broken or hostile server cannot make the app read
// without end.
const (
	maxListingBytes = 16 << 20
	maxListingPages = 64
)

// LookupFile asks hub's API (https://huggingface.co/api/models/<repo>/tree/main/<dir>) for the
// size and SHA-256 of a file on the repository's main branch, following the listing's pages. A
// file stored without LFS has no SHA-256 in the listing and is an error, as is a file not
// listed.
func LookupFile(ctx context.Context, client *http.Client, hub, repo, file string) (FileInfo, error) {
	if client == nil {
		client = http.DefaultClient
	}
	dir := path.Dir(file)
	next := strings.TrimRight(hub, "/") + "/api/models/" + repo + "/tree/main"
	if dir != "." {
		next += "/" + escapePath(dir)
	}
	for page := 0; next != "" && page < maxListingPages; page++ {
		items, link, err := fetchListing(ctx, client, next)
		if err != nil {
			return FileInfo{}, fmt.Errorf("hub: listing %s: %w", repo, err)
		}
		for _, it := range items {
			if it.Path != file || it.Type != "file" {
				continue
			}
			if it.LFS == nil || !IsSHA256(it.LFS.Oid) {
				return FileInfo{}, fmt.Errorf("hub: %s in %s is not stored with LFS: no SHA-256 is published for it", file, repo)
			}
			size := it.LFS.Size
			if size == 0 {
				size = it.Size
			}
			return FileInfo{Path: file, Size: size, SHA256: strings.ToLower(it.LFS.Oid)}, nil
		}
		next = link
	}
	if next != "" {
		return FileInfo{}, fmt.Errorf("hub: %s: listing has more than %d pages", repo, maxListingPages)
	}
	return FileInfo{}, fmt.Errorf("hub: %s is not in the main branch of %s", file, repo)
}

// maxListedFiles bounds the files ListFiles collects over all pages, so a hostile listing
// cannot grow the list without end within the page limits.
const maxListedFiles = 100_000

// ListFiles returns the files on the main branch of repo, in every folder, as hub's tree API
// lists them (https://huggingface.co/api/models/<repo>/tree/main?recursive=true), following
// the listing's pages, in the order listed. A file stored with Git LFS carries the SHA-256 the
// listing publishes for it; one stored without (a README, a small config) has SHA256 "".
// Folders are not listed.
func ListFiles(ctx context.Context, client *http.Client, hub, repo string) ([]FileInfo, error) {
	if !IsRepo(repo) {
		return nil, fmt.Errorf("hub: %q is not a repository name (owner/name)", repo)
	}
	if client == nil {
		client = http.DefaultClient
	}
	next := strings.TrimRight(hub, "/") + "/api/models/" + repo + "/tree/main?recursive=true"
	var files []FileInfo
	for page := 0; next != "" && page < maxListingPages; page++ {
		items, link, err := fetchListing(ctx, client, next)
		if err != nil {
			return nil, fmt.Errorf("hub: listing %s: %w", repo, err)
		}
		for _, it := range items {
			if it.Type != "file" {
				continue
			}
			if len(files) == maxListedFiles {
				return nil, fmt.Errorf("hub: %s: listing has more than %d files", repo, maxListedFiles)
			}
			files = append(files, it.info())
		}
		next = link
	}
	if next != "" {
		return nil, fmt.Errorf("hub: %s: listing has more than %d pages", repo, maxListingPages)
	}
	return files, nil
}

// info is what a listed file is: its size is the LFS object's when stored with LFS (the
// listing's own size is then the pointer's), and its SHA-256 the LFS object id when that is
// one.
func (it listingItem) info() FileInfo {
	fi := FileInfo{Path: it.Path, Size: it.Size}
	if it.LFS != nil {
		if it.LFS.Size > 0 {
			fi.Size = it.LFS.Size
		}
		if IsSHA256(it.LFS.Oid) {
			fi.SHA256 = strings.ToLower(it.LFS.Oid)
		}
	}
	return fi
}

type listingItem struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	LFS  *struct {
		Oid  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// fetchListing gets one page of a tree listing and the address of the next page, if any.
func fetchListing(ctx context.Context, client *http.Client, addr string) ([]listingItem, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListingBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(body) > maxListingBytes {
		return nil, "", errors.New("listing page larger than 16 MiB")
	}
	var items []listingItem
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, "", fmt.Errorf("listing is not the JSON expected: %w", err)
	}
	next, err := nextLink(resp.Header.Values("Link"), resp.Request.URL)
	if err != nil {
		return nil, "", err
	}
	return items, next, nil
}

// nextLink finds the rel="next" address in Link headers, resolved against base.
func nextLink(headers []string, base *url.URL) (string, error) {
	for _, h := range headers {
		for _, part := range strings.Split(h, ",") {
			target, params, ok := strings.Cut(part, ";")
			if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				continue
			}
			target = strings.TrimSpace(target)
			if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				return "", fmt.Errorf("bad Link header %q", h)
			}
			u, err := base.Parse(strings.Trim(target, "<>"))
			if err != nil {
				return "", fmt.Errorf("bad Link header %q: %w", h, err)
			}
			return u.String(), nil
		}
	}
	return "", nil
}

// Limits on reading a GGUF header over HTTP (DescribeRemote). Real models' headers take a few
// MiB, most of it the tokenizer's vocabulary; the limits keep a hostile or broken server (or a
// file that is not a GGUF) from making the app read a whole model in small pieces.
const (
	maxRemoteHeader   = 64 << 20
	maxRemoteRequests = 256
)

// DescribeRemote reads the header of the GGUF file of size bytes at addr with HTTP range
// requests and describes the model as engine.DescribeModel does a local file, so that whether it
// fits this machine can be told before it is downloaded; a model without a name in its header
// takes the file's. It reads at most 64 MiB; a server that does not answer range requests
// (206 Partial Content) is an error.
func DescribeRemote(ctx context.Context, client *http.Client, addr string, size int64) (engine.Description, error) {
	if client == nil {
		client = http.DefaultClient
	}
	r := &rangeReader{ctx: ctx, client: client, addr: addr}
	f, err := gguf.Read(r, size)
	if err != nil {
		return engine.Description{}, fmt.Errorf("hub: reading the header of %s: %w", addr, err)
	}
	d, err := engine.DescribeModel(f)
	if err != nil {
		return engine.Description{}, fmt.Errorf("hub: %s: %w", addr, err)
	}
	if d.Name == "" {
		base := addr
		if u, err := url.Parse(addr); err == nil {
			base = u.Path
		}
		d.Name = strings.TrimSuffix(path.Base(base), path.Ext(base))
	}
	return d, nil
}

// rangeReader reads a file over HTTP, one range request per ReadAt. It holds a context
// because io.ReaderAt, which the GGUF parser reads through, takes none.
type rangeReader struct {
	ctx      context.Context
	client   *http.Client
	addr     string
	read     int64 // bytes asked for so far
	requests int
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if r.read+int64(len(p)) > maxRemoteHeader || r.requests >= maxRemoteRequests {
		return 0, fmt.Errorf("the header takes more than %d MiB or %d requests to read", maxRemoteHeader>>20, maxRemoteRequests)
	}
	r.read += int64(len(p))
	r.requests++
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.addr, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+int64(len(p))-1, 10))
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return 0, fmt.Errorf("server answered %s to a range request", resp.Status)
	}
	if cr := resp.Header.Get("Content-Range"); !strings.HasPrefix(cr, "bytes "+strconv.FormatInt(off, 10)+"-") {
		return 0, fmt.Errorf("asked for bytes from %d, server sent Content-Range %q", off, cr)
	}
	n, err := io.ReadFull(resp.Body, p)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = io.EOF // the file ends early; the parser reports which field was cut
	}
	return n, err
}

// EndpointEnv names the environment variable that replaces https://huggingface.co (a mirror),
// as Hugging Face's own tools read it.
const EndpointEnv = "HF_ENDPOINT"

// Endpoint returns the Hub's address to use: $HF_ENDPOINT, or https://huggingface.co.
func Endpoint() string {
	if h := strings.TrimRight(os.Getenv(EndpointEnv), "/"); h != "" {
		return h
	}
	return "https://huggingface.co"
}

// FileURL returns the address a file of a repository's main branch downloads from at the Hub
// at endpoint.
func FileURL(endpoint, repo, file string) string {
	return strings.TrimRight(endpoint, "/") + "/" + repo + "/resolve/main/" + escapePath(file)
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// IsSHA256 reports whether s is a SHA-256 digest in hex, as the Hub's listings give them.
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

var (
	repoName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	filePath = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
)

// IsRepo reports whether name is a repository name, owner/name, in the characters the Hub
// allows and without "..".
func IsRepo(name string) bool { return repoName.MatchString(name) && !strings.Contains(name, "..") }

// IsFilePath reports whether p is a plain relative path of a file in a repository: the Hub's
// characters, no empty or ".." element, so it cannot lead out of a folder it is joined to.
func IsFilePath(p string) bool { return filePath.MatchString(p) && !strings.Contains(p, "..") }
