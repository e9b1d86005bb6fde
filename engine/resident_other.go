//go:build !linux

package engine

// allocWeights has no resident memory to give outside Linux yet: the loader maps the file
// instead (the page cache holds the weights).
func allocWeights(size int64) (*mapping, error) { return nil, errNotResident }
