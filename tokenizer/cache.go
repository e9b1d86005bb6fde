package tokenizer

import "hash/maphash"

// wordCache remembers the ids of words already merged, in an open-addressing table whose keys
// and values live in two arenas, so that a hit costs one hash, one probe and one comparison and
// nothing is allocated. When it fills up it is emptied.
type wordCache struct {
	seed  maphash.Seed
	slots []cacheSlot // len is a power of two; hash 0 marks an empty slot
	keys  []byte
	ids   []int32
	used  int
}

type cacheSlot struct {
	hash   uint64
	keyOff uint32
	idOff  uint32
	keyLen uint16
	idLen  uint16
}

// Cache bounds: at most cacheWords words (half the slots), cacheIDs ids and 8 MB of keys.
const (
	cacheWords   = 1 << 16
	cacheIDs     = 1 << 20
	cacheKeys    = 8 << 20
	cacheWordLen = 255 // longer words are not cached
)

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed(), slots: make([]cacheSlot, 2*cacheWords)}
}

func (c *wordCache) hash(word string) uint64 {
	return maphash.String(c.seed, word) | 1
}

// get returns the ids cached for word.
func (c *wordCache) get(word string) ([]int32, bool) {
	h := c.hash(word)
	mask := uint64(len(c.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &c.slots[i]
		if s.hash == 0 {
			return nil, false
		}
		if s.hash == h && int(s.keyLen) == len(word) && string(c.keys[s.keyOff:s.keyOff+uint32(s.keyLen)]) == word {
			return c.ids[s.idOff : s.idOff+uint32(s.idLen)], true
		}
	}
}

// put remembers ids for word (not already present).
func (c *wordCache) put(word string, ids []int32) {
	if len(word) > cacheWordLen || len(ids) > 0xFFFF {
		return
	}
	if c.used >= cacheWords || len(c.ids)+len(ids) > cacheIDs || len(c.keys)+len(word) > cacheKeys {
		c.reset()
	}
	h := c.hash(word)
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for c.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	c.slots[i] = cacheSlot{hash: h, keyOff: uint32(len(c.keys)), idOff: uint32(len(c.ids)), keyLen: uint16(len(word)), idLen: uint16(len(ids))}
	c.keys = append(c.keys, word...)
	c.ids = append(c.ids, ids...)
	c.used++
}

func (c *wordCache) reset() {
	clear(c.slots)
	c.keys, c.ids, c.used = c.keys[:0], c.ids[:0], 0
}
