// Package saccbook carries the source of the software the book shows at work, so
// that a browser view can put the line of driver or user code behind an event
// beside the picture.
package saccbook

import "embed"

// Source holds the Go files of the machine and the software above it, at their
// paths in the repository (sacc/driver/queue.go, …).
//
//go:embed sacc/*.go sacc/*/*.go
var Source embed.FS
