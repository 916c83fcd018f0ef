// Package static holds the browser assets of saccbook serve — the widget script,
// the styles — embedded in the binary, so the book works with no network at all.
package static

import "embed"

// FS is the asset tree, served under /static/.
//
//go:embed *.css *.js views/*.js
var FS embed.FS
