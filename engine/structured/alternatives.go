package structured

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Alternatives (anyOf), references ($ref) and the checks that run once every node is compiled.

// anyOf returns a node matching any of alts, which must start with different bytes (so that
// the first byte of a value decides which one it is); literal sets are merged.
func anyOf(alts []*node, path string) (*node, error) {
	var flat []*node
	for _, a := range alts {
		if a.kind == kindAnyOf {
			flat = append(flat, a.alts...)
		} else {
			flat = append(flat, a)
		}
	}
	// Merge literal sets, and literals into a wider node that covers them when it starts the
	// same way would be ambiguous: refuse those below.
	var lit *node
	var rest []*node
	for _, a := range flat {
		if a.kind == kindLiteral {
			if lit == nil {
				lit = &node{kind: kindLiteral}
			}
			lit.literals = append(lit.literals, a.literals...)
			continue
		}
		rest = append(rest, a)
	}
	if lit != nil {
		slices.SortFunc(lit.literals, bytes.Compare)
		lit.literals = slices.CompactFunc(lit.literals, bytes.Equal)
		rest = append(rest, lit)
	}
	if len(rest) == 1 {
		return rest[0], nil
	}
	return &node{kind: kindAnyOf, alts: rest}, nil
}

// reference returns the node a $ref names: "#", "#/$defs/name" or "#/definitions/name".
func (c *compiler) reference(ref, path string) (*node, error) {
	if n, ok := c.refs[ref]; ok {
		return n, nil
	}
	var target any
	switch {
	case ref == "#":
		target = c.doc
	case strings.HasPrefix(ref, "#/"):
		target = c.doc
		for _, part := range strings.Split(ref[2:], "/") {
			part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
			m, ok := target.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("schema at %s: $ref %q names nothing", at(path), ref)
			}
			if target, ok = m[part]; !ok {
				return nil, fmt.Errorf("schema at %s: $ref %q names nothing", at(path), ref)
			}
		}
	default:
		return nil, fmt.Errorf("schema at %s: $ref %q: only references within the schema (#...) are supported", at(path), ref)
	}
	// A placeholder first, so that a recursive schema refers to itself.
	n := &node{ref: ref}
	c.refs[ref] = n
	compiled, err := c.compile(target, strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, err
	}
	if compiled.ref != "" {
		c.pending = append(c.pending, n)
		n.ref = compiled.ref
		return n, nil
	}
	*n = *compiled
	return n, nil
}

// check refuses alternatives that start alike, once every node is compiled (references
// resolved).
func (c *compiler) check(n *node, seen map[*node]bool) error {
	if seen[n] {
		return nil
	}
	seen[n] = true
	first := firstBytes(n, map[*node]bool{})
	for b := range 256 {
		if first[b] {
			n.first[b>>6] |= 1 << (b & 63)
		}
	}
	if n.kind == kindAnyOf {
		var starts [256]int
		for i, a := range n.alts {
			first := firstBytes(a, map[*node]bool{})
			for b := range 256 {
				if first[b] {
					if starts[b] != 0 {
						return fmt.Errorf("schema: anyOf: alternatives %d and %d can both start with %q; alternatives must differ in type (two objects or two arrays are not supported yet)",
							starts[b]-1, i, rune(b))
					}
					starts[b] = i + 1
				}
			}
		}
	}
	for _, child := range children(n) {
		if err := c.check(child, seen); err != nil {
			return err
		}
	}
	return nil
}

// children returns the nodes below n.
func children(n *node) []*node {
	var out []*node
	for _, p := range n.props {
		out = append(out, p.value)
	}
	out = append(out, n.cases...)
	for _, m := range []*node{n.values, n.items} {
		if m != nil {
			out = append(out, m)
		}
	}
	return append(out, n.alts...)
}

// firstBytes returns the bytes a value of n may start with.
func firstBytes(n *node, seen map[*node]bool) (set [256]bool) {
	number := func() {
		set['-'] = true
		for d := '0'; d <= '9'; d++ {
			set[d] = true
		}
	}
	switch n.kind {
	case kindAny:
		set['{'], set['['], set['"'], set['t'], set['f'], set['n'] = true, true, true, true, true, true
		number()
	case kindObject:
		set['{'] = true
	case kindArray:
		set['['] = true
	case kindString:
		set['"'] = true
	case kindNumber, kindInteger:
		number()
	case kindLiteral:
		for _, l := range n.literals {
			set[l[0]] = true
		}
	case kindAnyOf:
		if seen[n] {
			return set
		}
		seen[n] = true
		for _, a := range n.alts {
			s := firstBytes(a, seen)
			for b := range 256 {
				set[b] = set[b] || s[b]
			}
		}
	}
	return set
}
