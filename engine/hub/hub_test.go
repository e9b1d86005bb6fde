package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hubServer plays Hugging Face's tree API: two pages for the repository root, one for a
// subfolder.
func hubServer(t *testing.T) *httptest.Server {
	digest := strings.Repeat("0123456789abcdef", 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/models/org/repo/tree/main", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cursor") == "" {
			w.Header().Set("Link", `</api/models/org/repo/tree/main?cursor=p2>; rel="next"`)
			fmt.Fprint(w, `[{"type":"file","oid":"1111","size":1500,"path":"README.md"},
			{"type":"directory","oid":"2222","size":0,"path":"sub"}]`)
			return
		}
		fmt.Fprintf(w, `[{"type":"file","oid":"3333","size":134,"path":"m-Q4_K_M.gguf",
			"lfs":{"oid":"%s","size":4212345678,"pointerSize":134}}]`, strings.ToUpper(digest))
	})
	mux.HandleFunc("/api/models/org/repo/tree/main/sub", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"type":"file","oid":"4444","size":134,"path":"sub/x.gguf","lfs":{"oid":"%s","size":99}}]`, digest)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestLookupFile(t *testing.T) {
	ts := hubServer(t)
	ctx := context.Background()
	digest := strings.Repeat("0123456789abcdef", 4)
	fi, err := LookupFile(ctx, ts.Client(), ts.URL, "org/repo", "m-Q4_K_M.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != 4212345678 || fi.SHA256 != digest {
		t.Fatalf("found %+v", fi)
	}
	if fi, err := LookupFile(ctx, ts.Client(), ts.URL+"/", "org/repo", "sub/x.gguf"); err != nil || fi.Size != 99 {
		t.Fatalf("subfolder: %+v %v", fi, err)
	}
	for file, want := range map[string]string{
		"README.md":   "not stored with LFS",
		"absent.gguf": "not in the main branch",
	} {
		if _, err := LookupFile(ctx, ts.Client(), ts.URL, "org/repo", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
	if _, err := LookupFile(ctx, ts.Client(), ts.URL, "org/other", "m.gguf"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing repository: %v", err)
	}
}
