package errorkind

import (
	"fmt"
	"testing"

	"github.com/saccbook/saccbook/exercises/internal/check"
	"github.com/saccbook/saccbook/exercises/internal/ringrig"
	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
	"github.com/saccbook/saccbook/sacc/sim"
	"github.com/saccbook/saccbook/sacc/trace"
)

const budget sim.Time = 100_000 // 100 µs: a diagnosis is a couple of register reads at most

var kindNames = map[Kind]string{Succeeded: "Succeeded", CommandFailed: "CommandFailed", DeviceHalted: "DeviceHalted", Late: "Late"}

func name(k Kind) string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// diagnose runs the learner's Diagnose and returns its answer and the register
// accesses it made.
func diagnose(r *ringrig.Rig, cpl sacc.Completion, done bool) (Kind, sacc.Status, []trace.Event) {
	var k Kind
	var s sacc.Status
	mark := r.Mark()
	r.Do("Diagnose", budget, func() { k, s = Diagnose(r.Regs, cpl, done) })
	return k, s, check.Find(r.Since(mark), trace.RegRead, trace.RegWrite)
}

// complete submits d and waits for its completion, read from RAM; the slot is
// handed back with CQ_HEAD.
func complete(t *testing.T, r *ringrig.Rig, rd *ringrig.Reader, d sacc.Descriptor) sacc.Completion {
	id := r.Submit(d)
	var c sacc.Completion
	if !r.Until(100_000, 200, func() (ok bool) { c, ok = rd.Next(r); return ok }) || c.ReqID != id {
		t.Fatalf("check: no completion for req_id %d", id)
	}
	r.Regs.Writel(sacc.RegCQHead, rd.Head)
	r.Regs.Readl(sacc.RegSTATUS) // a read-back: the posted CQ_HEAD has landed before Diagnose runs
	return c
}

// TestCompletedCommands: the completion decides, and no register is read.
func TestCompletedCommands(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	rd := ringrig.NewReader()
	ok := complete(t, r, rd, sacc.Descriptor{Opcode: sacc.OpNOP})
	badOp := complete(t, r, rd, sacc.Descriptor{Opcode: 0x0105})
	badLen := complete(t, r, rd, sacc.Descriptor{Opcode: sacc.OpMEMCPY, Length: 0})
	if code := r.State().ErrCode; code != uint32(sacc.StatusBadLength) {
		t.Fatalf("check: ERR_CODE is %d", code)
	}
	for _, tc := range []struct {
		what string
		cpl  sacc.Completion
		kind Kind
		code sacc.Status
	}{
		{"a NOP that completed with status 0", ok, Succeeded, sacc.StatusOK},
		{"a command with opcode 0x0105 that completed with status 1 (ERR_CODE reads 3 now: a later command failed too)", badOp, CommandFailed, sacc.StatusBadOpcode},
		{"a MEMCPY of 0 bytes that completed with status 3", badLen, CommandFailed, sacc.StatusBadLength},
	} {
		k, code, regs := diagnose(r, tc.cpl, true)
		if k != tc.kind || code != tc.code {
			hint := ""
			if code == sacc.StatusBadLength && tc.code == sacc.StatusBadOpcode {
				hint = "\nThat is ERR_CODE, which holds only the most recent failure: the completion's own status is the answer for this command."
			}
			r.Fatalf("Diagnose(%+v, done=true), for %s, returned %s and %d; want %s and %d.%s",
				tc.cpl, tc.what, name(k), code, name(tc.kind), tc.code, hint)
		}
		if len(regs) > 0 {
			r.Fatalf("Diagnose had the completion in hand (%s) and still touched the device:\n%s"+
				"A completed command needs no register: its status says everything, and each MMIO read costs a 1 µs round trip.",
				tc.what, check.Lines(regs))
		}
	}
}

// TestHaltedDevice: no completion, STATUS.ERROR set: ERR_CODE says why.
func TestHaltedDevice(t *testing.T) {
	for _, tc := range []struct {
		what string
		halt func(r *ringrig.Rig)
		code sacc.Status
	}{
		{"SQ_TAIL = 200 on an 8-entry ring", func(r *ringrig.Rig) { r.Regs.Writel(sacc.RegSQTail, 200) }, sacc.StatusDoorbell},
		{"a NOP submitted with bus mastering off", func(r *ringrig.Rig) {
			r.PDev.ClearMaster()
			r.Submit(sacc.Descriptor{Opcode: sacc.OpNOP})
		}, sacc.StatusBadAddress},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := ringrig.Up(t, host.Config{}, 8)
			tc.halt(r)
			r.CPU.Delay(5_000)
			if st := r.State(); st.Status&sacc.StatusError == 0 {
				t.Fatalf("check: the device did not halt (STATUS %#x)", st.Status)
			}
			k, code, regs := diagnose(r, sacc.Completion{}, false)
			if k != DeviceHalted || code != tc.code {
				r.Fatalf("After %s the device has halted: STATUS reads %#x (ERROR set), ERR_CODE %d. No completion came, and "+
					"Diagnose(done=false) returned %s and %d; want DeviceHalted and %d.",
					tc.what, r.State().Status, r.State().ErrCode, name(k), code, tc.code)
			}
			for _, ev := range regs {
				if ev.Kind == trace.RegWrite {
					r.Fatalf("Diagnose wrote a register:\n%s\nIt only looks: deciding what to do (a reset) is the caller's job.", check.Lines(regs))
				}
			}
		})
	}
}

// TestLateCommand: no completion yet, the device busy with a 1 MiB copy.
func TestLateCommand(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	big, err := r.K.AllocPages(sacc.MaxLength)
	if err != nil {
		t.Fatal(err)
	}
	r.Submit(sacc.Descriptor{Opcode: sacc.OpMEMCPY, Src: big, Dst: big, Length: sacc.MaxLength})
	r.CPU.Delay(5_000)
	k, code, regs := diagnose(r, sacc.Completion{}, false)
	if k != Late || code != sacc.StatusOK {
		r.Fatalf("The device is busy with a 1 MiB copy (STATUS reads %#x: READY, no ERROR). No completion yet, and "+
			"Diagnose(done=false) returned %s and %d; want Late and 0: nothing is wrong, the caller should wait longer.",
			r.State().Status, name(k), code)
	}
	reads := 0
	for _, ev := range regs {
		if ev.Kind == trace.RegWrite {
			r.Fatalf("Diagnose wrote a register:\n%s", check.Lines(regs))
		}
		if ev.Args[0] == sacc.RegErrCode {
			reads++
		}
	}
	if reads > 0 {
		r.Errorf("The device is running, yet Diagnose read ERR_CODE:\n%sERR_CODE means nothing while STATUS.ERROR is 0 "+
			"(it may hold an old per-command failure); each read is a 1 µs round trip.", check.Lines(regs))
	}
}

// TestNotReadyIsNotHalted: a device coming up again after ENABLE (READY not
// yet set) has not halted: only STATUS.ERROR says that.
func TestNotReadyIsNotHalted(t *testing.T) {
	r := ringrig.Up(t, host.Config{}, 8)
	r.Regs.Writel(sacc.RegCTRL, 0)
	r.Regs.Writel(sacc.RegCTRL, sacc.CtrlEnable) // READY comes 2 µs later
	k, code, _ := diagnose(r, sacc.Completion{}, false)
	if k != Late || code != sacc.StatusOK {
		r.Fatalf("The device was switched off and on again and is coming up: STATUS reads %#x when Diagnose starts (neither "+
			"READY nor ERROR). No completion, and Diagnose(done=false) returned %s and %d; want Late and 0: only STATUS.ERROR "+
			"says the device has halted (§7.6), and READY clear is not that.", uint32(0), name(k), code)
	}
}
