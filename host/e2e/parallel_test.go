package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEveryTestParallel: every test of the package runs in parallel with
// the others (one of its own statements is t.Parallel()): one at a time, the tests
// that wait on processes, clients and deadlines made this package the
// longest part of CI. TestConformance is the exception: `make
// conformance` runs it alone.
func TestEveryTestParallel(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || len(fn.Name.Name) < 5 || fn.Name.Name[:4] != "Test" || fn.Name.Name == "TestConformance" || fn.Name.Name == "TestMain" {
				continue
			}
			seen++
			if !callsParallel(fn.Body) {
				t.Errorf("%s (%s): it does not call t.Parallel()", fn.Name.Name, fset.Position(fn.Pos()))
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found %d tests: the scan is broken", seen)
	}
}

// callsParallel reports whether one of body's own statements (not one in
// a closure or a branch) is t.Parallel().
func callsParallel(body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	for _, st := range body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" && len(call.Args) == 0 {
			return true
		}
	}
	return false
}
