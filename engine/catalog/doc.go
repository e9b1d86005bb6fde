// Package catalog knows the models the app can offer: the GGUF files in the user's models
// folder (and any opened from elsewhere), what each one is (architecture, size, weight types),
// whether it fits this machine's memory, and the models that can be downloaded, with the
// SHA-256 Hugging Face publishes for each file.
//
// It reads only file headers and small JSON files; downloading is package download's job and
// running a model is the engine's.
package catalog
