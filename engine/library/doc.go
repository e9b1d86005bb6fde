// Package library knows the user's models: the GGUF files in the app's models folder (and any
// opened from elsewhere), what each one is (architecture, size, weight types) and how it would
// sit in this machine's memory (engine.PlanMemory's plan), and the list of models the app
// offers for download, built in or the user's own catalog.json.
//
// It reads only file headers and small JSON files; the Hugging Face client is package hub,
// downloading is package download's job and running a model is the engine's.
package library
