package main

import (
	"strings"
	"testing"
)

// TestEveryMachineCommandTakesTheProfile: run, monitor, dmesg, qtest and lspci
// build their machine to --profile; an unknown name is refused with the list of
// the known ones, before anything runs.
func TestEveryMachineCommandTakesTheProfile(t *testing.T) {
	const up = "upstream-v0.1"
	cases := []struct {
		args  []string
		stdin string
		want  string // in stdout with --profile upstream-v0.1
		v1    string // in stdout without it
	}{
		{[]string{"run", "upstream-bringup"}, "",
			"sacc_cq_post cq_tail=0 req_id=0x1 status 0x0 result_len 0 phase 0x1",
			"sacc_device_error code=0x4"},
		{[]string{"monitor", "upstream-bringup"}, "cont\ninfo registers\n",
			"CQ_HEAD_DB +0x1004 WO 0x00000000         ignored by upstream v0.1's device",
			"STATUS     +0x000c RO 0x00000002         READY- ERROR+"},
		{[]string{"dmesg", "upstream-bringup"}, "",
			"NOP complete: req_id 1, status 0", "timeout waiting for NOP completion"},
		{[]string{"qtest"}, "readl 0xb001802c\n",
			"OK 0x000000001100" + "1af4", "OK 0x000000001092" + "1b36"},
		{[]string{"lspci", "-vv"}, "",
			"LnkCap:\tPort #0, Speed 2.5GT/s, Width x1, ASPM L0s", "LnkCap:\tPort #0, Speed 8GT/s, Width x4"},
	}
	for _, c := range cases {
		name := strings.Join(c.args, " ")
		code, out, errOut := runCLI(t, c.stdin, append(c.args, "--profile", up)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s --profile %s: code %d, stdout lacks %q:\n%.2000s\nstderr: %s", name, up, code, c.want, out, errOut)
		}
		code, out, errOut = runCLI(t, c.stdin, c.args...)
		if code != 0 || !strings.Contains(out, c.v1) || strings.Contains(out, c.want) {
			t.Errorf("%s (v1): code %d, stdout lacks %q or has %q:\n%.2000s\nstderr: %s", name, code, c.v1, c.want, out, errOut)
		}
		code, out, errOut = runCLI(t, c.stdin, append(c.args, "--profile", "upstream")...)
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown profile "upstream" (have: v1, upstream-v0.1)`) {
			t.Errorf("%s --profile upstream: code %d, stdout %.200q, stderr %.300q", name, code, out, errOut)
		}
	}
}

// TestQtestTraceSpeaksTheProfile: qtest --trace echoes events in the profile's
// names on standard error.
func TestQtestTraceSpeaksTheProfile(t *testing.T) {
	in := "writel 0xb0018010 0xc0000000\nwritew 0xb0018004 0x6\nreadl 0xc0000000\n"
	_, _, errOut := runCLI(t, in, "qtest", "--trace", "--profile", "upstream-v0.1")
	if !strings.Contains(errOut, "sacc_mmio_reg_read addr=0x0 val=0x4a4e524f size=4") {
		t.Errorf("qtest --trace --profile upstream-v0.1: stderr %s", errOut)
	}
	_, _, errOut = runCLI(t, in, "qtest", "--trace")
	if !strings.Contains(errOut, "sacc_reg_read reg=MAGIC size=4 val=0x4a4e524f") {
		t.Errorf("qtest --trace: stderr %s", errOut)
	}
}
