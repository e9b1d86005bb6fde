package jinja

// markSpecialNames records whether a macro body reads caller, varargs or kwargs, which
// decides how calls to it bind arguments (as Jinja's find_undeclared does).
func markSpecialNames(sig *signature, body []node) {
	declared := map[string]bool{}
	for _, p := range sig.params {
		declared[p] = true
	}
	var visitExpr func(e expr)
	visitExpr = func(e expr) {
		walkExpr(e, func(x expr) {
			if n, ok := x.(*nameExpr); ok && !declared[n.name] {
				switch n.name {
				case "caller":
					sig.usesCaller = true
				case "varargs":
					sig.usesVarargs = true
				case "kwargs":
					sig.usesKwargs = true
				}
			}
		})
	}
	walkNodes(body, visitExpr)
}

// walkNodes calls f on every expression in the statements, not entering nested macros.
func walkNodes(body []node, f func(expr)) {
	for _, n := range body {
		switch n := n.(type) {
		case *outputNode:
			f(n.expr)
		case *ifNode:
			for i, c := range n.conds {
				f(c)
				walkNodes(n.bodies[i], f)
			}
			walkNodes(n.els, f)
		case *forNode:
			f(n.iter)
			if n.cond != nil {
				f(n.cond)
			}
			walkNodes(n.body, f)
			walkNodes(n.els, f)
		case *setNode:
			f(n.value)
		case *setBlockNode:
			if n.filter != nil {
				f(n.filter)
			}
			walkNodes(n.body, f)
		case *callBlockNode:
			f(n.call)
		case *filterBlockNode:
			f(n.filter)
			walkNodes(n.body, f)
		case *withNode:
			for _, v := range n.values {
				f(v)
			}
			walkNodes(n.body, f)
		case *blockNode:
			walkNodes(n.body, f)
		}
	}
}

// walkExpr calls f on e and every expression inside it.
func walkExpr(e expr, f func(expr)) {
	if e == nil {
		return
	}
	f(e)
	args := func(c callArgs) {
		for _, a := range c.args {
			walkExpr(a, f)
		}
		for _, k := range c.kwargs {
			walkExpr(k.value, f)
		}
		walkExpr(c.dynArgs, f)
		walkExpr(c.dynKwargs, f)
	}
	switch e := e.(type) {
	case *tupleExpr:
		for _, x := range e.items {
			walkExpr(x, f)
		}
	case *listExpr:
		for _, x := range e.items {
			walkExpr(x, f)
		}
	case *dictExpr:
		for i := range e.keys {
			walkExpr(e.keys[i], f)
			walkExpr(e.vals[i], f)
		}
	case *getattrExpr:
		walkExpr(e.obj, f)
	case *getitemExpr:
		walkExpr(e.obj, f)
		walkExpr(e.key, f)
	case *sliceExpr:
		walkExpr(e.start, f)
		walkExpr(e.stop, f)
		walkExpr(e.step, f)
	case *callExpr:
		walkExpr(e.fn, f)
		args(e.callArgs)
	case *filterExpr:
		walkExpr(e.node, f)
		args(e.callArgs)
	case *testExpr:
		walkExpr(e.node, f)
		args(e.callArgs)
	case *unaryExpr:
		walkExpr(e.x, f)
	case *binExpr:
		walkExpr(e.l, f)
		walkExpr(e.r, f)
	case *andExpr:
		walkExpr(e.l, f)
		walkExpr(e.r, f)
	case *orExpr:
		walkExpr(e.l, f)
		walkExpr(e.r, f)
	case *concatExpr:
		for _, x := range e.items {
			walkExpr(x, f)
		}
	case *compareExpr:
		walkExpr(e.first, f)
		for _, x := range e.operands {
			walkExpr(x, f)
		}
	case *condExpr:
		walkExpr(e.test, f)
		walkExpr(e.yes, f)
		walkExpr(e.no, f)
	}
}
