package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the command's tests if any goroutine outlives them: serve's
// HTTP server and live sessions, the qtest listener, a watcher.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
