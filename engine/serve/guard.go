package serve

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
)

// ServeHTTP checks what any request must pass before the routes see it, in this order:
//
//   - the Host header names a loopback host or one of Hosts (403 otherwise): a web page cannot
//     reach a loopback server through a name of its own that resolves to 127.0.0.1 (DNS
//     rebinding), since its requests then carry that name;
//   - a request with an Origin (a browser's) comes from one of Origins (403 otherwise), and a
//     preflight (OPTIONS with Access-Control-Request-Method) from one is answered here;
//   - with an APIKey, every /v1 and /api route has "Authorization: Bearer KEY" (401 otherwise);
//     /health and / stay open so that a supervisor can watch the server without the key;
//   - a POST's body is JSON (415 otherwise): a page's form or text/plain POST, which browsers
//     send without a preflight, is refused before it can take the model (under /api/, only
//     when it comes from a page: Ollama's clients and examples post JSON as a form).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		writeErrorFor(w, r, &apiError{status: http.StatusForbidden, typ: "invalid_request_error", code: "host_not_allowed",
			msg: fmt.Sprintf("Host %q is not a name of this server (loopback names only, unless it is started on another address)", r.Host)})
		return
	}
	if len(s.Origins) > 0 { // the answer depends on the origin: caches must keep them apart
		w.Header().Add("Vary", "Origin")
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.originAllowed(origin) {
			writeErrorFor(w, r, &apiError{status: http.StatusForbidden, typ: "invalid_request_error", code: "origin_not_allowed",
				msg: fmt.Sprintf("requests from pages of %s are not allowed (trochilus serve -cors %s allows them)", origin, origin)})
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			// The page's client decides which headers it sends (openai-node adds its x-stainless-*
			// ones): an allowed origin may send any, so the ones asked for are allowed.
			allowHeaders := r.Header.Get("Access-Control-Request-Headers")
			if allowHeaders == "" {
				allowHeaders = "Authorization, Content-Type"
			}
			h.Set("Access-Control-Allow-Headers", allowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if s.APIKey != "" && (strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, "/api/")) && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="trochilus"`)
		writeErrorFor(w, r, &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
			msg: "missing or incorrect API key: send the server's key as \"Authorization: Bearer KEY\""})
		return
	}
	// Ollama's own examples post with `curl -d`, whose Content-Type is a form's: a request to
	// /api/ without an Origin (no browser page sent it; a page's cross-site POST carries one,
	// checked above) is read as JSON whatever its Content-Type says.
	lenient := strings.HasPrefix(r.URL.Path, "/api/") && r.Header.Get("Origin") == ""
	if r.Method == http.MethodPost && !lenient {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeErrorFor(w, r, &apiError{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error",
				msg: fmt.Sprintf("Content-Type %q: want application/json", r.Header.Get("Content-Type"))})
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// writeErrorFor answers an error in the shape of the API the request is for: Ollama's under
// /api/, OpenAI's everywhere else.
func writeErrorFor(w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeOllamaError(w, err)
		return
	}
	writeError(w, err)
}

// hostAllowed reports whether a Host header names this server: a loopback name or address,
// or one of Hosts.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true // RFC 6761: these names only ever resolve to loopback
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.ContainsFunc(s.Hosts, func(h string) bool { return h == "*" || strings.EqualFold(h, host) })
}

func (s *Server) originAllowed(origin string) bool {
	return slices.ContainsFunc(s.Origins, func(o string) bool {
		return o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
	})
}

// authorized compares the bearer token with the key in constant time, so that the time an
// answer takes tells nothing of the key.
func (s *Server) authorized(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.APIKey)) == 1
}
