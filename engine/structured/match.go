package structured

import "math"

// A matcher reads a document byte by byte and says whether each byte may come next: a stack of
// frames, the innermost last, the document itself at the bottom. It is a plain value: copying
// its frames copies the state (the mask tries every token from the same state).
type matcher struct {
	frames []frame
}

// A frame is one value being read (or the document, or an object's key).
type frame struct {
	n     *node    // the value's node; for a key, the object's node
	lits  [][]byte // literals and keys: the candidates, sorted
	role  uint8
	phase uint8
	ws    uint8 // the whitespace of the current gap: 0 none, 1 one space, 2+ a newline and ws−2 blanks
	need  uint8 // strings: UTF-8 continuation bytes still to come
	lo    byte  // strings: the range of the next continuation byte
	hi    byte
	count int32 // objects: properties settled; arrays: items; strings: characters; numbers: bytes; literals: bytes matched
	a, b  int32 // literals and keys: the candidates still possible, [a, b); strings: a \u escape's digits and value
}

// Frame roles.
const (
	roleDoc   uint8 = iota // the whole document
	roleValue              // a value of n
	roleKey                // an object's key: a literal among the key set's keys, or (free objects) a string
)

// Phases, by the frame's node kind.
const (
	// The document: its opening text, the value, its closing text (lits[0] and lits[1] of
	// the document's frame, often empty).
	docOpen  uint8 = iota // reading the opening text
	docStart              // before the value
	docClose              // reading the closing text
	docDone               // after it: only the end of the answer
)

const (
	objFirst uint8 = iota // after '{'
	objComma              // after ','
	objKey                // a key is being read (its frame above)
	objColon              // after the key
	objValue              // after ':'
	objNext               // after a value
)

const (
	arrFirst uint8 = iota // after '['
	arrComma              // after ','
	arrValue              // an item is being read
	arrNext               // after an item
)

const (
	strChars  uint8 = iota // inside the quotes
	strEscape              // after '\'
	strHex                 // in a \u escape
)

const (
	numSign  uint8 = iota // after '-'
	numZero               // a leading 0
	numInt                // integer digits
	numDot                // after '.'
	numFrac               // fraction digits
	numE                  // after 'e' or 'E'
	numESign              // after the exponent's sign
	numExp                // exponent digits
)

// Bounds on a number's text, so that a model cannot add digits forever and every number
// generated reads back in a float64 (and, without fraction or exponent, exactly: below 10^15,
// within JavaScript's safe integers): at most maxNumber bytes, maxWhole digits before the
// point, maxExp in the exponent.
const (
	maxNumber = 32
	maxWhole  = 15
	maxExp    = 2
)

// maxBlanks bounds the blanks after a gap's newline (indentation).
const maxBlanks = 20

// result is what a frame does with a byte.
type result uint8

const (
	reject         result = iota // the byte cannot come here
	consumed                     // the frame took it and goes on
	doneConsumed                 // the frame took it and its value is complete
	doneUnconsumed               // the value ended before the byte (a number); the parent takes it
)

// start returns a matcher at the start of a document of f.
func (f *Format) start() matcher {
	doc := frame{n: f.root, role: roleDoc, phase: docStart, lits: [][]byte{f.open, f.close}}
	if len(f.open) > 0 {
		doc.phase = docOpen
	}
	return matcher{frames: []frame{doc}}
}

// copyFrom makes m a copy of src, reusing m's storage.
func (m *matcher) copyFrom(src *matcher) {
	m.frames = append(m.frames[:0], src.frames...)
}

// feed reads one byte, reporting whether it may come next; on false m is left unusable.
func (m *matcher) feed(b byte) bool {
	for {
		top := len(m.frames) - 1
		r := m.step(top, b)
		switch r {
		case reject:
			return false
		case consumed:
			return true
		}
		done := m.frames[top]
		m.frames = m.frames[:top]
		m.childDone(&m.frames[top-1], &done)
		if r == doneConsumed {
			return true
		}
	}
}

// canEnd reports whether the document is complete here: the answer may end.
func (m *matcher) canEnd() bool {
	switch len(m.frames) {
	case 1:
		return m.frames[0].phase == docDone
	case 2:
		return len(m.frames[0].lits[1]) == 0 && accepting(&m.frames[1])
	}
	return false
}

// stringRoom returns how many characters of plain content may come next: inside a string,
// between characters, the room its maxLength leaves (math.MaxInt32 unbounded); −1 elsewhere.
func (m *matcher) stringRoom() int32 {
	f := &m.frames[len(m.frames)-1]
	if f.role == roleDoc || f.lits != nil || f.n.kind != kindString || f.phase != strChars || f.need > 0 {
		return -1
	}
	if f.n.maxLen < 0 {
		return math.MaxInt32
	}
	return int32(f.n.maxLen) - f.count
}

// accepting reports whether a frame's value may end before the next byte (a number or a
// literal that a longer one extends).
func accepting(f *frame) bool {
	switch f.n.kind {
	case kindNumber, kindInteger:
		switch f.phase {
		case numZero, numInt, numFrac, numExp:
			return true
		}
	case kindLiteral:
		return len(f.lits[f.a]) == int(f.count)
	}
	return false
}

// gap reads b as whitespace between tokens, reporting whether it is allowed there: none, one
// space, or a newline and up to maxBlanks spaces or tabs.
func gap(f *frame, b byte) bool {
	switch {
	case b == ' ' && f.ws == 0:
		f.ws = 1
	case b == '\n' && f.ws == 0:
		f.ws = 2
	case (b == ' ' || b == '\t') && f.ws >= 2 && f.ws < 2+maxBlanks:
		f.ws++
	default:
		return false
	}
	return true
}

// isBlank reports whether b is JSON whitespace.
func isBlank(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func (m *matcher) step(i int, b byte) result {
	f := &m.frames[i]
	if f.role == roleKey && f.lits != nil {
		return stepLiteral(f, b)
	}
	if f.role == roleDoc {
		switch f.phase {
		case docOpen, docClose:
			text := f.lits[0]
			if f.phase == docClose {
				text = f.lits[1]
			}
			if b != text[f.count] {
				return reject
			}
			if f.count++; int(f.count) == len(text) {
				f.phase++ // docStart after the opening, docDone after the closing
				f.count = 0
			}
			return consumed
		case docStart:
			// No whitespace before the value: the answer opens with it, as people expect.
			return m.startValue(f.n, b)
		}
		return reject
	}
	switch f.n.kind {
	case kindObject:
		return m.stepObject(f, b)
	case kindArray:
		return m.stepArray(f, b)
	case kindString:
		return stepString(f, b)
	case kindNumber, kindInteger:
		return stepNumber(f, b)
	case kindLiteral:
		return stepLiteral(f, b)
	}
	return reject
}

// ok turns a yes or no into consumed or reject.
func ok(yes bool) result {
	if yes {
		return consumed
	}
	return reject
}

// startValue begins a value of n with its first byte b, pushing its frame (or none, for a
// value that b completes).
func (m *matcher) startValue(n *node, b byte) result {
	// The parent's gap ends here; m.frames may move when a frame is pushed.
	m.frames[len(m.frames)-1].ws = 0
	if n.kind == kindAny {
		n = anyValue(b)
		if n == nil {
			return reject
		}
	}
	if n.kind == kindAnyOf {
		var alt *node
		for _, a := range n.alts {
			if a.first[b>>6]&(1<<(b&63)) != 0 {
				alt = a
				break
			}
		}
		if alt == nil {
			return reject
		}
		return m.startValue(alt, b)
	}
	f := frame{n: n, role: roleValue}
	switch n.kind {
	case kindObject:
		if b != '{' || len(m.frames) >= 2*maxDepth {
			return reject
		}
		f.phase = objFirst
	case kindArray:
		if b != '[' || len(m.frames) >= 2*maxDepth {
			return reject
		}
		f.phase = arrFirst
	case kindString:
		if b != '"' {
			return reject
		}
		f.phase = strChars
	case kindNumber, kindInteger:
		switch {
		case b == '-' && !n.nonNegative:
			f.phase = numSign
		case b == '0' && !n.positive:
			f.phase = numZero
		case b >= '1' && b <= '9':
			f.phase, f.a = numInt, 1
		default:
			return reject
		}
		f.count = 1
	case kindLiteral:
		f.lits, f.a, f.b = n.literals, 0, int32(len(n.literals))
		m.frames = append(m.frames, f)
		r := stepLiteral(&m.frames[len(m.frames)-1], b)
		if r == reject {
			m.frames = m.frames[:len(m.frames)-1]
		}
		return m.settle(r)
	default:
		return reject
	}
	m.frames = append(m.frames, f)
	return consumed
}

// settle finishes a frame that its first byte completed (a one-byte literal that nothing
// extends), as feed would.
func (m *matcher) settle(r result) result {
	if r != doneConsumed {
		return r
	}
	top := len(m.frames) - 1
	done := m.frames[top]
	m.frames = m.frames[:top]
	m.childDone(&m.frames[top-1], &done)
	return consumed
}

// The nodes of an untyped value, by its first byte, and of a free object's keys. Never
// changed after initialization.
var (
	anyNode    = &node{kind: kindAny}
	anyObject  = &node{kind: kindObject, values: anyNode}
	anyArray   = &node{kind: kindArray, items: anyNode, maxItems: -1}
	anyString  = &node{kind: kindString, maxLen: -1}
	anyNumber  = &node{kind: kindNumber}
	anyLiteral = &node{kind: kindLiteral, literals: [][]byte{[]byte("false"), []byte("null"), []byte("true")}}
)

// anyValue returns the node of an untyped value that starts with b, or nil.
func anyValue(b byte) *node {
	switch {
	case b == '{':
		return anyObject
	case b == '[':
		return anyArray
	case b == '"':
		return anyString
	case b == '-' || b >= '0' && b <= '9':
		return anyNumber
	case b == 't' || b == 'f' || b == 'n':
		return anyLiteral
	}
	return nil
}

// childDone advances parent past the value (or key) that just ended.
func (m *matcher) childDone(parent *frame, done *frame) {
	switch {
	case parent.role == roleDoc:
		parent.phase, parent.count = docDone, 0
		if len(parent.lits[1]) > 0 {
			parent.phase = docClose
		}
	case parent.n.kind == kindObject:
		if parent.phase == objKey {
			if done.lits != nil {
				// The key's property is settled, and those before it that were skipped.
				ks := &parent.n.keySets[parent.count]
				parent.count = int32(ks.index[done.a]) + 1
			}
			parent.phase = objColon
			return
		}
		if parent.n.cases != nil && parent.count == 1 {
			// The first property's value names the case: the rest follows that case's node.
			parent.n = parent.n.cases[done.a]
		}
		parent.phase = objNext
	case parent.n.kind == kindArray:
		parent.count++
		parent.phase = arrNext
	}
}

func (m *matcher) stepObject(f *frame, b byte) result {
	n := f.n
	free := n.props == nil && n.values != nil
	switch f.phase {
	case objFirst, objComma, objNext:
		if isBlank(b) {
			return ok(gap(f, b))
		}
		var more, end bool // whether a key may come, whether the object may close
		if free {
			more, end = true, true
		} else {
			ks := &n.keySets[f.count]
			more, end = len(ks.keys) > 0, ks.end
		}
		switch {
		case f.phase == objNext && b == ',' && more:
			f.phase, f.ws = objComma, 0
			return consumed
		case f.phase != objComma && b == '}' && end:
			return doneConsumed
		case f.phase != objNext && b == '"' && more:
			f.phase, f.ws = objKey, 0
			key := frame{n: n, role: roleKey}
			if free {
				key.n, key.phase = anyString, strChars
			} else {
				ks := &n.keySets[f.count]
				key.lits, key.a, key.b, key.count = ks.keys, 0, int32(len(ks.keys)), 1
			}
			m.frames = append(m.frames, key)
			return consumed
		}
		return reject
	case objColon:
		if isBlank(b) {
			return ok(gap(f, b))
		}
		if b != ':' {
			return reject
		}
		f.phase, f.ws = objValue, 0
		return consumed
	case objValue:
		if isBlank(b) {
			return ok(gap(f, b))
		}
		v := n.values
		if !free {
			v = n.props[f.count-1].value
		}
		return m.startValue(v, b)
	}
	return reject
}

func (m *matcher) stepArray(f *frame, b byte) result {
	n := f.n
	if isBlank(b) && f.phase != arrValue {
		return ok(gap(f, b))
	}
	more := n.maxItems < 0 || int(f.count) < n.maxItems
	switch {
	case f.phase == arrNext && b == ',' && more:
		f.phase, f.ws = arrComma, 0
		return consumed
	case f.phase != arrComma && b == ']' && int(f.count) >= n.minItems:
		return doneConsumed
	case f.phase != arrNext && more:
		f.phase = arrValue
		r := m.startValue(n.items, b)
		if r == reject {
			f.phase = arrFirst // m is unusable after a reject anyway; keep it tidy
		}
		return r
	}
	return reject
}

func stepString(f *frame, b byte) result {
	n := f.n
	room := n.maxLen < 0 || int(f.count) < n.maxLen
	if f.need > 0 {
		if b < f.lo || b > f.hi {
			return reject
		}
		f.need--
		f.lo, f.hi = 0x80, 0xBF
		return consumed
	}
	switch f.phase {
	case strEscape:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.phase = strChars
			f.count++
			return consumed
		case 'u':
			f.phase, f.a, f.b = strHex, 0, 0
			return consumed
		}
		return reject
	case strHex:
		d, isHex := hexDigit(b)
		if !isHex {
			return reject
		}
		f.a++
		f.b = f.b<<4 | int32(d)
		if f.a == 2 && f.b >= 0xD8 && f.b <= 0xDF {
			return reject // a surrogate: JSON allows it, but it is no character
		}
		if f.a == 4 {
			f.phase = strChars
			f.count++
		}
		return consumed
	}
	switch {
	case b == '"':
		if int(f.count) < n.minLen {
			return reject
		}
		return doneConsumed
	case !room || b < 0x20:
		return reject
	case b == '\\':
		f.phase = strEscape
		return consumed
	case b < 0x80:
		f.count++
		return consumed
	}
	// The lead byte of a multi-byte character; its continuation bytes as Unicode's table of
	// well-formed sequences allows (no overlongs, no surrogates, nothing past U+10FFFF).
	switch {
	case b >= 0xC2 && b <= 0xDF:
		f.need, f.lo, f.hi = 1, 0x80, 0xBF
	case b == 0xE0:
		f.need, f.lo, f.hi = 2, 0xA0, 0xBF
	case b >= 0xE1 && b <= 0xEC || b == 0xEE || b == 0xEF:
		f.need, f.lo, f.hi = 2, 0x80, 0xBF
	case b == 0xED:
		f.need, f.lo, f.hi = 2, 0x80, 0x9F
	case b == 0xF0:
		f.need, f.lo, f.hi = 3, 0x90, 0xBF
	case b >= 0xF1 && b <= 0xF3:
		f.need, f.lo, f.hi = 3, 0x80, 0xBF
	case b == 0xF4:
		f.need, f.lo, f.hi = 3, 0x80, 0x8F
	default:
		return reject
	}
	f.count++
	return consumed
}

// hexDigit returns b's value as a hexadecimal digit.
func hexDigit(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	case b >= 'A' && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

func stepNumber(f *frame, b byte) result {
	digit := b >= '0' && b <= '9'
	integer := f.n.kind == kindInteger
	next := f.phase
	switch f.phase {
	case numSign:
		switch {
		case b == '0':
			next = numZero
		case digit:
			next = numInt
		default:
			return reject
		}
	case numZero, numInt:
		switch {
		case digit && f.phase == numInt:
		case b == '.' && !integer:
			next = numDot
		case (b == 'e' || b == 'E') && !integer:
			next = numE
		default:
			return doneUnconsumed
		}
	case numDot, numFrac:
		switch {
		case digit:
			next = numFrac
		case f.phase == numFrac:
			if b == 'e' || b == 'E' {
				next = numE
				break
			}
			return doneUnconsumed
		default:
			return reject
		}
	case numE:
		switch {
		case b == '+' || b == '-':
			next = numESign
		case digit:
			next = numExp
		default:
			return reject
		}
	case numESign, numExp:
		switch {
		case digit:
			next = numExp
		case f.phase == numExp:
			return doneUnconsumed
		default:
			return reject
		}
	}
	// f.a counts the digits of the part being read.
	if next != f.phase {
		f.a = 0
	}
	if digit {
		f.a++
	}
	// A byte that leaves the number unfinished (a sign, a point, an exponent's letter) must
	// leave room for the digit that finishes it, or the number would reach a dead end.
	unfinished := next == numSign || next == numDot || next == numE || next == numESign
	if f.count >= maxNumber || unfinished && f.count+1 >= maxNumber || next == numInt && f.a > maxWhole || next == numExp && f.a > maxExp {
		// No more bytes: end here if the number may end, else it never will.
		if accepting(f) {
			return doneUnconsumed
		}
		return reject
	}
	f.phase = next
	f.count++
	return consumed
}

// stepLiteral narrows the candidates to those whose next byte is b.
func stepLiteral(f *frame, b byte) result {
	pos := int(f.count)
	a, e := f.a, f.b
	// The candidates share their first pos bytes and are sorted: one that ends here comes
	// first, and those with byte b next form one run.
	lo := a
	for lo < e && (len(f.lits[lo]) <= pos || f.lits[lo][pos] < b) {
		lo++
	}
	hi := lo
	for hi < e && len(f.lits[hi]) > pos && f.lits[hi][pos] == b {
		hi++
	}
	if lo == hi {
		if len(f.lits[a]) == pos {
			return doneUnconsumed
		}
		return reject
	}
	f.a, f.b, f.count = lo, hi, int32(pos+1)
	if hi-lo == 1 && len(f.lits[lo]) == pos+1 {
		return doneConsumed
	}
	return consumed
}
