// Package chapters is the text of the book: one Markdown file per chapter,
// named NN-words.md, where NN gives the order. `saccbook serve` renders them
// (package web); the first line of each is its "# Title".
package chapters

import "embed"

// FS holds every chapter, at its top level.
//
//go:embed *.md
var FS embed.FS
