package kernels

import "math"

// logRoundMargin is the relative error bound of Log32's float64 evaluation (Log64, within
// about one float64 ulp, 2^-52) that its rounding test assumes: four times that, as Exp's; the
// exhaustive test (TestLog32Long) proves every answer the test lets through.
const logRoundMargin = 0x1p-50

// Log32 returns ln x correctly rounded to float32: the float32 nearest to the true value, ties
// to even (none occurs: ln x is transcendental for every float32 but 1, whose log is 0), −Inf
// for ±0, +Inf for +Inf, NaN for a NaN or a negative x.
//
// It evaluates ln x in float64 with Log64 (IEEE operations only, each product rounded before
// the next addition, so the same bits on every machine) and rounds that to float32 when the
// whole error interval y(1 ± 2^-50) rounds to one float32. The few arguments where it does not
// are listed in logHard with their answers, found by the exhaustive search over every positive
// finite float32 and computed at high precision. math.Log is never used: its last bit is the
// platform's.
func Log32(x float32) float32 {
	switch {
	case x != x:
		return x + x // quiet the NaN
	case x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case x > math.MaxFloat32:
		return x // +Inf
	case x == 1:
		return 0
	}
	y := Log64(float64(x))
	lo := float32(float64(y * (1 - logRoundMargin)))
	hi := float32(float64(y * (1 + logRoundMargin)))
	if lo == hi {
		return lo
	}
	return logHardCase(x, y)
}

// logHardCase answers for the arguments whose float64 evaluation lies too near a float32
// rounding boundary. Any argument not listed cannot occur (TestLog32Long checks every positive
// finite float32); were one to, the float32 nearest to the float64 value is within one ulp.
func logHardCase(x float32, y float64) float32 {
	b := math.Float32bits(x)
	lo, hi := 0, len(logHard)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if logHard[mid][0] < b {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(logHard) && logHard[lo][0] == b {
		return math.Float32frombits(logHard[lo][1])
	}
	return float32(y)
}

// logHard lists, sorted by argument bits, the arguments where Log32's rounding test fails and
// the bits of their correctly rounded log, computed at high precision with math/big
// (TestLog32HardCases checks each entry, TestLog32Long that the list is complete; run that with
// TROCHILUS_LOG_HARD=print to print the list).
var logHard = [...][2]uint32{
	{0x064cb44b, 0xc29e7c1a},
	{0x07c060fa, 0xc29a733a},
	{0x0dc8bba4, 0xc289bac4},
	{0x0f61ff63, 0xc2855565},
	{0x111c87f8, 0xc28085df},
	{0x145cb6d4, 0xc26f092f},
	{0x14907055, 0xc26df596},
	{0x16c5ee7a, 0xc2619bd4},
	{0x18b06f2a, 0xc256fa6f},
	{0x1a8446cb, 0xc24d0a45},
	{0x1b81ab52, 0xc2479316},
	{0x1f116ab8, 0xc233b53e},
	{0x22925ad4, 0xc220462d},
	{0x2423c085, 0xc21781d1},
	{0x28e3fa26, 0xc1fa75e0},
	{0x29e6126b, 0xc1ef4c02},
	{0x29fd22f8, 0xc1ee8859},
	{0x2c4c24b7, 0xc1d48710},
	{0x2e492984, 0xc1be76ee},
	{0x3418949b, 0xc17c447f},
	{0x38dcbe38, 0xc1128ba4},
	{0x39c31348, 0xc0fcaf65},
	{0x39c7b1f9, 0xc0fbefa7},
	{0x3bf86ef0, 0xc09c399e},
	{0x3c413d3a, 0xc08e158f},
	{0x41178feb, 0x400fe5e7},
	{0x464d5b2b, 0x4117bcf1},
	{0x4665a9a6, 0x41198725},
	{0x4c5d65a5, 0x418f034b},
	{0x4d604ebe, 0x419a352c},
	{0x4e85f412, 0x41a6b811},
	{0x54af989d, 0x41eb6d3c},
	{0x5d800341, 0x42265b10},
	{0x5ee8984e, 0x422e4a21},
	{0x5f64c24a, 0x4230fee2},
	{0x62b467ba, 0x42437434},
	{0x64e27fa3, 0x424f7453},
	{0x65d890d3, 0x4254d1f9},
	{0x66a8c860, 0x42595e46},
	{0x66abbd63, 0x4259700e},
	{0x6914cb96, 0x4266ba1e},
	{0x6d1f23eb, 0x427d2d35},
	{0x6f31a8ec, 0x42845a89},
	{0x7405dee8, 0x4291a68d},
	{0x79e7ec37, 0x42a1ffb7},
	{0x7d98b8f4, 0x42ac40f2},
}
