// Package corpus makes the corpus of malformed GGUF files in testdata/gguf: each file breaks one
// rule of the format, and each comes with a piece of the error text a reader must give for it.
// `go run ./gguf/internal/corpus/gencorpus testdata/gguf` writes the files; the gguf tests
// check the written files are still what Cases returns.
package corpus

import (
	"fmt"

	b "github.com/trochilus-llm/trochilus/gguf/internal/ggufbytes"
)

// Case is one malformed file.
type Case struct {
	Name string // file name, without the .gguf extension
	Want string // text the reader's error must contain
	Data []byte
}

// ggml type numbers used here.
const (
	typeF32  = 0
	typeQ8_0 = 8
)

// valid returns a small well-formed file: seven keys of several kinds and two tensors, the last
// ending exactly at the end of the file (so every truncation cuts something).
func valid() []byte {
	f := b.Header(3, 2, 7)
	f.Key("general.architecture", b.String).Str("olmoe")
	f.Key("olmoe.block_count", b.Uint32).U32(16)
	f.Key("olmoe.attention.layer_norm_rms_epsilon", b.Float32).F32(1e-5)
	f.Key("tokenizer.ggml.add_bos_token", b.Bool).U8(1)
	f.Key("tokenizer.ggml.tokens", b.Array).ArrayHead(b.String, 3).Str("a").Str("b").Str("<|endoftext|>")
	f.Key("tokenizer.ggml.token_type", b.Array).ArrayHead(b.Int32, 3).U32(1).U32(1).U32(3)
	f.Key("general.alignment", b.Uint32).U32(32)
	f.Tensor("token_embd.weight", []uint64{4, 2}, typeF32, 0)
	f.Tensor("blk.0.ffn_down_exps.weight", []uint64{32, 2}, typeQ8_0, 32)
	f.Pad(32)
	f.Fill(32, 0x3f) // token_embd: 8 float32
	f.Fill(68, 0x11) // two Q8_0 blocks
	return f.Bytes()
}

// withKV returns a file of one key whose type and value body add writes, and no tensors.
func withKV(key string, valueType uint32, add func(*b.Builder)) []byte {
	f := b.Header(3, 0, 1).Key(key, valueType)
	add(f)
	return f.Pad(32).Bytes()
}

// withTensor returns a file with one F32 [8] tensor "a" (32 bytes at offset 0) and then the
// tensor add writes as "bad", with data room for both.
func withTensor(add func(*b.Builder)) []byte {
	f := b.Header(3, 2, 0).Tensor("a", []uint64{8}, typeF32, 0)
	add(f)
	return f.Pad(32).Fill(64, 0).Bytes()
}

// at returns the offset the next field will have: error texts name offsets, and the corpus
// checks them.
func at(f *b.Builder) int { return f.Len() }

// Cases returns the corpus.
func Cases() []Case {
	var cs []Case
	add := func(name, want string, data []byte) { cs = append(cs, Case{name, want, data}) }

	v := valid()
	for _, n := range []int{0, 2, 4, 6, 8, 15, 16, 23, 24, 30, 40, 60, 90, 120, 160, 200, 240, 280, 320, 360, 400, 440, len(v) - 60, len(v) - 1} {
		if n < len(v) {
			add(fmt.Sprintf("truncated-%04d", n), "end of file", v[:n])
		}
	}

	add("empty", "magic needs 4 bytes, only 0 left before end of file", nil)
	add("bad-magic", `magic "GGML" is not "GGUF"`, append([]byte("GGML"), v[4:]...))
	add("version-1", "version 1 unsupported", b.Header(1, 0, 0).Bytes())
	add("version-4", "version 4 unsupported", b.Header(4, 0, 0).Bytes())
	add("huge-tensor-count", "tensor count 1152921504606846976 too large", b.Header(3, 1<<60, 0).Bytes())
	add("tensor-count-past-eof", "tensor count 1000 needs at least 32000 bytes", b.Header(3, 1000, 0).Fill(100, 0).Bytes())
	add("huge-kv-count", "key-value count 1152921504606846976 too large", b.Header(3, 0, 1<<60).Bytes())
	add("kv-count-past-eof", "key-value count 50 needs at least 650 bytes", b.Header(3, 0, 50).Fill(100, 0).Bytes())

	{
		f := b.Header(3, 0, 1)
		off := at(f)
		f.U64(1<<40).Fill(40, 'k')
		add("huge-key-length", fmt.Sprintf("key 0 at offset %d: key length 1099511627776 too large", off), f.Bytes())
	}
	{
		f := b.Header(3, 0, 1).Key("general.name", b.String)
		off := at(f)
		f.U64(1<<40).Fill(40, 's')
		add("huge-string-length", fmt.Sprintf(`key 0 ("general.name") at offset %d: string length 1099511627776 too large`, off), f.Bytes())
	}
	add("string-past-eof", "string of 1000 bytes runs past end of file",
		withKV("general.name", b.String, func(f *b.Builder) { f.U64(1000).Raw('x') }))
	add("huge-array", "array length 4611686018427387904 too large",
		withKV("tokenizer.ggml.scores", b.Array, func(f *b.Builder) { f.ArrayHead(b.Float32, 1<<62) }))
	add("array-past-eof", "array length 1048576 needs at least 4194304 bytes",
		withKV("tokenizer.ggml.scores", b.Array, func(f *b.Builder) { f.ArrayHead(b.Float32, 1<<20).F32(1) }))
	add("string-array-past-eof", "array length 100000 needs at least 800000 bytes",
		withKV("tokenizer.ggml.tokens", b.Array, func(f *b.Builder) { f.ArrayHead(b.String, 100000).Str("a") }))
	{
		f := b.Header(3, 0, 2).Key("general.architecture", b.String).Str("olmoe").Str("olmoe.block_count")
		off := at(f)
		f.U32(99).U32(16).Pad(32)
		add("unknown-value-type", fmt.Sprintf(`key 1 ("olmoe.block_count") at offset %d: value type 99 unknown`, off), f.Bytes())
	}
	add("unknown-array-type", "array element type 77 unknown",
		withKV("tokenizer.ggml.merges", b.Array, func(f *b.Builder) { f.ArrayHead(77, 1).U32(0) }))
	add("unknown-array-type-13", "array element type 13 unknown",
		withKV("tokenizer.ggml.merges", b.Array, func(f *b.Builder) { f.ArrayHead(13, 1).U32(0) }))
	{
		var off int
		data := withKV("tokenizer.ggml.add_bos_token", b.Bool, func(f *b.Builder) { off = at(f); f.U8(7) })
		add("bool-7", fmt.Sprintf(`key 0 ("tokenizer.ggml.add_bos_token") at offset %d: bool value 7 (want 0 or 1)`, off), data)
	}
	add("bool-array-7", "array element 2: bool value 7 (want 0 or 1)",
		withKV("x.flags", b.Array, func(f *b.Builder) { f.ArrayHead(b.Bool, 3).Raw(0, 1, 7) }))
	{
		f := b.Header(3, 0, 2).Key("general.name", b.String).Str("a")
		off := at(f)
		f.Key("general.name", b.String).Str("b").Pad(32)
		add("duplicate-key", fmt.Sprintf(`key 1 ("general.name") at offset %d: duplicate key (also key 0)`, off), f.Bytes())
	}
	add("nested-depth", "arrays nested deeper than 8",
		withKV("x.deep", b.Array, func(f *b.Builder) {
			for range 9 {
				f.ArrayHead(b.Array, 1)
			}
			f.ArrayHead(b.Uint8, 0)
		}))
	add("alignment-3", "alignment 3 is not a power of two",
		withKV("general.alignment", b.Uint32, func(f *b.Builder) { f.U32(3) }))
	add("alignment-0", "alignment 0 is not a power of two",
		withKV("general.alignment", b.Uint32, func(f *b.Builder) { f.U32(0) }))
	add("alignment-huge", "alignment 1048576 too large (at most 65536)",
		withKV("general.alignment", b.Uint32, func(f *b.Builder) { f.U32(1 << 20) }))
	add("alignment-int32", "alignment must be a uint32, not int32",
		withKV("general.alignment", b.Int32, func(f *b.Builder) { f.U32(64) }))

	{
		var off int
		data := withTensor(func(f *b.Builder) {
			f.Str("bad").U32(1).U64(8)
			off = at(f)
			f.U32(99).U64(32)
		})
		add("unknown-tensor-type", fmt.Sprintf(`tensor 1 ("bad") at offset %d: type 99 unknown`, off), data)
	}
	{
		var off int
		data := withTensor(func(f *b.Builder) { f.Str("bad").U32(1).U64(32); off = at(f); f.U32(4).U64(32) })
		add("removed-tensor-type-4", fmt.Sprintf(`tensor 1 ("bad") at offset %d: type 4 unknown`, off), data)
	}
	add("ragged-row", "row of 33 elements is not a whole number of 32-element Q8_0 blocks",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{33, 1}, typeQ8_0, 32) }))
	add("zero-dims", "0 dimensions (want 1 to 4)",
		withTensor(func(f *b.Builder) { f.Tensor("bad", nil, typeF32, 32) }))
	add("five-dims", "5 dimensions (want 1 to 4)",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{1, 1, 1, 1, 1}, typeF32, 32) }))
	add("dim-zero", "dimension 1 is 0 (want 1 to 2^40)",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{8, 0}, typeF32, 32) }))
	add("dim-huge", "dimension 0 is 2199023255552 (want 1 to 2^40)",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{1 << 41}, typeF32, 32) }))
	add("dims-overflow", "dimensions overflow",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{32, 1 << 40, 1 << 40, 1 << 40}, typeF32, 32) }))
	add("size-overflow", "overflow a size",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{1 << 40, 1 << 40, 1 << 20}, typeF32, 32) }))
	{
		var off, end int
		data := withTensor(func(f *b.Builder) { f.Str("bad").U32(1).U64(16).U32(typeF32); off = at(f); f.U64(32); end = at(f) })
		start := (end+31)/32*32 + 32 // the data section, then past tensor "a"
		add("tensor-past-eof", fmt.Sprintf(`tensor 1 ("bad") at offset %d: data [%d, %d) runs past end of file (size %d)`,
			off, start, start+64, len(data)), data)
	}
	add("tensor-offset-huge", "offset 9223372036854775808 runs past end of file",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{8}, typeF32, 1<<63) }))
	add("tensor-misaligned", "offset 16 is not a multiple of the alignment 32",
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{8}, typeF32, 16) }))
	add("tensor-overlap", `overlaps tensor 0 ("a")`,
		withTensor(func(f *b.Builder) { f.Tensor("bad", []uint64{8}, typeF32, 0) }))
	{
		var off int
		data := withTensor(func(f *b.Builder) { off = at(f); f.Tensor("a", []uint64{8}, typeF32, 32) })
		add("duplicate-tensor", fmt.Sprintf(`tensor 1 ("a") at offset %d: duplicate tensor name (also tensor 0)`, off), data)
	}
	add("huge-tensor-name", "name length 1099511627776 too large",
		withTensor(func(f *b.Builder) { f.U64(1<<40).Fill(40, 'n') }))
	return cs
}
