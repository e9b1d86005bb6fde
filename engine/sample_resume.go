package engine

// resumeSampler returns the sampler of sp whose random stream has already made drawn draws,
// so that its first draw is the stream's next: a generation that goes on with an answer cut
// short (GenerateOptions.Drawn) draws each token exactly as the uninterrupted one would have.
// next takes one float64 of the stream per token (and none when it fails before drawing), so
// the stream's state after an answer is that of its seed advanced by the answer's tokens;
// replaying the draws costs a few nanoseconds each, nothing beside a forward pass. A negative
// drawn is taken as 0.
func resumeSampler(sp Sampling, drawn int) *sampler {
	s := newSampler(sp)
	for range max(drawn, 0) {
		s.rng.Float64()
	}
	return s
}
