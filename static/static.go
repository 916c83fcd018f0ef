// Package static holds the browser assets of saccbook serve — the widget script,
// the styles — embedded in the binary, so the book works with no network at all.
package static

import "embed"

// FS is the asset tree, served under /static/VERSION/ (package web). The
// JavaScript tests in test/ and package.json are not part of it.
//
//go:embed *.css *.js views/*.js
var FS embed.FS
