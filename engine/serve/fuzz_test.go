package serve

import (
	"encoding/json"
	"testing"
)

// FuzzRequest feeds arbitrary bodies to the request parsing both endpoints share: whatever the
// bytes, a request is either refused with an error or turned into options and turns, never a
// panic, and a sampled request always carries a valid sampling setting.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x","y"],"temperature":0.7,"top_k":5,"top_p":0.5,"seed":3}`,
		`{"messages":[{"role":"system","content":null,"name":"n"}],"max_tokens":0}`,
		`{"stop":"\n","logprobs":false,"tools":[],"n":1}`,
		`{"messages":[{"role":1}]}`, `[]`, `null`, `{"temperature":1e400}`, `{"temperature":1e-50}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req struct {
			options
			Messages []map[string]json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &req) != nil {
			return
		}
		opts, err := req.options.check()
		if err == nil && opts.Sampling != nil {
			if e := opts.Sampling.Check(); e != nil {
				t.Fatalf("accepted sampling that engine refuses: %+v: %v", *opts.Sampling, e)
			}
		}
		if turns, err := parseMessages(req.Messages); err == nil {
			for _, m := range turns {
				if m.Role == "" {
					t.Fatal("a message without a role was accepted")
				}
			}
		}
	})
}
