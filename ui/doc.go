// Package ui holds the Fyne screens of the window app: Models (the files the app knows, their
// fit on this machine, downloads), Chat and Machine. It talks to the engine only through the
// Backend interface (backend.go); EngineBackend (engine_backend.go) is the real one.
//
// Threading: every widget and every field of UI is touched on Fyne's goroutine only. Engine
// work and downloads run on goroutines of their own and hand results back with fyne.Do, so the
// window never waits on them.
package ui
