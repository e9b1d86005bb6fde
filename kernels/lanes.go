package kernels

// lanes is the contract's register of 16 float32 accumulators. Lane i holds the running sum of
// the elements k with k mod 16 == i, in increasing k, starting from +0.
type lanes [16]float32

// Sum joins the lanes by the contract's fixed tree.
func (l *lanes) Sum() float32 {
	lo := ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
	hi := ((l[8] + l[9]) + (l[10] + l[11])) + ((l[12] + l[13]) + (l[14] + l[15]))
	return lo + hi
}

// AddProducts adds w[k]·x[k] for k < len(w) into the lanes, element k into lane k mod 16: the
// lanes continue a reduction whose earlier elements numbered a multiple of 16. x must be at
// least as long as w.
//
// A lane is a sequence in time, not a place: it only has to see its elements in increasing k.
// So the loop runs twice over the data, lanes 0-7 and then lanes 8-15, which keeps eight
// accumulators in registers instead of spilling sixteen (amd64 has fifteen free).
func (l *lanes) AddProducts(w, x []float32) {
	x = x[:len(w)]
	whole := len(w) &^ 15
	l.addHalf(w[:whole], x[:whole], 0)
	l.addHalf(w[:whole], x[:whole], 8)
	// A ragged tail goes into the lanes its indices name, after the whole groups.
	for j := range len(w) - whole {
		l[j] += float32(w[whole+j] * x[whole+j])
	}
}

// addHalf adds the products of the elements k ≡ off..off+7 (mod 16) into lanes off..off+7;
// len(w) is a multiple of 16.
func (l *lanes) addHalf(w, x []float32, off int) {
	a := (*[8]float32)(l[off : off+8])
	l0, l1, l2, l3, l4, l5, l6, l7 := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
	for k := off; k+8 <= len(w); k += 16 {
		w := w[k : k+8 : k+8]
		x := x[k : k+8 : k+8]
		l0 += float32(w[0] * x[0])
		l1 += float32(w[1] * x[1])
		l2 += float32(w[2] * x[2])
		l3 += float32(w[3] * x[3])
		l4 += float32(w[4] * x[4])
		l5 += float32(w[5] * x[5])
		l6 += float32(w[6] * x[6])
		l7 += float32(w[7] * x[7])
	}
	*a = [8]float32{l0, l1, l2, l3, l4, l5, l6, l7}
}

// AddValues adds v[k] into lane k mod 16, continuing a reduction as AddProducts does.
func (l *lanes) AddValues(v []float32) {
	k := 0
	for ; k+16 <= len(v); k += 16 {
		v := v[k : k+16 : k+16]
		for i := range 16 {
			l[i] += v[i]
		}
	}
	for j := 0; k+j < len(v); j++ {
		l[j] += v[k+j]
	}
}

// DotF32 returns the contract dot product of a and b[:len(a)]: the 16-lane sum of the rounded
// products a[k]·b[k]. b must be at least as long as a.
func DotF32(a, b []float32) float32 {
	var l lanes
	l.AddProducts(a, b)
	return l.Sum()
}

// SumF32 returns the 16-lane sum of v.
func SumF32(v []float32) float32 {
	var l lanes
	l.AddValues(v)
	return l.Sum()
}
