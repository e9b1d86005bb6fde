package kernels

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// The benchmarks' shared pieces: thread CPU time, streamed weights, and ratios of variants
// timed round by round.

// cpuLoop runs body in b's loop on a locked thread and returns the thread's CPU time over the
// loop in ns (0 where the platform does not tell): on a shared machine it leaves out the time
// other processes held the core.
func cpuLoop(b *testing.B, body func()) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPUTime()
	for b.Loop() {
		body()
	}
	return threadCPUTime() - start
}

// repeat returns n copies of data one after another: a buffer to stream weights from, far
// larger than the caches, so that they come from RAM as in decode.
func repeat(data []byte, n int) []byte {
	buf := make([]byte, n*len(data))
	for i := 0; i < len(buf); i += len(data) {
		copy(buf[i:], data)
	}
	return buf
}

// weightsFrom returns the weights a benchmark reads and where they come from: data itself
// ("cache"), or with stream set copies copies of it one after another ("stream").
func weightsFrom(data []byte, stream bool, copies int) ([]byte, string) {
	if stream {
		return repeat(data, copies), "stream"
	}
	return data, "cache"
}

// timeRounds runs b's loop on a locked thread: each round calls run once for each of the
// variants, on the next copy of m in data (copies of m.Data one after another, as weightsFrom
// lays them out), starting one variant later each round where rotate is set (a variant's
// speed can depend on the one run before it), and times each call in the thread's CPU time.
// It returns times[variant][round] in ns.
func timeRounds(b *testing.B, m *Matrix, data []byte, variants int, rotate bool, run func(v int, mat *Matrix)) [][]float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	times := make([][]float64, variants)
	mat := new(Matrix)
	off, round := 0, 0
	for b.Loop() {
		round++
		for i := range variants {
			v := i
			if rotate {
				v = (round + i) % variants
			}
			*mat = *m
			mat.Data = data[off : off+len(m.Data)]
			off = (off + len(m.Data)) % len(data)
			start := threadCPUTime()
			run(v, mat)
			times[v] = append(times[v], float64(threadCPUTime()-start))
		}
	}
	return times
}

// medianOf returns the median of x.
func medianOf(x []float64) float64 {
	x = slices.Clone(x)
	slices.Sort(x)
	return x[len(x)/2]
}

// reportSpeedups reports, for variants timed round by round (times[v][round], in ns), the
// median over rounds of each variant's speed-up over variant 0 (as "<name>/<name 0>").
func reportSpeedups(b *testing.B, times [][]float64, names []string) {
	for v := 1; v < len(times); v++ {
		r := make([]float64, len(times[0]))
		for i := range r {
			r[i] = times[0][i] / times[v][i]
		}
		b.ReportMetric(medianOf(r), names[v]+"/"+names[0])
	}
}

// reportRatios reports the speed-ups of reportSpeedups and each variant's work per median
// time (as "<name><unit>", work per ns).
func reportRatios(b *testing.B, times [][]float64, names []string, work float64, unit string) {
	reportSpeedups(b, times, names)
	for v, name := range names {
		b.ReportMetric(work/medianOf(times[v]), name+unit)
	}
}

// benchThreads returns the pool size TROCHILUS_BENCH_THREADS asks for (0 where unset: each
// benchmark says what it takes then).
func benchThreads() int {
	threads, _ := strconv.Atoi(os.Getenv("TROCHILUS_BENCH_THREADS"))
	return threads
}

// dotRowBench returns the row-dot benchmarks' input of cols floats, a row of each of
// supportedTypes against it, and the input prepared for the Q4_K and Q6_K dots.
func dotRowBench(b *testing.B, cols int) (x []float32, rows [][]byte, in *q4KInput) {
	rng := rand.New(rand.NewPCG(1, 1))
	x = randFloats(rng, cols, false, false)
	for _, typ := range supportedTypes {
		rows = append(rows, randRow(rng, typ, cols, false))
	}
	in = new(q4KInput)
	if err := prepareQ4K(in, x); err != nil {
		b.Fatal(err)
	}
	return x, rows, in
}
