package profile_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/trace"
)

func TestFindAndParse(t *testing.T) {
	if !slices.Equal(profile.Names(), []string{"v1", "upstream-v0.1"}) {
		t.Fatalf("Names() = %v", profile.Names())
	}
	for _, name := range []string{"", "v1", "upstream-v0.1"} {
		p, err := profile.Parse(name)
		want := name
		if name == "" {
			want = "v1"
		}
		if err != nil || p.Name != want {
			t.Errorf("Parse(%q) = %q, %v; want %s", name, p.Name, err, want)
		}
	}
	for _, name := range []string{"V1", "upstream", "v0.1", " v1"} {
		if _, err := profile.Parse(name); err == nil || !strings.Contains(err.Error(), `(have: v1, upstream-v0.1)`) {
			t.Errorf("Parse(%q): %v", name, err)
		}
	}
	if !profile.V1().IsDefault() || profile.UpstreamV01().IsDefault() {
		t.Error("IsDefault does not single out v1")
	}
}

// TestV1IsTheDatasheet: the default profile is the identity of §§2–3 and speaks
// the kinds table's own names, so that every v1 trace is what it always was.
func TestV1IsTheDatasheet(t *testing.T) {
	p := profile.V1()
	if p.SubsystemVendorID != sacc.SubsystemVendorID || p.SubsystemID != sacc.SubsystemID ||
		p.LinkCapabilities != sacc.PCIeLinkCapabilities || p.LinkStatus != sacc.PCIeLinkStatus ||
		p.LinkCapabilities2 != sacc.PCIeLinkCapabilities2 || p.DevCapabilities != 0 || p.DevCapabilities2 != 0 ||
		!p.MSIX || p.Engine != profile.EngineV1 {
		t.Errorf("v1 = %+v", p)
	}
	for _, k := range trace.Kinds() {
		if p.Trace.Spells(k) {
			t.Errorf("v1 spells %s its own way", k)
		}
	}
}

// TestUpstreamSpellsItsDevicesEvents: upstream-v0.1's dialect names device events
// only, each after one of upstream's sacc_* trace points, no two alike.
func TestUpstreamSpellsItsDevicesEvents(t *testing.T) {
	d := profile.UpstreamV01().Trace
	seen := map[string]trace.Kind{}
	for _, k := range trace.Kinds() {
		if !d.Spells(k) {
			continue
		}
		name := d.KindName(k)
		if k.Info().Side != trace.SideDevice || !strings.HasPrefix(name, "sacc_") {
			t.Errorf("%s spelled %s", k, name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both %s", other, k, name)
		}
		seen[name] = k
	}
	if len(seen) != 10 {
		t.Errorf("%d trace points spelled, upstream's trace-events has 10", len(seen))
	}
	ev := trace.Event{Kind: trace.CQPostUpstream, Args: [trace.MaxArgs]uint64{5, 0x9, 1, 0, 1}}
	if got, want := string(d.AppendArgs(nil, ev)), "cq_tail=5 req_id=0x9 status 0x1 result_len 0 phase 0x1"; got != want {
		t.Errorf("sacc_cq_post prints %q, want %q", got, want)
	}
}
