package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 || !strings.Contains(out, "Usage: saccbook "+c.name) {
				t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	}
}

func TestTopLevelUsage(t *testing.T) {
	code, _, errOut := runCLI(t, "")
	if code != 2 || !strings.Contains(errOut, "Commands:") {
		t.Errorf("no arguments: code %d, stderr %q", code, errOut)
	}
	code, out, _ := runCLI(t, "", "help")
	if code != 0 || !strings.Contains(out, "qtest") || !strings.Contains(out, "run") {
		t.Errorf("help: code %d, stdout %q", code, out)
	}
}

func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `no command "frobnicate"`},
		{[]string{"run", "nosuch"}, `no scenario "nosuch"`},
		{[]string{"run", "--format", "xml"}, `unknown format "xml"`},
		{[]string{"run", "--ram", "12Q"}, `size "12Q"`},
		{[]string{"run", "--ram", "100"}, "multiple of 4 KiB"},
		{[]string{"run", "--ram", "0"}, "non-zero multiple of 4 KiB"},
		{[]string{"run", "driver", "--set", "bogus=1"}, `option "bogus": scenario driver takes cpu=x86|arm64`},
		{[]string{"run", "driver", "--set", "cpu=z80"}, `option cpu="z80": want x86 or arm64`},
		{[]string{"run", "job", "--set", "cpu=x86"}, `option "cpu": scenario job takes no options`},
		{[]string{"monitor", "driver", "--set", "irq=maybe"}, `option irq="maybe": want on or off`},
		{[]string{"dmesg", "--set", "bogus=1"}, `option "bogus"`},
		{[]string{"run", "--cost", "warp=1"}, `unknown cost parameter "warp"`},
		{[]string{"run", "--cost", "link_bytes_per_us=0"}, "must be positive"},
		{[]string{"run", "--quirks", "gremlins"}, `unknown quirk "gremlins"`},
		{[]string{"qtest", "extra"}, `unexpected argument "extra"`},
		{[]string{"qtest", "--listen", "carrier-pigeon:x"}, "listen"},
		{[]string{"qtest", "--listen", "tcp:127.0.0.1:0", "--max-conns", "0"}, "--max-conns 0: want at least 1"},
		{[]string{"run", "job", "mixed"}, "one scenario at most"},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: code %d, stderr %q; want non-zero and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestRunPrintsTheJobsPath(t *testing.T) {
	code, out, errOut := runCLI(t, "", "run")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{"sacc_doorbell", "sacc_fetch", "sacc_dma_read", "sacc_dma_write",
		"sacc_cq_post cq_tail=0 req_id=0x1 status=0x0 phase=1", "msi_deliver", "# job 1 completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q", want)
		}
	}
}

func TestRunFormats(t *testing.T) {
	code, out, errOut := runCLI(t, "", "run", "--format", "json")
	if code != 0 {
		t.Fatalf("json: %s", errOut)
	}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("json line %d is not JSON: %s", i+1, line)
		}
	}
	if !strings.Contains(errOut, "# job 1 completed") {
		t.Errorf("json: the narrative belongs on stderr, got %q", errOut)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if code, _, errOut := runCLI(t, "", "run", "--format", "perfetto", "-o", path, "mixed"); code != 0 {
		t.Fatalf("perfetto: %s", errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) < 100 {
		t.Fatalf("perfetto file: %v, %d events", err, len(doc.TraceEvents))
	}
	// A run that a bug breaks fails, and its trace is still written, as far
	// as it went: that is the run worth opening.
	code, _, errOut = runCLI(t, "", "run", "dma", "--quirks", "skip-bus-master", "--format", "perfetto", "-o", path)
	if code != 1 || !strings.Contains(errOut, "device error") {
		t.Fatalf("perfetto of a broken run: %d %s", code, errOut)
	}
	b, _ = os.ReadFile(path)
	doc.TraceEvents = nil
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) < 10 {
		t.Fatalf("perfetto file of a broken run: %v, %d events", err, len(doc.TraceEvents))
	}
}

func TestQtestOnStdio(t *testing.T) {
	code, out, errOut := runCLI(t, "readl 0xb0018000\nbogus\nreadl 0xb0018010\n", "qtest")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	want := "OK 0x0000000010921b36\nFAIL unknown command \"bogus\"\nOK 0x0000000000000000\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestCostsAndQuirksList(t *testing.T) {
	_, out, _ := runCLI(t, "", "costs", "-v")
	for _, want := range []string{"mmio_read", "1000 ns", "source:", "enable_latency"} {
		if !strings.Contains(out, want) {
			t.Errorf("costs lacks %q", want)
		}
	}
	_, out, _ = runCLI(t, "", "quirks")
	for _, want := range []string{"phase-first", "msi-before-completion", "iotlb-ignores-invalidate"} {
		if !strings.Contains(out, want) {
			t.Errorf("quirks lacks %q", want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"4096": 4096, "64K": 64 << 10, "128M": 128 << 20, "1G": 1 << 30, "2MiB": 2 << 20, "0x1000": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1", "1T", "99999999999999999999G"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
