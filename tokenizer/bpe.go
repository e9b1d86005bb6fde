package tokenizer

import (
	"fmt"
	"strings"
)

// mergeTable maps a pair of adjacent token ids to the merge's rank and the id it produces,
// in an open-addressing hash table (a Go map costs several times more per lookup, and BPE
// looks up every adjacent pair of every new word).
type mergeTable struct {
	keys  []uint64 // left<<32 | right, or emptyKey
	vals  []merged
	shift uint // 64 - log2(len(keys))
}

type merged struct {
	rank int32
	id   int32
}

const emptyKey = ^uint64(0)

// newMergeTable reads "left right" merges; words maps token text to id. As in HF, a pair
// listed twice keeps the later rank, and a merge naming text that is not a token is an error.
func newMergeTable(merges []string, words map[string]int32) (mergeTable, error) {
	size := 16
	for size < 2*len(merges) {
		size *= 2
	}
	mt := mergeTable{keys: make([]uint64, size), vals: make([]merged, size), shift: 64}
	for s := size; s > 1; s >>= 1 {
		mt.shift--
	}
	for i := range mt.keys {
		mt.keys[i] = emptyKey
	}
	for rank, m := range merges {
		// Split at the first space after the first character, so a left part may be a space
		// only if it is the first byte (llama.cpp does the same).
		sp := strings.IndexByte(m[min(1, len(m)):], ' ')
		if sp < 0 {
			return mergeTable{}, fmt.Errorf("tokenizer: merge %d %q has no space between its two parts", rank, m)
		}
		sp += min(1, len(m))
		left, right := m[:sp], m[sp+1:]
		l, ok1 := words[left]
		r, ok2 := words[right]
		id, ok3 := words[left+right]
		if !ok1 || !ok2 || !ok3 {
			return mergeTable{}, fmt.Errorf("tokenizer: merge %d %q: %q, %q or %q is not a token", rank, m, left, right, left+right)
		}
		mt.put(uint64(uint32(l))<<32|uint64(uint32(r)), merged{int32(rank), id})
	}
	return mt, nil
}

func (mt *mergeTable) slot(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> mt.shift)
}

func (mt *mergeTable) put(key uint64, v merged) {
	mask := len(mt.keys) - 1
	for i := mt.slot(key); ; i = (i + 1) & mask {
		if mt.keys[i] == emptyKey || mt.keys[i] == key {
			mt.keys[i], mt.vals[i] = key, v
			return
		}
	}
}

// get returns the merge of the pair (left, right), if there is one.
func (mt *mergeTable) get(left, right int32) (merged, bool) {
	key := uint64(uint32(left))<<32 | uint64(uint32(right))
	mask := len(mt.keys) - 1
	for i := mt.slot(key); ; i = (i + 1) & mask {
		switch mt.keys[i] {
		case key:
			return mt.vals[i], true
		case emptyKey:
			return merged{}, false
		}
	}
}

// symbol is one token of a word being merged, in a doubly linked list over the word's bytes.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
}

// candidate is a possible merge of the symbol at pos with its successor.
type candidate struct {
	rank        int32
	pos         int32
	left, right int32 // the ids it was found for; stale once either symbol changed
	id          int32
}

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// bpe appends the ids of one word (raw bytes) to dst. Merges are applied lowest rank first,
// leftmost first among equal ranks, as HF's BPE::merge_word does with its priority queue.
// A byte with no token of its own is dropped (HF does so when the model has no unk token).
func (t *Tokenizer) bpe(w *workspace, word string, dst []int32) []int32 {
	if len(word) <= smallWord {
		return t.bpeSmall(word, dst)
	}
	return t.bpeHeap(w, word, dst)
}

// bpeHeap is bpe with a priority queue of candidate merges, for words of any length.
func (t *Tokenizer) bpeHeap(w *workspace, word string, dst []int32) []int32 {
	syms := w.syms[:0]
	for i := 0; i < len(word); i++ {
		if id := t.byteToken[word[i]]; id >= 0 {
			syms = append(syms, symbol{id: id, prev: int32(len(syms)) - 1, next: int32(len(syms)) + 1})
		}
	}
	if len(syms) == 0 {
		w.syms = syms
		return dst
	}
	syms[len(syms)-1].next = -1
	h := w.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := t.merges.get(syms[i].id, syms[i+1].id); ok {
			h = heapPush(h, candidate{m.rank, int32(i), syms[i].id, syms[i+1].id, m.id})
		}
	}
	for len(h) > 0 {
		var top candidate
		top, h = heapPop(h)
		s := &syms[top.pos]
		if s.id != top.left || s.next < 0 || syms[s.next].id != top.right {
			continue
		}
		// Merge the right symbol into this one and unlink it.
		right := s.next
		s.id = top.id
		syms[right].id = -1
		s.next = syms[right].next
		if s.next >= 0 {
			syms[s.next].prev = top.pos
		}
		if s.prev >= 0 {
			p := s.prev
			if m, ok := t.merges.get(syms[p].id, s.id); ok {
				h = heapPush(h, candidate{m.rank, p, syms[p].id, s.id, m.id})
			}
		}
		if s.next >= 0 {
			if m, ok := t.merges.get(s.id, syms[s.next].id); ok {
				h = heapPush(h, candidate{m.rank, top.pos, s.id, syms[s.next].id, m.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	w.syms, w.heap = syms, h
	return dst
}

// smallWord is the longest word bpeSmall handles.
const smallWord = 32

// bpeSmall is bpe for short words, in arrays on the stack: it finds the lowest-ranked pair
// (leftmost on ties) by scanning, which for a few symbols is cheaper than a heap.
func (t *Tokenizer) bpeSmall(word string, dst []int32) []int32 {
	var ids, ranks, next [smallWord]int32 // next[i]: the id pair i merges into
	n := 0
	for i := 0; i < len(word); i++ {
		if id := t.byteToken[word[i]]; id >= 0 {
			ids[n] = id
			n++
		}
	}
	pair := func(i int) {
		if m, ok := t.merges.get(ids[i], ids[i+1]); ok {
			ranks[i], next[i] = m.rank, m.id
		} else {
			ranks[i] = -1
		}
	}
	for i := 0; i+1 < n; i++ {
		pair(i)
	}
	for n > 1 {
		best := -1
		for i := 0; i+1 < n; i++ {
			if ranks[i] >= 0 && (best < 0 || ranks[i] < ranks[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		ids[best] = next[best]
		copy(ids[best+1:n-1], ids[best+2:n])
		if best+2 < n {
			copy(ranks[best+1:n-2], ranks[best+2:n-1])
			copy(next[best+1:n-2], next[best+2:n-1])
		}
		n--
		if best > 0 {
			pair(best - 1)
		}
		if best+1 < n {
			pair(best)
		}
	}
	return append(dst, ids[:n]...)
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}
