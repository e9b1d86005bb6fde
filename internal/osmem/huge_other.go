//go:build !linux

package osmem

// HugePagesSupported reports whether Alloc's huge argument does anything on this system: not
// here (Windows' large pages need a privilege ordinary users lack; macOS has no transparent
// huge pages).
const HugePagesSupported = false

func adviseHuge([]byte) bool { return false }

// AdviseSmallPages does nothing here: pages are small unless asked for.
func AdviseSmallPages([]byte) {}
