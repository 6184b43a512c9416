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
	type pkg struct {
		path  string
		files []*ast.File
	}
	var pkgs []pkg
	// a function's declaration with a body, by where its name is (packages imported from source are
	// parsed again by the importer: positions by file and offset match across both)
	bodies := map[string]bool{}
	where := func(p token.Pos) string {
		at := fset.Position(p)
		return fmt.Sprintf("%s:%d", at.Filename, at.Offset)
	}
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
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					bodies[where(fd.Name.Pos())] = true
				}
			}
		}
		pkgs = append(pkgs, pkg{bp.ImportPath, files})
	}
	imp := &lenient{fset: fset, std: importer.ForCompiler(fset, "source", nil), done: map[string]*types.Package{}}
	for _, p := range pkgs {
		files := p.files
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		conf.Check(p.path, fset, files, info)
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
				if !ok || !bodies[where(fn.Pos())] {
					return true
				}
				from, to := fset.Position(call.Pos()), fset.Position(fn.Pos())
				out.Encode(edge{from.Filename, from.Line, to.Filename, to.Line})
				return true
			})
		}
	}
}

// lenient imports the standard library from source and every other package by type-checking its files
// with errors ignored, so a dependency the machine lacks costs only the calls into it.
type lenient struct {
	fset *token.FileSet
	std  types.Importer
	done map[string]*types.Package
}

func (l *lenient) Import(path string) (*types.Package, error) {
	if p, ok := l.done[path]; ok {
		return p, nil
	}
	bp, err := build.Import(path, "", 0)
	if err != nil {
		return nil, err
	}
	if bp.Goroot {
		return l.std.Import(path)
	}
	var files []*ast.File
	for _, name := range append(bp.GoFiles, bp.CgoFiles...) {
		if f, err := parser.ParseFile(l.fset, filepath.Join(bp.Dir, name), nil, 0); err == nil {
			files = append(files, f)
		}
	}
	conf := types.Config{Importer: l, Error: func(error) {}}
	pkg, _ := conf.Check(path, l.fset, files, nil)
	l.done[path] = pkg
	return pkg, nil
}
