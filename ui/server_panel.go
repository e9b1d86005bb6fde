package ui

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// serverPanel is the machine screen's "Local server" switch: engine/serve (what trochilus
// serve runs) answering OpenAI's and Ollama's API with the model the app has loaded.
type serverPanel struct {
	u       *UI
	obj     fyne.CanvasObject
	toggle  *widget.Check
	host    *widget.Entry
	port    *widget.Entry
	key     *widget.Entry
	status  *widget.Label
	curl    *widget.Label
	copyBtn *keyButton

	running  *localServer // nil when off
	stopping bool
	note     string // while off: why it stopped, or why it could not start
	quiet    bool   // toggle's state is being set by the panel, not the user
}

func newServerPanel(u *UI) *serverPanel {
	p := &serverPanel{u: u}
	prefs := u.app.Preferences()
	p.toggle = widget.NewCheck("Serve the loaded model on OpenAI's and Ollama's API", p.switched)
	p.host = widget.NewEntry()
	p.host.SetText(prefs.StringWithFallback(prefServerHost, defaultServerHost))
	p.port = widget.NewEntry()
	p.port.SetText(strconv.Itoa(prefs.IntWithFallback(prefServerPort, defaultServerPort)))
	p.key = widget.NewPasswordEntry()
	p.key.SetPlaceHolder("optional on 127.0.0.1; required on other addresses")
	form := widget.NewForm(widget.NewFormItem("Address", p.host), widget.NewFormItem("Port", p.port), widget.NewFormItem("API key", p.key))
	p.status = widget.NewLabel("")
	p.status.Wrapping = fyne.TextWrapWord
	p.curl = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	p.curl.Wrapping = fyne.TextWrapBreak
	p.copyBtn = newKeyButton(u.keys, "Copy", theme.ContentCopyIcon(), func() { u.app.Clipboard().SetContent(p.curl.Text) })
	head := widget.NewLabelWithStyle("Local server", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	p.obj = container.NewVBox(head, p.toggle, form, p.status, container.NewBorder(nil, nil, nil, p.copyBtn, p.curl))
	p.show()
	return p
}

// switched is the toggle's change: on starts the server, off stops it.
func (p *serverPanel) switched(on bool) {
	if p.quiet {
		return
	}
	if on {
		p.start()
	} else {
		p.stop("Stopped.")
	}
}

// setToggle shows on without acting on it.
func (p *serverPanel) setToggle(on bool) {
	p.quiet = true
	p.toggle.SetChecked(on)
	p.quiet = false
}

// start starts the server on the UI goroutine: listening and opening a session are quick, and
// doing them here means no model can be closed under a start in progress. An error (no model,
// a bad port, the port in use) is shown and the switch goes back off.
func (p *serverPanel) start() {
	host := strings.TrimSpace(p.host.Text)
	port, err := parsePort(p.port.Text)
	var l *localServer
	if err == nil {
		l, err = startServer(p.u.loaded, host, port, strings.TrimSpace(p.key.Text))
	}
	if err != nil {
		p.setToggle(false)
		p.note = "Cannot start the server: " + err.Error()
		p.show()
		return
	}
	prefs := p.u.app.Preferences()
	prefs.SetString(prefServerHost, host)
	prefs.SetInt(prefServerPort, port)
	p.running, p.note = l, ""
	p.show()
}

// stop shuts the running server down off the UI goroutine (a streamed answer is given the
// token it is making) and then says why with note.
func (p *serverPanel) stop(note string) {
	l := p.running
	if l == nil {
		return
	}
	p.stopping = true
	p.show()
	p.u.run(func(context.Context) {
		err := l.stop()
		p.u.later(func() {
			if p.running == l {
				p.running, p.stopping, p.note = nil, false, note
				if err != nil {
					p.note += " Releasing its session: " + err.Error()
				}
				p.setToggle(false)
				p.show()
			}
		})
	})
}

// shutdown stops the server at once, waiting for it: before the loaded model is closed (another
// model loaded, unloaded, the window closing).
func (p *serverPanel) shutdown(note string) {
	l := p.running
	if l == nil {
		return
	}
	l.stop()
	p.running, p.stopping, p.note = nil, false, note
	p.setToggle(false)
	p.show()
}

// modelChanged stops a server of the model being replaced.
func (p *serverPanel) modelChanged(old ChatModel) {
	if p.running == nil {
		p.note = "" // a refusal about the model before is no longer the news
		return
	}
	if old != nil {
		p.shutdown("Stopped: " + filepath.Base(old.Path()) + " was unloaded. Switch the server on again to serve the model now loaded.")
	}
}

// show sets the widgets for the server's state.
func (p *serverPanel) show() {
	on := p.running != nil
	for _, e := range []*widget.Entry{p.host, p.port, p.key} {
		setEnabled(e, !on)
	}
	setEnabled(p.toggle, !p.stopping)
	if !on {
		p.curl.SetText("")
		p.copyBtn.Hide()
		switch {
		case p.note != "":
			p.status.SetText(p.note)
		case p.u.loaded == nil:
			p.status.SetText("Off. Load a model to serve it.")
		default:
			p.status.SetText("Off.")
		}
		return
	}
	l := p.running
	text := "Serving " + l.id + " at " + l.url() + ": /v1/chat/completions, /v1/completions, /v1/responses, /v1/models and Ollama's /api/chat, /api/generate, one request at a time, besides the Chat screen."
	if p.stopping {
		text = "Stopping…"
	}
	p.status.SetText(text)
	p.curl.SetText(l.curl())
	p.copyBtn.Show()
}

// setEnabled enables or disables w.
func setEnabled(w fyne.Disableable, on bool) {
	if on {
		w.Enable()
	} else {
		w.Disable()
	}
}
