package baremetal

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/trace"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/")

// runTraced runs a workload on a fresh machine and returns its text trace and
// narrative together.
func runTraced(t *testing.T, w Workload, cfg machine.Config) []byte {
	t.Helper()
	m, err := machine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.Tracer().Attach(trace.NewTextWriter(&out))
	if err := w.Run(m, &out); err != nil {
		t.Fatalf("workload %s: %v\ntrace:\n%s", w.Name, err, tail(out.Bytes(), 40))
	}
	return out.Bytes()
}

func tail(b []byte, lines int) []byte {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if lines--; lines == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

// TestGoldenTraces pins every workload's trace: any change to what the machine does,
// or when, shows up as a diff. Run with -update after an intended change.
func TestGoldenTraces(t *testing.T) {
	for _, w := range Workloads {
		t.Run(w.Name, func(t *testing.T) {
			got := runTraced(t, w, machine.Config{Seed: 1})
			path := filepath.Join("testdata", w.Name+".trace")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
				for i := 0; i < len(gl) && i < len(wl); i++ {
					if !bytes.Equal(gl[i], wl[i]) {
						t.Fatalf("trace differs from %s at line %d:\n got: %s\nwant: %s", path, i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("trace differs from %s in length: got %d lines, want %d", path, len(gl), len(wl))
			}
		})
	}
}

// TestRunsAreByteIdentical runs the mixed workload twice in one process: same
// configuration and seed, same trace, byte for byte (§11).
func TestRunsAreByteIdentical(t *testing.T) {
	w, _ := FindWorkload("mixed")
	a := runTraced(t, w, machine.Config{Seed: 7})
	b := runTraced(t, w, machine.Config{Seed: 7})
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed produced different traces")
	}
	if len(a) < 1000 {
		t.Fatalf("trace suspiciously short: %d bytes", len(a))
	}
}

// TestMixedShowsTheRulesAtWork checks the golden run really exercised what it
// claims: phase flips, a CQ-full stall and its resume, IOMMU faults, a stale
// IOTLB translation, a pending vector, a device error and a reset.
func TestMixedShowsTheRulesAtWork(t *testing.T) {
	m, err := machine.New(machine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var buf trace.Buffer
	m.Tracer().Attach(&buf)
	var log bytes.Buffer
	if err := Mixed(m, &log); err != nil {
		t.Fatal(err)
	}
	count := map[trace.Kind]int{}
	for _, ev := range buf.Events {
		count[ev.Kind]++
	}
	for _, k := range []trace.Kind{trace.PhaseFlip, trace.CQFull, trace.CQResume, trace.IOMMUFault,
		trace.IOTLBHit, trace.IOMMUInvalidate, trace.MSIXPending, trace.MSIXSend, trace.MSIDeliver,
		trace.DeviceError, trace.Reset, trace.CommandError} {
		if count[k] == 0 {
			t.Errorf("no %s event in the mixed run", k)
		}
	}
	if !bytes.Contains(log.Bytes(), []byte("old page holds 0x5a5a5a5a5a5a5a5a, new page holds 0xc3c3c3c3c3c3c3c3")) {
		t.Errorf("stale IOTLB step did not show old and new pages:\n%s", log.Bytes())
	}
}
