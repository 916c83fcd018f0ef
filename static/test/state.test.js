import test from "node:test";
import assert from "node:assert/strict";
import { ds, first, job, phases } from "./fixtures.js";
import { fold, initialState, sqOwner, stateAt, Timeline } from "../state.js";

test("one job: the rings, the descriptor and the completion as the log tells them", () => {
  const enable = first(job, "sacc_enable");
  let st = stateAt(job, enable.seq, ds);
  assert.equal(st.sqSize, enable.args.sq_size);
  assert.equal(st.cqSize, enable.args.cq_size);
  assert.equal(st.sq.length, st.sqSize);
  assert.ok(st.enabled && !st.ready);
  assert.equal(st.sqPhys, st.sqBase, "no IOMMU: DMA addresses are physical");

  // Bare metal writes the descriptor in one 32-byte store: the slot is written,
  // its contents known by their first 8 bytes until the device reads them.
  const bell = first(job, "sacc_doorbell");
  st = stateAt(job, bell.seq, ds);
  assert.equal(st.sq[0].unknown, true);
  assert.equal(sqOwner(st, 0), "device", "published by the doorbell");
  assert.equal(sqOwner(stateAt(job, bell.seq - 1, ds), 0), "written", "stored, not yet published");
  assert.equal(st.sq[0].src, "0x200000");
  assert.equal(st.sq[0].req_id, null);
  assert.equal(st.sqTail, bell.args.sq_tail);
  assert.deepEqual(st.changed, { ring: "sq", slot: 0, by: "doorbell" });

  const fetch = first(job, "sacc_fetch");
  st = stateAt(job, fetch.seq, ds);
  assert.deepEqual(st.busy, { slot: 0, req_id: null, opcode: null });
  assert.equal(st.sqHead, 0, "§7.1: fetched, the slot is still the device's until its completion");
  st = stateAt(job, first(job, "sacc_desc").seq, ds);
  const d = st.sq[0];
  assert.deepEqual([d.req_id, d.opcode, d.opName, d.len, d.flags, d.fetched], [1, 1, "MEMCPY", 82, 1, true]);
  assert.equal(st.busy.opcode, "MEMCPY");

  const post = first(job, "sacc_cq_post");
  st = stateAt(job, post.seq, ds);
  assert.deepEqual(st.cq[0], { req_id: 1, status: 0, phase: 1, posted: true, seq: post.seq });
  assert.equal(st.cqTail, 1);
  assert.equal(st.sqHead, 1, "the completion is posted: slot 0 is the driver's again");
  assert.equal(st.busy, null);
  assert.equal(st.completions, 1);

  st = stateAt(job, job.length, ds);
  assert.equal(st.msis, 1);
  assert.equal(st.irqs, 1);
});

test("phase bits: every posted entry has the phase the device wrote, the device's phase flips on every wrap", () => {
  const st = initialState();
  let phase = 1, flips = 0;
  for (const ev of phases) {
    fold(st, ev, ds);
    if (ev.kind === "sacc_phase_flip") { phase = ev.args.phase; flips++; }
    if (ev.kind === "sacc_cq_post") {
      const e = st.cq[ev.args.cq_tail % st.cqSize];
      assert.equal(e.phase, ev.args.phase, "#" + ev.seq);
      assert.equal(e.posted, true);
      assert.equal(st.cqTail, (ev.args.cq_tail + 1) % st.cqSize);
    }
    assert.equal(st.phase, phase, "#" + ev.seq);
  }
  assert.equal(flips, 3, "three laps");
  // After the third wrap the device writes phase 0 again: lap 3 is phase 1's.
  assert.equal(st.phase, 0);
});

test("a driver clearing a CQ entry takes its phase away", () => {
  const st = stateAt(job, first(job, "sacc_cq_post").seq, ds);
  const ev = { seq: 999, t: 0, kind: "cpu_write", side: "cpu", args: { addr: st.cqPhys + 14, size: 2, val: 0 }, text: "" };
  fold(st, ev, ds);
  assert.equal(st.cq[0].phase, 0);
  assert.equal(st.cq[0].posted, false);
  assert.deepEqual(st.changed, { ring: "cq", slot: 0, by: "cpu" });
});

test("stores into the SQ: one field, several fields at once, and a bulk write", () => {
  const st = stateAt(job, first(job, "sacc_enable").seq, ds);
  const store = (off, size, val) => fold(st, { seq: 1, t: 0, kind: "cpu_write", side: "cpu",
    args: { addr: st.sqPhys + 32 + off, size, val: Number(val) }, text: "addr=0x0 size=" + size + " val=0x" + val.toString(16) }, ds);
  store(16, 8, 0x0002000100000010n); // length 16, opcode XFORM, flags 2
  assert.deepEqual([st.sq[1].len, st.sq[1].opcode, st.sq[1].flags], [16, 1, 2]);
  store(8, 8, 0xfeedf00dcafe0000n); // beyond 2^53: exact from the text
  assert.equal(st.sq[1].dst, "0xfeedf00dcafe0000");
  store(0, 64, 0x1234n); // slots 1 and 2 at once
  assert.equal(st.sq[1].written, true);
  assert.equal(st.sq[1].src, "0x1234");
  assert.equal(st.sq[2].written, true);
  assert.equal(st.sq[2].len, null);
});

test("a Timeline agrees with folding from the start, at any position in any order", () => {
  const tl = new Timeline(ds);
  assert.ok(tl.append(phases.slice(0, 100), 1));
  assert.ok(tl.append(phases.slice(90), 91), "an overlap is skipped");
  assert.equal(tl.length, phases.length);
  assert.equal(tl.append(phases.slice(0, 1), phases.length + 5), false, "a gap is refused");
  // Forward, back across checkpoints, to the ends, and repeated.
  const order = [0, 1, 2, 300, 299, 256, 255, 257, 478, 10, 478, 477, 130, 130, 0];
  for (const pos of order) {
    const want = stateAt(phases, pos, ds);
    assert.deepEqual(tl.stateAt(pos), want, "position " + pos);
  }
  assert.equal(tl.event(0), null);
  assert.equal(tl.event(5).seq, 5);
  const bells = phases.filter((e) => e.kind === "sacc_doorbell" && e.seq <= 200);
  assert.equal(tl.lastWith(200, (e) => e.kind === "sacc_doorbell"), bells[bells.length - 1]);
  assert.equal(tl.lastWith(100, (e) => e.kind === "sacc_doorbell"), null);
});

test("the IOMMU switched on: rings are where the translations say", () => {
  const st = initialState();
  const ev = (kind, args, text = "") => fold(st, { seq: 1, t: 0, kind, side: "device", args, text }, ds);
  ev("sacc_reg_write", { reg: 0x10, size: 4, val: 0x80000000 }, "reg=SQ_BASE size=4 val=0x80000000");
  ev("sacc_reg_write", { reg: 0x18, size: 4, val: 8 });
  assert.equal(st.sqBase, 0x80000000);
  assert.equal(st.sqSize, 8);
  ev("iommu_reg_write", { reg: 0x08, size: 4, val: 1 });
  assert.equal(st.iommu.on, true);
  assert.equal(st.sqPhys, null, "not translated yet");
  ev("iommu_translate", { iova: 0x80000000, phys: 0x107000, perm: 3 });
  assert.equal(st.sqPhys, 0x107000);
});
