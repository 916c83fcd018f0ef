// The reference solutions, file for file with ../exercises. This go.mod only
// fences them off: nothing builds this module on its own. The workbook package
// compiles each solution in place of the stub with go test -overlay.
module github.com/saccbook/saccbook/solutions

go 1.26
