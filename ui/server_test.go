package ui

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/trochilus-llm/trochilus/tokenizer/chat"
)

// getModels asks the server at base for GET /v1/models with key (none if ""), returning the
// status and the ids listed.
func getModels(t *testing.T, base, key string) (int, []string, error) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("GET /v1/models: %v in %s", err, body)
		}
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return resp.StatusCode, ids, nil
}

// The switch serves the loaded model, sharing its weights: /v1/models answers on the chosen
// port with the key, a chat completion is the answer a fresh session gives, the curl line
// names the address and the key and is copied; off closes the port; unloading the model stops
// the server.
func TestServerSwitch(t *testing.T) {
	u, path := newTinyEngineUI(t, &EngineBackend{Context: chatContext}, Options{MaxAnswer: 8})
	p := u.mach.server
	if p.host.Text != defaultServerHost || p.port.Text != strconv.Itoa(defaultServerPort) {
		t.Fatalf("defaults %q:%q", p.host.Text, p.port.Text)
	}
	p.port.SetText("0") // any free port
	p.key.SetText("sekrit")
	test.Tap(p.toggle)
	l := p.running
	if l == nil || !p.toggle.Checked {
		t.Fatalf("not serving: %q", p.status.Text)
	}
	if l.chat.Model() != u.loaded.(*engineChat).c.Model() {
		t.Fatal("the server loaded the model again instead of sharing the app's")
	}
	base := l.url()
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":0") {
		t.Fatalf("url %q", base)
	}
	id := strings.TrimSuffix(filepath.Base(path), ".gguf")
	code, ids, err := getModels(t, base, "sekrit")
	if err != nil || code != http.StatusOK || len(ids) != 1 || ids[0] != id {
		t.Fatalf("GET /v1/models: %d %v %v, want [%s]", code, ids, err, id)
	}
	if code, _, _ := getModels(t, base, ""); code != http.StatusUnauthorized {
		t.Fatalf("without the key: %d, want 401", code)
	}
	if !strings.Contains(p.status.Text, base) || !strings.Contains(p.status.Text, id) {
		t.Fatalf("status %q", p.status.Text)
	}
	want := "curl " + base + "/v1/chat/completions -H 'Content-Type: application/json' -H 'Authorization: Bearer sekrit' -d '{\"model\": \"" + id + "\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello!\"}]}'"
	if p.curl.Text != want {
		t.Fatalf("curl line\n%s\nwant\n%s", p.curl.Text, want)
	}
	test.Tap(p.copyBtn)
	if got := fyne.CurrentApp().Clipboard().Content(); got != want {
		t.Fatalf("copied %q", got)
	}
	if !p.host.Disabled() || !p.port.Disabled() || !p.key.Disabled() {
		t.Fatal("the address can be edited while serving")
	}

	// The server's session answers as a fresh one does, while the chat keeps its own.
	turns := []chat.Message{{Role: "user", Content: "Hello! Who are you?"}}
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model": "`+id+`", "max_tokens": 8, "messages": [{"role": "user", "content": "Hello! Who are you?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sekrit")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(answer.Choices) != 1 {
		t.Fatalf("chat completion: %d %v %+v", resp.StatusCode, err, answer)
	}
	if fresh := freshAnswer(t, path, turns, 8); answer.Choices[0].Message.Content != fresh {
		t.Fatalf("served %q, a fresh session gives %q", answer.Choices[0].Message.Content, fresh)
	}
	say(t, u, "Hello! Who are you?")
	if got, fresh := u.chat.conv.Messages[1].Content, freshAnswer(t, path, turns, u.opts.MaxAnswer); got != fresh {
		t.Fatalf("the chat beside the server answered %q, a fresh session %q", got, fresh)
	}

	// Off: the port is closed and free again.
	addr := l.addr
	test.Tap(p.toggle)
	u.Wait()
	if p.running != nil || p.toggle.Checked || p.curl.Text != "" || p.host.Disabled() {
		t.Fatalf("after off: running %v, checked %v, curl %q", p.running, p.toggle.Checked, p.curl.Text)
	}
	if _, _, err := getModels(t, base, "sekrit"); err == nil {
		t.Fatal("the server still answers after off")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still held: %v", err)
	}
	ln.Close()
	if got := u.app.Preferences().String(prefServerHost); got != defaultServerHost {
		t.Fatalf("remembered host %q", got)
	}

	// Unloading the model stops its server first.
	test.Tap(p.toggle)
	if p.running == nil {
		t.Fatalf("not serving again: %q", p.status.Text)
	}
	base = p.running.url()
	u.setLoaded(nil)
	if p.running != nil || p.toggle.Checked || !strings.Contains(p.status.Text, "was unloaded") {
		t.Fatalf("after unload: running %v, checked %v, status %q", p.running, p.toggle.Checked, p.status.Text)
	}
	if _, _, err := getModels(t, base, "sekrit"); err == nil {
		t.Fatal("the server still answers after the model was unloaded")
	}
}

// A port in use, a bad port and an address other machines reach without a key are refused in
// the screen, the switch back off.
func TestServerRefusals(t *testing.T) {
	u, _ := newTinyEngineUI(t, &EngineBackend{Context: chatContext}, Options{})
	p := u.mach.server
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	for _, c := range []struct{ host, port, key, want string }{
		{"127.0.0.1", port, "", "Cannot start the server: listen tcp 127.0.0.1:" + port + ":"},
		{"127.0.0.1", "http", "", `Cannot start the server: port "http": want a number from 0 (any free port) to 65535`},
		{"0.0.0.0", "0", "", `Cannot start the server: "0.0.0.0" is reachable from other machines: set an API key`},
	} {
		p.host.SetText(c.host)
		p.port.SetText(c.port)
		p.key.SetText(c.key)
		test.Tap(p.toggle)
		if p.running != nil || p.toggle.Checked || !strings.HasPrefix(p.status.Text, c.want) {
			t.Errorf("%s:%s: running %v, checked %v, status %q, want %q…", c.host, c.port, p.running, p.toggle.Checked, p.status.Text, c.want)
		}
		if p.host.Disabled() {
			t.Errorf("%s:%s: the address cannot be corrected", c.host, c.port)
		}
	}
	// The refusal stays on the screen when it is redrawn.
	u.mach.refresh()
	if !strings.HasPrefix(p.status.Text, "Cannot start the server: ") {
		t.Fatalf("after a refresh: %q", p.status.Text)
	}
}

// Without a loaded model the switch says so and stays off.
func TestServerNoModel(t *testing.T) {
	u, _ := newTestUI(t, &fakeBackend{prof: bigMachine()}, Options{})
	p := u.mach.server
	if p.status.Text != "Off. Load a model to serve it." {
		t.Fatalf("status %q", p.status.Text)
	}
	p.port.SetText("0")
	test.Tap(p.toggle)
	if p.running != nil || p.toggle.Checked || p.status.Text != "Cannot start the server: no model is loaded: load one on the Models screen first" {
		t.Fatalf("running %v, checked %v, status %q", p.running, p.toggle.Checked, p.status.Text)
	}
}
