package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{-1, "0 B"}, {0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"},
		{6994000, "6.67 MiB"}, {32 << 20, "32.00 MiB"}, {7_300_000_000, "6.80 GiB"}, {16 << 30, "16.00 GiB"}, {3 << 39, "1.50 TiB"}, {5 << 50, "5120.00 TiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := Bytes(uint64(1) << 63); got != "8388608.00 TiB" {
		t.Errorf("Bytes(1<<63) = %q", got)
	}
	if got := Bytes(300 * 1024); got != "300.00 KiB" {
		t.Errorf("Bytes(int) = %q", got)
	}
}
