// Every call in a Go package's non-test files (build constraints applied), resolved by go/types:
// one JSON line per call landing on a function or method with a body in the package.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
)

type edge struct {
	FromFile string `json:"from_file"`
	FromLine int    `json:"from_line"`
	ToFile   string `json:"to_file"`
	ToLine   int    `json:"to_line"`
}

func main() {
	out := json.NewEncoder(os.Stdout)
	fset := token.NewFileSet()
	for _, dir := range os.Args[1:] {
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, dir, err)
			continue
		}
		var files []*ast.File
		for _, name := range append(bp.GoFiles, bp.CgoFiles...) {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				continue
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
		conf.Check(bp.ImportPath, fset, files, info)
		// a function's declaration with a body, by the position of its name
		bodies := map[token.Pos]bool{}
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					bodies[fd.Name.Pos()] = true
				}
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var id *ast.Ident
				fn0 := call.Fun
				for {
					p, ok := fn0.(*ast.ParenExpr)
					if !ok {
						break
					}
					fn0 = p.X
				}
				switch fun := fn0.(type) {
				case *ast.Ident:
					id = fun
				case *ast.SelectorExpr:
					id = fun.Sel
				case *ast.IndexExpr: // a generic function instantiated: F[T](x)
					if x, ok := fun.X.(*ast.Ident); ok {
						id = x
					}
				}
				if id == nil {
					return true
				}
				fn, ok := info.Uses[id].(*types.Func)
				if ok {
					fn = fn.Origin()
				}
				if !ok || !bodies[fn.Pos()] {
					return true
				}
				from, to := fset.Position(call.Pos()), fset.Position(fn.Pos())
				out.Encode(edge{from.Filename, from.Line, to.Filename, to.Line})
				return true
			})
		}
	}
}
