package gpu

import "fmt"

// Layout places a head's keys or values in a buffer: element k of position t is float
// t·Pos + k·Dim. The CPU cache's rows are {Pos: stride, Dim: 1}; a position-minor mirror
// ({Pos: 1, Dim: capacity}) lets neighbouring GPU threads read neighbouring floats.
type Layout struct{ Pos, Dim int }

// span returns the floats a buffer must hold for npos positions of n elements.
func (l Layout) span(npos, n int) int {
	if npos == 0 || n == 0 {
		return 0
	}
	return (npos-1)*l.Pos + (n-1)*l.Dim + 1
}

// Attention holds the attention kernels: the scores and the weighted sum over positions,
// each giving the bits kernels.Attend gives.
type Attention struct {
	m              *Module
	scores, values *Function
}

// threadsPerBlock is the kernels' block size.
const threadsPerBlock = 128

// NewAttention compiles the attention kernels for the context's device.
func NewAttention(c *Context) (*Attention, error) {
	m, err := c.Load(attentionPTX())
	if err != nil {
		return nil, err
	}
	a := &Attention{m: m}
	if a.scores, err = m.Function("scores"); err == nil {
		a.values, err = m.Function("values")
	}
	if err != nil {
		m.Unload()
		return nil, err
	}
	return a, nil
}

// Close unloads the kernels.
func (a *Attention) Close() error { return a.m.Unload() }

func blocks(n int) uint32 { return uint32((n + threadsPerBlock - 1) / threadsPerBlock) }

func fits(what string, b *Buffer, floats int) error {
	if floats*4 > b.Len() {
		return fmt.Errorf("gpu: %s needs %d floats, its buffer holds %d bytes", what, floats, b.Len())
	}
	return nil
}

// Scores writes out[t] = float32(kernels.DotF32(q[:dim], key_t)·scale) for t < npos, key_t
// placed by keys' layout.
func (a *Attention) Scores(out, q, keys *Buffer, npos, dim int, l Layout, scale float32) error {
	if npos <= 0 || dim <= 0 || l.Pos < 0 || l.Dim < 0 {
		return fmt.Errorf("gpu: scores of %d positions of %d", npos, dim)
	}
	for _, e := range []error{fits("out", out, npos), fits("q", q, dim), fits("keys", keys, l.span(npos, dim))} {
		if e != nil {
			return e
		}
	}
	return a.scores.Launch(blocks(npos), threadsPerBlock, out, q, keys, npos, dim, l.Pos, l.Dim, scale)
}

// Values writes out[i] = the contract's 16-lane sum over t < npos of float32(w[t]·v_t[i]) for
// i < nout, v_t placed by values' layout: kernels.Attend's output for the weights w.
func (a *Attention) Values(out, values, w *Buffer, npos, nout int, l Layout) error {
	if npos <= 0 || nout <= 0 || l.Pos < 0 || l.Dim < 0 {
		return fmt.Errorf("gpu: values of %d positions of %d", npos, nout)
	}
	for _, e := range []error{fits("out", out, nout), fits("weights", w, npos), fits("values", values, l.span(npos, nout))} {
		if e != nil {
			return e
		}
	}
	return a.values.Launch(blocks(nout), threadsPerBlock, out, values, w, npos, nout, l.Pos, l.Dim)
}
