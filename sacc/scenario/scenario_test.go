package scenario

import (
	"bytes"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

func run(t *testing.T, name string, opts map[string]string) (string, *Env, int) {
	t.Helper()
	s, ok := Find(name)
	if !ok {
		t.Fatalf("no scenario %q", name)
	}
	m, err := machine.New(machine.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf trace.Buffer
	m.Tracer().Attach(&buf)
	var log bytes.Buffer
	env := &Env{Log: &log, Options: opts}
	if err := s.Run(m, env); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, opts, err, log.String())
	}
	return log.String(), env, len(buf.Events)
}

func TestEveryScenarioRuns(t *testing.T) {
	for _, s := range All() {
		t.Run(s.Name, func(t *testing.T) {
			log, _, events := run(t, s.Name, nil)
			if log == "" || events < 20 {
				t.Fatalf("scenario said %q with %d events", log, events)
			}
		})
	}
}

func TestDriverScenarioOptions(t *testing.T) {
	for _, opts := range []map[string]string{
		{"cpu": "arm64"}, {"irq": "on"}, {"iommu": "on"}, {"cpu": "arm64", "irq": "on", "iommu": "on"},
	} {
		log, env, _ := run(t, "driver", opts)
		if env.Host == nil || !strings.Contains(log, "20 NOPs") {
			t.Fatalf("%v: %s", opts, log)
		}
	}
	s, _ := Find("driver")
	m, _ := machine.New(machine.Config{})
	if err := s.Run(m, &Env{Log: &bytes.Buffer{}, Options: map[string]string{"cpu": "sparc"}}); err == nil {
		t.Fatal("cpu=sparc accepted")
	}
}

func TestStoriesTellTheirPoint(t *testing.T) {
	log, _, _ := run(t, "bypass", nil)
	if !strings.Contains(log, "bypass:") || !strings.Contains(log, "0 system calls for 8 jobs") || !strings.Contains(log, "8 system calls for 8 jobs") {
		t.Errorf("bypass: %s", log)
	}
	log, _, _ = run(t, "irq-race", nil)
	if !strings.Contains(log, "ack, read back, drain: job B completed") || !strings.Contains(log, "drain, then ack: job B lost its interrupt") ||
		!strings.Contains(log, "ack, then drain (no read-back): job B lost its interrupt") {
		t.Errorf("irq-race: %s", log)
	}
	log, _, _ = run(t, "ordering", nil)
	if !strings.Contains(log, "x86 without wmb: 8 of 8") || strings.Contains(log, "arm64 without wmb: 8 of 8") {
		t.Errorf("ordering: %s", log)
	}
}

func TestParseOptions(t *testing.T) {
	got, err := ParseOptions(" cpu=arm64, irq=on ,")
	if err != nil || got["cpu"] != "arm64" || got["irq"] != "on" || len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseOptions("cpu"); err == nil {
		t.Fatal("option without value accepted")
	}
}

func TestCheckOptions(t *testing.T) {
	drv, _ := Find("driver")
	job, _ := Find("job")
	for _, tc := range []struct {
		s    Scenario
		opts map[string]string
		want string // "" for accepted
	}{
		{drv, nil, ""},
		{drv, map[string]string{"cpu": "arm64", "irq": "on"}, ""},
		{drv, map[string]string{"cpu": "z80"}, `option cpu="z80": want x86 or arm64`},
		{drv, map[string]string{"turbo": "on"}, `option "turbo": scenario driver takes cpu=x86|arm64`},
		{job, map[string]string{"cpu": "x86"}, `option "cpu": scenario job takes no options`},
	} {
		err := tc.s.CheckOptions(tc.opts)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.s.Name, tc.opts, err, tc.want)
		}
	}
}
