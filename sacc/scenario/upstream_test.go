package scenario

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
)

// TestUpstreamBringUpHaltsV1AndCompletesUpstream: the same driver, the two
// profiles: v1 halts with device error 4 and the probe times out; upstream's
// device completes the NOP inside the doorbell write. Each run also tells what
// the other profile made of it.
func TestUpstreamBringUpHaltsV1AndCompletesUpstream(t *testing.T) {
	s, ok := Find("upstream-bringup")
	if !ok {
		t.Fatal("no scenario upstream-bringup")
	}
	for _, c := range []struct {
		p            profile.Profile
		status, code uint32
		own, other   string
	}{
		{profile.V1(), sacc.StatusError, uint32(sacc.StatusNotEnabled),
			"v1: the doorbell came while STATUS.READY was 0: device error 4",
			"  upstream-v0.1: the completion (req_id 0x1, status 0, phase 1) was there at poll "},
		{profile.UpstreamV01(), 0, 0,
			"upstream-v0.1: the completion (req_id 0x1, status 0, phase 1) was there at poll ",
			"  v1: the doorbell came while STATUS.READY was 0: device error 4"},
	} {
		m, err := machine.New(machine.Config{Seed: 1, Profile: c.p})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := s.Run(m, &Env{Log: &log}); err != nil {
			t.Fatalf("%s: %v", c.p.Name, err)
		}
		st := m.Device().State()
		if st.Status != c.status || st.ErrCode != c.code || st.Ctrl != 0 {
			t.Errorf("%s: STATUS %#x, ERR_CODE %d, CTRL %#x; want %#x, %d, 0", c.p.Name, st.Status, st.ErrCode, st.Ctrl, c.status, c.code)
		}
		for _, want := range []string{c.own, c.other} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("%s: the story lacks %q:\n%s", c.p.Name, want, log.String())
			}
		}
	}
}
