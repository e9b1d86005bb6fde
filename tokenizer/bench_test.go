package tokenizer

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkEncodeOLMoE encodes the whole corpus, paragraph by paragraph, with the OLMoE
// tokenizer on one goroutine (MB/s is corpus bytes per second).
func BenchmarkEncodeOLMoE(b *testing.B) {
	tok := olmoe(b)
	chunks, _, size := corpus(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var ids []int32
	for _, s := range chunks { // warm the word cache, as a long-running process has it
		ids = tok.AppendEncode(ids[:0], s, true)
	}
	cpu0 := cpuTime(b)
	for b.Loop() {
		for _, s := range chunks {
			ids = tok.AppendEncode(ids[:0], s, true)
		}
	}
	reportCPU(b, cpu0, size)
}

// reportCPU adds MB per CPU-second (the process's own CPU time, which a busy machine does not
// inflate as it does wall time; it includes the collector's work).
func reportCPU(b *testing.B, cpu0 time.Duration, size int) {
	if cpu := cpuTime(b) - cpu0; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkEncodeOLMoECold is BenchmarkEncodeOLMoE with the word cache emptied before each
// pass, so every word's merges are computed once per pass.
func BenchmarkEncodeOLMoECold(b *testing.B) {
	tok := olmoe(b)
	chunks, _, size := corpus(b)
	b.SetBytes(int64(size))
	var ids []int32
	cpu0 := cpuTime(b)
	for b.Loop() {
		w := tok.getWorkspace()
		w.cache.reset()
		tok.putWorkspace(w)
		for _, s := range chunks {
			ids = tok.AppendEncode(ids[:0], s, true)
		}
	}
	reportCPU(b, cpu0, size)
}

func BenchmarkDecodeOLMoE(b *testing.B) {
	tok := olmoe(b)
	chunks, _, size := corpus(b)
	ids := tok.Encode(strings.Join(chunks, ""), true)
	b.SetBytes(int64(size))
	var out []byte
	for b.Loop() {
		out = tok.AppendDecode(out[:0], ids)
	}
}

// BenchmarkHFEncodeOLMoE measures HF tokenizers (the Rust library through the npm binding) on
// the same corpus, one encode call per paragraph as BenchmarkEncodeOLMoE does. The time is
// measured inside Node.js, so it leaves out the Go side's messaging; HF-MB/cpu-s uses Node's
// own CPU time (the Rust library may use more than one thread).
func BenchmarkHFEncodeOLMoE(b *testing.B) {
	h := startHF(b)
	src := sources(b)[0]
	h.load(b, src.name, src, nil)
	chunks, _, size := corpus(b)
	var wall, cpu float64
	for b.Loop() {
		var r struct{ Seconds, CPU float64 }
		if err := h.call(map[string]any{"op": "time", "name": src.name, "texts": chunks}, &r); err != nil {
			b.Fatal(err)
		}
		wall += r.Seconds
		cpu += r.CPU
	}
	b.ReportMetric(float64(size)*float64(b.N)/1e6/wall, "HF-MB/s")
	b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu, "HF-MB/cpu-s")
}
