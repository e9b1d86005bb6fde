package serve

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/trochilus-llm/trochilus/engine/assistant"
	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// TestRefusalsAreBadRequests: a template refusing the conversation (its raise_exception, as
// Mistral's and Llama's do for roles out of order) and tool calls that cannot take the
// template's form are the request's fault: 400 on messages, not a 500 every SDK retries.
func TestRefusalsAreBadRequests(t *testing.T) {
	const alternate = `{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}` +
		`{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}` +
		`{{ m['content'] }}{% endfor %}`
	_, err := chat.Render(alternate, []chat.Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, chat.Options{})
	if err == nil {
		t.Fatal("the template rendered two user turns in a row")
	}
	badTurn := fmt.Errorf("rendering: %w", fmt.Errorf("%w: messages[1].tool_calls: bad", assistant.ErrBadTurn))
	for _, c := range []struct {
		name string
		err  error
	}{{"raise_exception", fmt.Errorf("assistant: rendering: %w", err)}, {"tool_calls", badTurn}} {
		e := asAPIError(c.err)
		if e.status != http.StatusBadRequest || e.param != "messages" || e.typ != "invalid_request_error" {
			t.Errorf("%s: %d %s on %q, want 400 invalid_request_error on messages (%v)", c.name, e.status, e.typ, e.param, c.err)
		}
	}
	if e := asAPIError(fmt.Errorf("some fault")); e.status != http.StatusInternalServerError {
		t.Errorf("an unknown fault: %d, want 500", e.status)
	}
}
