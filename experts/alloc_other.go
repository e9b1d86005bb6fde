//go:build !unix

package experts

// allocate returns n bytes aligned to a page. Off unix it comes from the Go heap (a
// VirtualAlloc'd region would keep it off; the store is not yet tuned there).
func allocate(n int64) ([]byte, func() error, error) {
	b := make([]byte, n+page)
	off := 0
	if r := int(uintptrOf(b) % page); r != 0 {
		off = page - r
	}
	return b[off : off+int(n) : off+int(n)], func() error { return nil }, nil
}
