// Package layers pins the project's import graph: its test holds, for every package, the
// project packages it may import (in its programs and in its tests), and fails on any other
// arrow, on an arrow the table names but no file uses, and on a package docs/ARCHITECTURE.md
// does not name. A new arrow is a design decision: it goes into the table and ARCHITECTURE.md
// together, with the reason.
package layers
