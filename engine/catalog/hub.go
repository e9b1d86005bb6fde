package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
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
			return FileInfo{}, fmt.Errorf("catalog: listing %s: %w", repo, err)
		}
		for _, it := range items {
			if it.Path != file || it.Type != "file" {
				continue
			}
			if it.LFS == nil || !isDigest(it.LFS.Oid) {
				return FileInfo{}, fmt.Errorf("catalog: %s in %s is not stored with LFS: no SHA-256 is published for it", file, repo)
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
		return FileInfo{}, fmt.Errorf("catalog: %s: listing has more than %d pages", repo, maxListingPages)
	}
	return FileInfo{}, fmt.Errorf("catalog: %s is not in the main branch of %s", file, repo)
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
