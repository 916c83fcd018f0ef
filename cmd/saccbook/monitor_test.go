package main

import (
	"strings"
	"testing"
)

// TestMonitorSession drives `saccbook monitor` as a script on standard input: no
// prompt (stdin is not a terminal), one answer per command, stop at quit.
func TestMonitorSession(t *testing.T) {
	script := strings.Join([]string{
		"info pci",
		"xp /8xw 0xb0018000",
		"cont",
		"info rings",
		"quit",
		"info pci", // after quit: never run
	}, "\n") + "\n"
	code, out, errOut := runCLI(t, script, "monitor")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"00:03.0 Processing accelerators: Device 1b36:1092 (rev 01)\n",
		"\tSubsystem: Device 1b36:1092\n",
		"Capabilities: [80] MSI-X: Enable- Count=2 Masked-",
		// ECAM of 00:03.0 before enumeration: IDs, Cap+ in STATUS, class and revision.
		"00000000b0018000: 0x10921b36 0x00100000 0x12000001 0x00000000\n",
		"program finished after event",
		// The job's one MEMCPY, decoded from the rings in RAM.
		"     0 driver 0x0000000000200000 0x0000000000201000 0x00000052 0x0001 MEMCPY             0x0001 0x00000001 irq\n",
		"<- sq_head, sq_tail",
		"     0 device 0x00000001 0x00000052 0x0000 OK                         1     yes\n",
		"<- cq_head, cq_tail",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(saccbook)") {
		t.Errorf("a prompt was printed though stdin is not a terminal:\n%s", out)
	}
	if n := strings.Count(out, "00:03.0 Processing accelerators"); n != 1 {
		t.Errorf("info pci ran %d times; the command after quit must not run", n)
	}
}

func TestMonitorEndsAtEOFAndTakesFlags(t *testing.T) {
	code, out, errOut := runCLI(t, "step 2\nbogus\n", "monitor", "--seed", "7", "--ram", "64M", "mixed")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "stopped after event 2 at t=0 ns\n") || !strings.Contains(out, "unknown command: 'bogus'") {
		t.Errorf("output:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"monitor", "nosuch"}, `no scenario "nosuch"`},
		{[]string{"monitor", "job", "mixed"}, "one scenario at most"},
		{[]string{"monitor", "--set", "cpu"}, `option "cpu"`},
		{[]string{"monitor", "--quirks", "gremlins"}, `unknown quirk "gremlins"`},
		{[]string{"lspci", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
	code, out, _ = runCLI(t, "", "help", "monitor")
	if code != 0 || !strings.Contains(out, "info rings") || !strings.Contains(out, "xp /fmt addr") {
		t.Errorf("help monitor does not list the commands:\n%s", out)
	}
}

func TestLspci(t *testing.T) {
	code, out, errOut := runCLI(t, "", "lspci")
	if code != 0 || out != "00:03.0 Processing accelerators: Device 1b36:1092 (rev 01)\n" {
		t.Fatalf("lspci: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, out, _ = runCLI(t, "", "lspci", "-v")
	for _, want := range []string{
		"\tFlags: bus master, fast devsel, latency 0\n",
		"\tMemory at c0000000 (32-bit, non-prefetchable) [size=8K]\n",
		"\tMemory at c0002000 (32-bit, non-prefetchable) [size=4K]\n",
		"\tCapabilities: [40] Express Endpoint, MSI 00\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lspci -v lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runCLI(t, "", "lspci", "-vv")
	for _, want := range []string{
		"\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx-\n",
		"\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast",
		"\tRegion 0: Memory at c0000000 (32-bit, non-prefetchable) [size=8K]\n",
		"\tCapabilities: [40] Express (v2) Endpoint, MSI 00\n",
		"\t\tLnkSta:\tSpeed 8GT/s, Width x4\n",
		"\tCapabilities: [80] MSI-X: Enable- Count=2 Masked-\n",
		"\t\tVector table: BAR=1 offset=00000000\n",
		"\t\tPBA: BAR=1 offset=00000800\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lspci -vv lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n\n") {
		t.Errorf("lspci -vv does not end with a blank line as lspci does")
	}
}

// TestMonitorAnswersAnOverlongLineAndGoesOn: a line over the limit is refused with a
// sentence, and the commands after it still run.
func TestMonitorAnswersAnOverlongLineAndGoesOn(t *testing.T) {
	script := strings.Repeat("x", maxMonitorLine+1) + "\ninfo pci\nxp /1xw 0xb0018000\n"
	code, out, errOut := runCLI(t, script, "monitor")
	if code != 0 || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "line too long: more than 1048576 bytes, ignored\n") {
		t.Errorf("the long line was not answered:\n%.300s", out)
	}
	if !strings.Contains(out, "00:03.0 Processing accelerators") || !strings.Contains(out, "00000000b0018000: 0x10921b36") {
		t.Errorf("the commands after the long line did not run:\n%.300s", out)
	}
}
