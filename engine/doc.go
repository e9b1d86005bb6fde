// Package engine loads Mixture-of-Experts models from GGUF files and runs them exactly: the
// forward pass, sessions with their KV cache, and generation: greedy, or sampled with a seed that
// draws the same tokens on every machine.
//
// A Model maps its file read-only and multiplies the mapped bytes in place, so the weights stay
// off the Go heap and the page cache holds them once. A Session owns a float32 KV cache and a
// position; it evaluates tokens in passes of at most PassSize tokens, can rewind, and gives its
// cache back on Close. Sessions of one Model may evaluate on different goroutines at once, with
// the experts in memory or streamed, each getting the bits it gets alone (see Session).
//
// # Exactness
//
// Every number follows the scalar definitions of package kernels (docs/NUMERICS.md); the
// engine's one sum of its own, a token's experts added in increasing expert id (the order of
// transformers' index_add_), runs serially per token. Work is split over threads by output
// rows, tokens or attention heads, never inside a sum, and a token's computation never depends
// on which other tokens share its pass. The logits are therefore the same bits for any thread
// count, kernel tier, pass size, split of a prompt into calls, and after a rewind and
// re-evaluation. Against transformers' float32 OLMoE (tools/oracle/olmoe_ref.py) the greedy
// tokens are the same and the logits within 1e-3 (a few 1e-6 on the test models); they are not
// the same bits, since torch sums in other orders.
package engine
