package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
)

// Env gives the value (a string or an int) of the selectors and identifiers
// a manifest may be built from besides literals ("H.Image"); the package's
// string constants are added by Extract.
type Env map[string]any

// Found is one string expression of a Go package that holds a Pod document.
type Found struct {
	Where string // file:line
	Text  string
}

// Extract returns the string expressions of a Go package (its files by name)
// that can be evaluated without running it and hold "kind: Pod": sums of
// literals, constants and env values, fmt.Sprintf, strings.Replace(All) and
// calls of the package's one-statement functions (`func admissionPod(name, extra
// string) string { return ... }`) with such arguments. An expression that
// cannot be evaluated (it uses a variable, another call) is not cut into the
// parts that can: a part of a manifest is not the manifest.
func Extract(files map[string][]byte, env Env) ([]Found, error) {
	fset := token.NewFileSet()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	e := evaluator{env: Env{}, funcs: map[string]*ast.FuncDecl{}}
	for k, v := range env {
		e.env[k] = v
	}
	var parsed []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, files[name], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
		e.declarations(f)
	}
	for _, f := range parsed {
		e.constants(f)
	}
	var out []Found
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		expr, ok := n.(ast.Expr)
		if !ok || !e.stringish(expr) {
			return true
		}
		if s, ok := e.eval(expr); ok {
			if strings.Contains(s, "kind: Pod") {
				p := fset.Position(n.Pos())
				out = append(out, Found{Where: fmt.Sprintf("%s:%d", p.Filename, p.Line), Text: s})
			}
			return false
		}
		// Not evaluable: look for whole manifests only below the operands
		// that are not themselves parts of this one.
		for _, part := range e.operands(expr) {
			ast.Inspect(part, visit)
		}
		return false
	}
	for _, f := range parsed {
		ast.Inspect(f, visit)
	}
	return out, nil
}

type evaluator struct {
	env   Env
	funcs map[string]*ast.FuncDecl // the package's one-statement functions
}

// declarations records the file's functions whose body is one return of
// one value, with plain parameters.
func (e evaluator) declarations(f *ast.File) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Body == nil || len(fd.Body.List) != 1 {
			continue
		}
		ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		e.funcs[fd.Name.Name] = fd
	}
}

// constants adds the file's package-level string constants to the env.
func (e evaluator) constants(f *ast.File) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if s, ok := e.eval(vs.Values[i]); ok {
						e.env[name.Name] = s
					}
				}
			}
		}
	}
}

// stringish reports whether expr may be a string made of parts: a literal, a
// sum, or a call eval knows.
func (e evaluator) stringish(expr ast.Expr) bool {
	switch x := expr.(type) {
	case *ast.BasicLit:
		return x.Kind == token.STRING
	case *ast.BinaryExpr:
		return x.Op == token.ADD
	case *ast.CallExpr:
		return e.callee(x) != ""
	}
	return false
}

// operands are the sub-expressions of a string expression that are not its
// own parts: the operands of a sum that are neither literals nor sums, the
// arguments of a call.
func (e evaluator) operands(expr ast.Expr) []ast.Node {
	var out []ast.Node
	switch x := expr.(type) {
	case *ast.BinaryExpr:
		for _, side := range []ast.Expr{x.X, x.Y} {
			if _, sum := side.(*ast.BinaryExpr); sum {
				out = append(out, e.operands(side)...)
			} else if _, lit := side.(*ast.BasicLit); !lit {
				out = append(out, side)
			}
		}
	case *ast.CallExpr:
		for _, a := range x.Args {
			if _, lit := a.(*ast.BasicLit); !lit {
				out = append(out, a)
			}
		}
	}
	return out
}

// callee names the call if eval knows it: "fmt.Sprintf", "strings.Replace",
// "strings.ReplaceAll" or a one-statement function of the package; "" if not.
func (e evaluator) callee(call *ast.CallExpr) string {
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		pkg, ok := fn.X.(*ast.Ident)
		if !ok {
			return ""
		}
		switch name := pkg.Name + "." + fn.Sel.Name; name {
		case "fmt.Sprintf", "strings.Replace", "strings.ReplaceAll":
			return name
		}
	case *ast.Ident:
		if _, ok := e.funcs[fn.Name]; ok {
			return fn.Name
		}
	}
	return ""
}

// eval returns the value of a string expression, false when it depends on
// anything but literals, the env and calls it knows.
func (e evaluator) eval(expr ast.Expr) (string, bool) {
	v, ok := e.value(expr)
	s, isString := v.(string)
	return s, ok && isString
}

// value returns the value of a string or integer expression.
func (e evaluator) value(expr ast.Expr) (any, bool) {
	switch x := expr.(type) {
	case *ast.BasicLit:
		switch x.Kind {
		case token.STRING:
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		case token.INT:
			n, err := strconv.Atoi(x.Value)
			return n, err == nil
		}
	case *ast.ParenExpr:
		return e.value(x.X)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return nil, false
		}
		a, ok := e.eval(x.X)
		if !ok {
			return nil, false
		}
		b, ok := e.eval(x.Y)
		return a + b, ok
	case *ast.Ident:
		v, ok := e.env[x.Name]
		return v, ok
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok {
			v, ok := e.env[pkg.Name+"."+x.Sel.Name]
			return v, ok
		}
	case *ast.CallExpr:
		return e.call(x)
	}
	return nil, false
}

// call evaluates a call eval knows with arguments it can evaluate.
func (e evaluator) call(x *ast.CallExpr) (any, bool) {
	name := e.callee(x)
	if name == "" || x.Ellipsis.IsValid() {
		return nil, false
	}
	args := make([]any, len(x.Args))
	for i, a := range x.Args {
		v, ok := e.value(a)
		if !ok {
			return nil, false
		}
		args[i] = v
	}
	str := func(i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		s, ok := args[i].(string)
		return s, ok
	}
	switch name {
	case "fmt.Sprintf":
		format, ok := str(0)
		return fmt.Sprintf(format, args[1:]...), ok
	case "strings.Replace", "strings.ReplaceAll":
		s, ok1 := str(0)
		old, ok2 := str(1)
		repl, ok3 := str(2)
		n := -1
		if name == "strings.Replace" {
			var ok bool
			if n, ok = args[len(args)-1].(int); !ok || len(args) != 4 {
				return nil, false
			}
		}
		return strings.Replace(s, old, repl, n), ok1 && ok2 && ok3
	}
	return e.inline(e.funcs[name], args)
}

// inline evaluates a one-statement function's result with its parameters
// bound to args.
func (e evaluator) inline(fd *ast.FuncDecl, args []any) (any, bool) {
	inner := evaluator{env: Env{}, funcs: e.funcs}
	for k, v := range e.env {
		inner.env[k] = v
	}
	i := 0
	for _, field := range fd.Type.Params.List {
		if _, variadic := field.Type.(*ast.Ellipsis); variadic {
			return nil, false
		}
		for _, name := range field.Names {
			if i >= len(args) {
				return nil, false
			}
			inner.env[name.Name] = args[i]
			i++
		}
	}
	if i != len(args) {
		return nil, false
	}
	return inner.value(fd.Body.List[0].(*ast.ReturnStmt).Results[0])
}
