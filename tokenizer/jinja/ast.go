package jinja

// Statements.

type node interface{ nodeLine() int }

type pos struct{ line int }

func (p pos) nodeLine() int { return p.line }

type textNode struct {
	pos
	text string
}

type outputNode struct {
	pos
	expr expr
}

type ifNode struct {
	pos
	conds  []expr
	bodies [][]node
	els    []node
}

type forNode struct {
	pos
	target    target
	iter      expr
	cond      expr // the "if" filter of the loop, or nil
	body      []node
	els       []node
	recursive bool
}

type setNode struct {
	pos
	target target
	value  expr
}

// setBlockNode is {% set x %}...{% endset %}, optionally filtered.
type setBlockNode struct {
	pos
	target target
	filter *filterExpr // chain applied to the body, innermost node nil
	body   []node
}

type macroNode struct {
	pos
	name string
	sig  signature
	body []node
}

type callBlockNode struct {
	pos
	sig  signature
	call *callExpr
	body []node
}

type filterBlockNode struct {
	pos
	filter *filterExpr
	body   []node
}

type withNode struct {
	pos
	targets []target
	values  []expr
	body    []node
}

type loopControlNode struct {
	pos
	brk bool
}

// blockNode renders its body in place: without template inheritance that is all a
// {% block %} does. transparent tags ({% generation %}) parse to it too.
type blockNode struct {
	pos
	body []node
}

// unsupportedNode is a tag that needs a template loader (extends, include, import), which a
// chat template never has: rendering it fails as it does in Jinja without a loader.
type unsupportedNode struct {
	pos
	tag string
}

type signature struct {
	params   []string
	defaults []expr // for the last len(defaults) params
	// special names the body uses, which change how calls bind arguments
	usesCaller, usesVarargs, usesKwargs bool
}

// Assignment targets.

type target interface{ isTarget() }

type nameTarget struct{ name string }

type tupleTarget struct{ items []target }

type nsTarget struct{ name, attr string }

func (nameTarget) isTarget()  {}
func (tupleTarget) isTarget() {}
func (nsTarget) isTarget()    {}

// Expressions.

type expr interface{ exprLine() int }

type epos struct{ line int }

func (p epos) exprLine() int { return p.line }

type constExpr struct {
	epos
	v Value
}

type nameExpr struct {
	epos
	name string
}

type tupleExpr struct {
	epos
	items []expr
}

type listExpr struct {
	epos
	items []expr
}

type dictExpr struct {
	epos
	keys, vals []expr
}

type getattrExpr struct {
	epos
	obj  expr
	attr string
}

type getitemExpr struct {
	epos
	obj, key expr
}

type sliceExpr struct {
	epos
	start, stop, step expr // nil when omitted
}

type kwarg struct {
	name  string
	value expr
}

type callArgs struct {
	args      []expr
	kwargs    []kwarg
	dynArgs   expr
	dynKwargs expr
}

type callExpr struct {
	epos
	fn expr
	callArgs
}

type filterExpr struct {
	epos
	node expr // nil inside a filter block or set block: the rendered body
	name string
	callArgs
}

type testExpr struct {
	epos
	node expr
	name string
	callArgs
}

type unaryExpr struct {
	epos
	op string // "-", "+", "not"
	x  expr
}

type binExpr struct {
	epos
	op   string // + - * / // % **
	l, r expr
}

type andExpr struct {
	epos
	l, r expr
}

type orExpr struct {
	epos
	l, r expr
}

type concatExpr struct {
	epos
	items []expr
}

type compareExpr struct {
	epos
	first    expr
	ops      []string // == != < <= > >= in notin
	operands []expr
}

type condExpr struct {
	epos
	test, yes, no expr // no may be nil
}
