package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the command's tests if any goroutine outlives them: serve's
// HTTP server and live sessions, the qtest listener, a watcher.
func TestMain(m *testing.M) {
	// chroma's lexers (serve renders the chapters) use regexp2 with match
	// timeouts; regexp2 keeps one coarse clock goroutine, which stops by itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock"))
}
