package trace_test

import (
	"testing"

	"github.com/saccbook/saccbook/sacc/trace"
)

func TestEveryKindHasAUniqueNameAndAtMostFourArgs(t *testing.T) {
	kinds := trace.Kinds()
	if len(kinds) == 0 || kinds[0] != trace.CPURead {
		t.Fatalf("Kinds() = %v: want CPURead first", kinds)
	}
	names := map[string]trace.Kind{}
	for i, k := range kinds {
		info := k.Info()
		if k == trace.KindNone {
			t.Errorf("Kinds() includes KindNone")
		}
		if i > 0 && k != kinds[i-1]+1 {
			t.Errorf("Kinds() not in declaration order at %d: %d after %d", i, k, kinds[i-1])
		}
		if info.Name == "" || info.Name == "unknown" || info.Name == "none" {
			t.Errorf("kind %d has name %q", k, info.Name)
		}
		if other, dup := names[info.Name]; dup {
			t.Errorf("kinds %d and %d share the name %q", other, k, info.Name)
		}
		names[info.Name] = k
		if k.String() != info.Name {
			t.Errorf("kind %d: String() = %q, Info().Name = %q", k, k.String(), info.Name)
		}
		if len(info.Args) > len(trace.Event{}.Args) {
			t.Errorf("%s has %d args, an event holds %d", info.Name, len(info.Args), len(trace.Event{}.Args))
		}
		if info.Doc == "" {
			t.Errorf("%s has no Doc", info.Name)
		}
		if info.Side.String() == "unknown" {
			t.Errorf("%s has side %d", info.Name, info.Side)
		}
		argNames := map[string]bool{}
		for _, a := range info.Args {
			if a.Name == "" || argNames[a.Name] {
				t.Errorf("%s: empty or repeated argument name %q", info.Name, a.Name)
			}
			argNames[a.Name] = true
		}
	}
}

func TestKindByNameRoundTrips(t *testing.T) {
	for _, k := range trace.Kinds() {
		got, ok := trace.KindByName(k.String())
		if !ok || got != k {
			t.Errorf("KindByName(%q) = %d, %v; want %d, true", k.String(), got, ok, k)
		}
	}
}

func TestKindByNameRejectsUnknownNames(t *testing.T) {
	for _, name := range []string{"", "none", "unknown", "SACC_CQ_POST", "sacc_cq_post ", "sacc"} {
		if k, ok := trace.KindByName(name); ok {
			t.Errorf("KindByName(%q) = %d, true; want false", name, k)
		}
	}
}

func TestKindOutOfRangeIsUnknown(t *testing.T) {
	all := trace.Kinds()
	for _, k := range []trace.Kind{all[len(all)-1] + 1, 999, ^trace.Kind(0)} {
		if info := k.Info(); info.Name != "unknown" || len(info.Args) != 0 {
			t.Errorf("Kind(%d).Info() = %+v, want unknown without args", k, info)
		}
	}
	if trace.KindNone.String() != "none" {
		t.Errorf("KindNone.String() = %q", trace.KindNone.String())
	}
}

func TestSideNames(t *testing.T) {
	cases := []struct {
		side trace.Side
		want string
	}{
		{trace.SideCPU, "cpu"},
		{trace.SideBus, "bus"},
		{trace.SideDevice, "device"},
		{trace.SideIOMMU, "iommu"},
		{trace.SideKernel, "kernel"},
		{trace.SideKernel + 1, "unknown"},
		{255, "unknown"},
	}
	for _, c := range cases {
		if got := c.side.String(); got != c.want {
			t.Errorf("Side(%d).String() = %q, want %q", c.side, got, c.want)
		}
	}
}

func TestKindSides(t *testing.T) {
	cases := []struct {
		kind trace.Kind
		side trace.Side
	}{
		{trace.CPURead, trace.SideCPU},
		{trace.PortOut, trace.SideCPU},
		{trace.GuestError, trace.SideBus},
		{trace.MSIDeliver, trace.SideBus},
		{trace.CQPost, trace.SideDevice},
		{trace.MSIXSuppressed, trace.SideDevice},
		{trace.IOMMUFault, trace.SideIOMMU},
		{trace.IOMMUInvalidate, trace.SideIOMMU},
	}
	for _, c := range cases {
		if got := c.kind.Info().Side; got != c.side {
			t.Errorf("%s on side %s, want %s", c.kind, got, c.side)
		}
	}
}

func TestGuestErrorNames(t *testing.T) {
	cases := []struct {
		reason uint64
		want   string
	}{
		{0, "unknown"},
		{trace.ErrUnmapped, "unmapped"},
		{trace.ErrWidth, "bad-width"},
		{trace.ErrReadOnly, "read-only"},
		{trace.ErrRingWhileOn, "ring-register-while-enabled"},
		{trace.ErrNotReady, "not-ready"},
		{trace.ErrHalted, "halted"},
		{trace.ErrIntWindowRead, "interrupt-window-read"},
		{trace.ErrConfigAbsent, "absent-function"},
		{trace.ErrConfigDisabled, "config-disabled"},
		{trace.ErrNotImplemented, "not-implemented"},
		{trace.ErrDivideByZero, "divide-by-zero"},
		{trace.ErrDivideByZero + 1, "unknown"},
		{^uint64(0), "unknown"},
	}
	for _, c := range cases {
		if got := trace.GuestErrorName(c.reason); got != c.want {
			t.Errorf("GuestErrorName(%d) = %q, want %q", c.reason, got, c.want)
		}
	}
}
