package serve

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzRequest feeds arbitrary bodies to the request decoding both endpoints share (the one
// requests go through): whatever the bytes, a request is either refused with an error in
// OpenAI's shape that is not a server fault, or turned into options and turns, never a panic,
// and a sampled request always carries a valid sampling setting.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x","y"],"temperature":0.7,"top_k":5,"top_p":0.5,"seed":3}`,
		`{"messages":[{"role":"system","content":null,"name":"n"}],"max_tokens":0}`,
		`{"stop":"\n","logprobs":false,"tools":[],"n":1}`,
		`{"messages":[{"role":"developer","content":"x"}],"temperature":1,"top_p":0,"seed":-9223372036854775808}`,
		`{"response_format":{"type":"text"},"tool_choice":"none","user":"u","zz":1}`,
		`{"messages":[{"role":1}]}`, `[]`, `null`, `{"temperature":1e400}`, `{"temperature":1e-50}`, `{"top_p":1e-50,"temperature":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req struct {
			options
			Messages []map[string]json.RawMessage `json:"messages"`
		}
		r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
		err := decodeRequest(httptest.NewRecorder(), r, &req, nil)
		if err != nil {
			if e := asAPIError(err); e.status != 400 || e.msg == "" {
				t.Fatalf("refused as %d %q", e.status, e.msg)
			}
			return
		}
		opts, err := req.options.check()
		if err == nil && opts.Sampling != nil {
			if e := opts.Sampling.Check(); e != nil || opts.Sampling.TopP == 0 {
				t.Fatalf("accepted sampling that engine refuses or reads as all tokens: %+v: %v", *opts.Sampling, e)
			}
		}
		if turns, err := parseMessages(req.Messages, true); err == nil {
			for _, m := range turns {
				if _, ok := roles[m.Role]; !ok || m.Role == "developer" {
					t.Fatalf("a message of role %q was accepted", m.Role)
				}
			}
		}
	})
}
