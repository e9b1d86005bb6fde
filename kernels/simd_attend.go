package kernels

// attendScores writes scores[t] = float32(dot(q, keys[t·stride:])·scale) for t < len(scores),
// attention's scores as Attend defines them: through the tier's scores kernel when the head
// width is a whole number of groups of 16 (every model's is), else one dot at a time.
func (a *asmKernels) attendScores(scores, q, keys []float32, stride int, scale float32) {
	npos := len(scores)
	if npos == 0 {
		return
	}
	if a.scores == nil || len(q)%16 != 0 || len(q) == 0 {
		for t := range scores {
			scores[t] = float32(a.dotF32(q, keys[t*stride:t*stride+len(q)]) * scale)
		}
		return
	}
	// The kernel reads len(q) floats of each key row: check the last row is there, so an
	// out-of-range call panics here, as the scalar code would, instead of reading past keys.
	_ = keys[(npos-1)*stride+len(q)-1]
	a.scores(scores, q, keys, stride, scale)
}
