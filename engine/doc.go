// Package engine loads Mixture-of-Experts models from GGUF files and runs them: the forward pass, sessions with their KV cache, greedy generation and the machine profile.
package engine
