package tokenizer

import "sort"

// Added tokens (Control and UserDefined) are cut out of the text before pre-tokenization, as
// HF's AddedVocabulary does with an Aho-Corasick automaton in leftmost-longest mode: scanning
// left to right, the first position where some token starts wins, and among the tokens
// starting there the longest. A byte trie gives the same answer.

type trieEntry struct {
	text string
	id   int32
}

// trie is a byte trie in flat arrays. Node 0 is the root; the root's children are found
// through rootNext for speed, deeper nodes list their children in edges.
type trie struct {
	rootNext [256]int32 // child of the root for each byte, or -1
	nodes    []trieNode
	edges    []trieEdge
}

type trieNode struct {
	id        int32 // token ending here, or -1
	firstEdge int32
	edgeCount int32
}

type trieEdge struct {
	b    byte
	next int32
}

// newTrie builds a trie; when two entries have the same text the lower id wins.
func newTrie(entries []trieEntry) *trie {
	t := &trie{}
	for i := range t.rootNext {
		t.rootNext[i] = -1
	}
	if len(entries) == 0 {
		return t
	}
	sorted := append([]trieEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].text != sorted[j].text {
			return sorted[i].text < sorted[j].text
		}
		return sorted[i].id < sorted[j].id
	})
	// Build breadth-first from the sorted list so each node's children are contiguous.
	type span struct{ lo, hi, depth, node int }
	t.nodes = append(t.nodes, trieNode{id: -1})
	queue := []span{{0, len(sorted), 0, 0}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		lo := s.lo
		// An entry ending exactly at this depth names this node.
		for lo < s.hi && len(sorted[lo].text) == s.depth {
			if t.nodes[s.node].id < 0 {
				t.nodes[s.node].id = sorted[lo].id
			}
			lo++
		}
		t.nodes[s.node].firstEdge = int32(len(t.edges))
		for lo < s.hi {
			b := sorted[lo].text[s.depth]
			hi := lo
			for hi < s.hi && sorted[hi].text[s.depth] == b {
				hi++
			}
			child := len(t.nodes)
			t.nodes = append(t.nodes, trieNode{id: -1})
			t.edges = append(t.edges, trieEdge{b, int32(child)})
			if s.node == 0 {
				t.rootNext[b] = int32(child)
			}
			queue = append(queue, span{lo, hi, s.depth + 1, child})
			lo = hi
		}
		t.nodes[s.node].edgeCount = int32(len(t.edges)) - t.nodes[s.node].firstEdge
	}
	return t
}

// empty reports whether the trie holds no token.
func (t *trie) empty() bool { return len(t.nodes) == 0 }

// longestAt returns the id and length of the longest token that s[i:] starts with, or -1, 0.
func (t *trie) longestAt(s string, i int) (int32, int) {
	node := t.rootNext[s[i]]
	best, bestLen := int32(-1), 0
	for j := i + 1; node >= 0; j++ {
		n := &t.nodes[node]
		if n.id >= 0 {
			best, bestLen = n.id, j-i
		}
		if j == len(s) {
			break
		}
		next := int32(-1)
		for _, e := range t.edges[n.firstEdge : n.firstEdge+n.edgeCount] {
			if e.b == s[j] {
				next = e.next
				break
			}
		}
		node = next
	}
	return best, bestLen
}

// encodeAround appends to dst the ids of the tokens that next finds in s, left to right, and
// what encode makes of the stretches between them (empty ones included).
func (t *trie) encodeAround(s string, dst []int32, encode func(s string, dst []int32) []int32) []int32 {
	for from := 0; ; {
		start, n, id := t.next(s, from)
		if start < 0 {
			return encode(s[from:], dst)
		}
		dst = encode(s[from:start], dst)
		dst = append(dst, id)
		from = start + n
	}
}

// next finds the leftmost-longest token in s at or after byte from: its start, length and id,
// or -1 when none.
func (t *trie) next(s string, from int) (start, length int, id int32) {
	if t.empty() {
		return -1, 0, -1
	}
	for i := from; i < len(s); i++ {
		if t.rootNext[s[i]] < 0 {
			continue
		}
		if id, n := t.longestAt(s, i); n > 0 {
			return i, n, id
		}
	}
	return -1, 0, -1
}
