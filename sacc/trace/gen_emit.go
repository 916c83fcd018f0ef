//go:build ignore

// gen_emit writes emit_gen.go, the typed emitters, from the kinds table in kind.go.
// Run it with go generate ./sacc/trace after changing the table.
package main

import (
	"log"
	"os"

	"github.com/saccbook/saccbook/sacc/trace/internal/emitgen"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen_emit: ")
	src, err := os.ReadFile("kind.go")
	if err != nil {
		log.Fatal(err)
	}
	out, err := emitgen.Generate(src)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("emit_gen.go", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
