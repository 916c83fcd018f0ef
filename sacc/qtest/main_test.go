package qtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a listener's
// connection, a refusal still lingering, or a context callback left armed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
