package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Repo is one repository a search found.
type Repo struct {
	ID        string    // owner/name
	Downloads int64     // in the last 30 days, as the Hub counts them
	Likes     int64     //
	Updated   time.Time // the last commit; zero when the Hub did not say
}

// Limits on a search: the Hub's own page limit, and the bytes read of an answer.
const (
	MaxSearchResults = 100
	maxSearchBytes   = 8 << 20
)

// Search asks hub's API (https://huggingface.co/api/models?search=...&filter=gguf) for the model
// repositories whose names contain query and that hold GGUF files, most downloaded first, at
// most limit of them (1 to MaxSearchResults). A result whose id is not a repository name is left
// out: it could not be pulled.
func Search(ctx context.Context, client *http.Client, hub, query string, limit int) ([]Repo, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, errors.New("hub: search: nothing to search for")
	}
	if limit < 1 || limit > MaxSearchResults {
		return nil, fmt.Errorf("hub: search: limit %d outside 1 to %d", limit, MaxSearchResults)
	}
	if client == nil {
		client = http.DefaultClient
	}
	q := url.Values{"search": {query}, "filter": {"gguf"}, "sort": {"downloads"}, "direction": {"-1"},
		"limit": {strconv.Itoa(limit)}}
	addr := strings.TrimRight(hub, "/") + "/api/models?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: search: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub: search %q: %w", query, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("hub: search %q: %s answered %s", query, hub, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hub: search %q: %w", query, err)
	}
	if len(body) > maxSearchBytes {
		return nil, fmt.Errorf("hub: search %q: answer larger than %d MiB", query, maxSearchBytes>>20)
	}
	var items []struct {
		ID           string `json:"id"`
		Downloads    int64  `json:"downloads"`
		Likes        int64  `json:"likes"`
		LastModified string `json:"lastModified"`
	}
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, fmt.Errorf("hub: search %q: the answer is not the JSON expected: %w", query, err)
	}
	var repos []Repo
	for _, it := range items {
		if !IsRepo(it.ID) || len(repos) == limit {
			continue
		}
		r := Repo{ID: it.ID, Downloads: max(it.Downloads, 0), Likes: max(it.Likes, 0)}
		if t, err := time.Parse(time.RFC3339, it.LastModified); err == nil {
			r.Updated = t
		}
		repos = append(repos, r)
	}
	return repos, nil
}
