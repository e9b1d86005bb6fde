// Package ui holds the Fyne screens of the window app: Models (the files the app knows, their
// fit on this machine, downloads), Chat and Machine. It talks to the engine only through the
// Backend interface (backend.go); EngineBackend (engine_backend.go) is the real one.
//
// Threading: every widget and every field of UI is touched on Fyne's goroutine only. Engine
// work and downloads run on goroutines of their own and hand results back with fyne.Do, so the
// window never waits on them.
//
// Keys: the chat keeps the conventions of the chat apps people know (chat.go). Fyne hands a key
// to the focused widget alone, so the app's widgets pass Esc, Enter and the app's shortcuts to
// a keyRouter (keys.go) that sends them where they belong, and the app's dialogs answer Enter
// and Esc (dialogs.go). Answers are Markdown, drawn block by block (markdown.go).
package ui
