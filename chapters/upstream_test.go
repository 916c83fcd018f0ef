package chapters

import (
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/profile"
)

// TestChapter10UpstreamWarning: the warning about upstream's device names the
// offsets and the profile the code has. (What the device does there is checked by
// sacc/conformance/upstream_test.go.)
func TestChapter10UpstreamWarning(t *testing.T) {
	checkQuotes(t, "10-kernel-bypass.md", []quote{
		q("does nothing with a store to `%#x`", sacc.RegCQHeadDB),
		q("which writes CQ_HEAD at `%#x`", sacc.RegCQHead),
		q("`saccbook qtest --profile %s`", profile.UpstreamV01Name),
	})
}
