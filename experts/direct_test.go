package experts

import (
	"testing"

	"github.com/trochilus-llm/trochilus/internal/directio"
)

// The store rounds its unbuffered reads, and the areas they land in, to page: that must be
// the alignment directio's files ask for.
func TestPageIsTheUnbufferedAlignment(t *testing.T) {
	if page != directio.Align {
		t.Fatalf("experts' page is %d, directio.Align %d", page, directio.Align)
	}
}
