import test from "node:test";
import assert from "node:assert/strict";
import { ds, first, job, phases } from "./fixtures.js";
import { stateAt } from "../state.js";
import { byClass, classList, findAll, hasClass, textOf } from "../vnode.js";
import * as ring from "../views/ring.js";
import * as garage from "../views/garage.js";
import { FilterIndex, matches, traceAt } from "../views/trace.js";
import { decodeAt, defaultAddress, dumpRequest, ringTarget, WORDS as MEMORY_WORDS } from "../views/memory.js";
import { initialState } from "../state.js";
import { markChanges } from "../views/registers.js";
import { linesAround, sourceAt } from "../views/source.js";
import { History, refused } from "../views/monitor.js";
import { parseDump } from "../format.js";

const at = (log, pos) => ({ st: stateAt(log, pos, ds), ev: pos > 0 ? log[pos - 1] : null });
const ringAt = (log, pos, wide = true) => {
  const { st, ev } = at(log, pos);
  return ring.picture(st, ev, pos, ds, { id: "t-", wide, anim: false });
};
// slotsOf lists the drawn slots of one ring: the groups whose title names it.
const slotsOf = (pic, which) => byClass(pic, "sw-slot").filter((g) => textOf(g.kids[0]).startsWith(which + " slot "));

test("ring view: one slot per ring entry, the CQ's phases as the log posted them", () => {
  for (const ev of phases.filter((e) => e.kind === "sacc_cq_post")) {
    const pic = ringAt(phases, ev.seq);
    const cq = slotsOf(pic, "CQ");
    assert.equal(cq.length, 4);
    assert.equal(slotsOf(pic, "SQ").length, 4);
    const slot = cq[ev.args.cq_tail % 4];
    assert.equal(hasClass(slot, ev.args.phase ? "is-p1" : "is-p0"), true, "#" + ev.seq);
    assert.equal(hasClass(slot, "is-changed"), true);
    assert.match(textOf(slot), ev.args.phase ? /●/ : /○/);
    // Every posted entry shows the phase it was posted with.
    const st = stateAt(phases, ev.seq, ds);
    cq.forEach((g, i) => {
      if (st.cq[i].posted) assert.equal(hasClass(g, st.cq[i].phase ? "is-p1" : "is-p0"), true, "#" + ev.seq + " slot " + i);
    });
  }
});

test("ring view: the event crosses the link as an arrow of its kind", () => {
  const arrows = (pos) => byClass(ringAt(job, pos), "sw-arrow").flatMap((a) => classList(a).filter((c) => c.startsWith("sw-arrow-")));
  assert.deepEqual(arrows(first(job, "sacc_doorbell").seq), ["sw-arrow-mmio"]);
  assert.deepEqual(arrows(first(job, "sacc_fetch").seq), ["sw-arrow-dma"]);
  assert.deepEqual(arrows(first(job, "sacc_msix_send").seq), ["sw-arrow-msi"]);
  assert.deepEqual(arrows(0), []);
  const label = textOf(byClass(ringAt(job, first(job, "sacc_doorbell").seq), "sw-arrow-label")[0]);
  assert.equal(label, "SQ_TAIL=1");
});

test("ring view: device state, both widths, and the slots before the rings exist", () => {
  const end = ringAt(job, job.length);
  assert.equal(end.attrs.viewBox, "0 0 760 368");
  assert.equal(ringAt(job, job.length, false).attrs.viewBox, "0 0 360 478");
  assert.match(textOf(end), /status READY/);
  assert.match(textOf(end), /1 sent/);
  assert.match(textOf(ringAt(job, 0)), /not set up yet \(SQ_SIZE unknown\)/);
  assert.equal(findAll(end, (n) => n.tag === "title" && n.attrs.id === "t-ring-title").length, 1);
});

test("garage view: who stands where", () => {
  const spot = (log, kind) => {
    const ev = first(log, kind);
    const g = garage.picture(stateAt(log, ev.seq, ds), ev, ev.seq, ds);
    return [g.you.spot, g.neighbour.spot];
  };
  assert.deepEqual(spot(phases, "sacc_doorbell"), ["bell", "home"]);
  assert.deepEqual(spot(phases, "sacc_fetch"), ["garage", "sq"]);
  assert.deepEqual(spot(phases, "sacc_cq_post"), ["garage", "cq"]);
  assert.deepEqual(spot(job, "sacc_msix_send"), ["garage", "street"]);
  const g = garage.picture(stateAt(phases, 0, ds), null, 0, ds);
  assert.equal(g.desc, "Your garage is quiet. Press play or step.");
  assert.equal(g.title, "The garage at event 0");
});

test("garage view: the boards show the rings, and its caption tells the metaphor", () => {
  const post = first(phases, "sacc_cq_post");
  const g = garage.picture(stateAt(phases, post.seq, ds), post, post.seq, ds);
  const rows = g.scene.flatMap((n) => byClass(n, "sw-brow"));
  assert.equal(rows.length, 8, "two boards of four rows");
  assert.equal(rows.filter((r) => hasClass(r, "is-p1")).length, 1);
  assert.equal(g.desc, "The neighbour writes the result on row 0 of the CQ board, and last its mark in this lap's colour: teal ● (phase 1).");
  const bell = first(phases, "sacc_doorbell");
  assert.equal(garage.caption(bell, stateAt(phases, bell.seq, ds), ds), "You ring the neighbour's doorbell (jobs up to row 1) and walk away.");
});

test("trace view: the last rows up to the position, filtered by side and words", () => {
  const all = { q: "", sides: new Set(ds.sides), all: ds.sides.length };
  let t = traceAt(phases, 300, all);
  assert.equal(t.rows.length, 250);
  assert.equal(t.rows[249].seq, 300);
  assert.equal(t.note, "Showing the last 250 of 300 matching events.");
  t = traceAt(phases, 40, all);
  assert.deepEqual([t.rows.length, t.note], [40, "40 of 40 events shown."]);
  const bells = { ...all, q: "doorbell" };
  t = traceAt(phases, phases.length, bells);
  assert.ok(t.rows.every((e) => e.kind === "sacc_doorbell"));
  assert.equal(t.matched, phases.filter((e) => e.kind === "sacc_doorbell").length);
  const cpu = { q: "", sides: new Set(["cpu"]), all: ds.sides.length };
  assert.ok(traceAt(phases, 200, cpu).rows.every((e) => e.side === "cpu"));
  assert.equal(matches({ kind: "sacc_idle", side: "device", text: "sq_head=3" }, { ...all, q: "head=3" }), true);
  assert.equal(traceAt(phases, 0, all).note, "No events yet: step or play.");
});

test("memory view: a dumped descriptor and completion decode field by field", () => {
  const st = stateAt(job, first(job, "sacc_cq_post").seq, ds);
  const rows = parseDump(
    "0000000000100000: 0x00200000 0x00000000 0x00201000 0x00000000\n" +
    "0000000000100010: 0x00000052 0x00010001 0x00000001 0x00000000\n");
  const d = decodeAt(rows, 0x100008, st, ds);
  assert.equal(d.title, "Descriptor in SQ slot 0 at 0x100000");
  assert.deepEqual(d.fields, [["src_addr", "0x200000"], ["dst_addr", "0x201000"], ["length", "82"],
    ["opcode", "0x1 MEMCPY"], ["flags", "0x1 (interrupt)"], ["req_id", "0x1"], ["reserved", "0x0"]]);
  assert.match(decodeAt(rows.slice(0, 1), 0x100000, st, ds).title, /does not hold all 32 bytes/);
  const cq = parseDump(st.cqPhys.toString(16) + ": 0x00000001 0x00000052 0x00000000 0x00010000\n");
  assert.deepEqual(decodeAt(cq, st.cqPhys, st, ds).fields, [["req_id", "0x1"], ["result_len", "82"],
    ["reserved", "0x0"], ["status", "0x0 (OK)"], ["phase", "1 ●"]]);
  assert.equal(defaultAddress(st), "0x100000");
  assert.deepEqual(dumpRequest(" 0x100000 "), { line: "xp /32xw 0x100000" });
  assert.match(dumpRequest("here").problem, /Type an address/);
});

test("memory view: a ring's DMA address is never dumped as physical memory", () => {
  // The IOMMU is on and the driver has programmed the rings with DMA addresses
  // the device has not used yet: where they are in physical memory is not known.
  const st = { ...initialState(), sqBase: 0x80000000, cqBase: 0x80001000, sqSize: 8, cqSize: 8,
    iommu: { on: true, faults: 0, lastFault: null, lastTranslate: null } };
  let t = ringTarget(st, "sq");
  assert.equal(t.space, "x", "dumped through the IOMMU");
  assert.equal(t.addr, 0x80000000);
  assert.match(ringTarget(st, "sq", "xp").problem, /physical address is not known yet.*DMA address 0x80000000/);
  assert.equal(defaultAddress(st, "cq"), "0x80001000");
  // Once the IOMMU has translated the SQ's page, the physical dump is offered
  // and says which DMA address it is.
  st.sqPhys = 0x102000;
  t = ringTarget(st, "sq");
  assert.deepEqual([t.space, t.addr], ["xp", 0x102000]);
  assert.match(t.note, /DMA address is 0x80000000/);
  assert.equal(ringTarget(st, "sq", "x").space, "x");
  // Decoding follows the space of the dump: slot 1 of the SQ at its DMA address.
  const rows = parseDump("0000000080000020: 0x00000000 0x00000000 0x00000000 0x00000000\n" +
    "0000000080000030: 0x00000010 0x00000001 0x00000007 0x00000000\n");
  assert.equal(decodeAt(rows, 0x80000020, st, ds, "x").title, "Descriptor in SQ slot 1 at DMA address 0x80000020");
  assert.equal(decodeAt(rows, 0x80000020, st, ds, "xp").title, "Descriptor at 0x80000020");
  // The status line names the kind of address.
  assert.equal(MEMORY_WORDS.answered({ line: "x /32xw 0x80000000", seq: 3 }),
    "DMA address 0x80000000 (x: through the IOMMU, as the device sees it), at event 3.");
  assert.equal(MEMORY_WORDS.answered({ line: "xp /32xw 0x102000", seq: 3, note: "the SQ" }),
    "Physical memory at 0x102000 (xp), at event 3: the SQ.");
  // With the IOMMU off a DMA address is the physical one, and the line says so.
  const off = { ...st, iommu: { ...st.iommu, on: false } };
  assert.match(ringTarget(off, "sq").note, /is its physical address: the IOMMU is off/);
  assert.deepEqual(dumpRequest("0x80000000", "x"), { line: "x /32xw 0x80000000" });
});

test("registers view: lines that changed since the last answer", () => {
  assert.deepEqual(markChanges([], "a\nb\n"), [{ text: "a", changed: false }, { text: "b", changed: false }]);
  assert.deepEqual(markChanges(["a", "b"], "a\nc\n").map((l) => l.changed), [false, true]);
});

test("source view: the event's own line, or the last CPU-side one, and the trail before it", () => {
  const log = [
    { seq: 1, kind: "cpu_write", side: "cpu", src: "sacc/driver/queue.go:10" },
    { seq: 2, kind: "cpu_write", side: "cpu", src: "sacc/driver/queue.go:12" },
    { seq: 3, kind: "sacc_doorbell", side: "device" },
    { seq: 4, kind: "cpu_read", side: "cpu", src: "sacc/driver/queue.go:10" },
  ];
  let s = sourceAt(log, 3, log[2]);
  assert.deepEqual([s.hit.seq, s.file, s.line, s.trail.map((e) => e.seq)], [2, "sacc/driver/queue.go", 12, [1]]);
  s = sourceAt(log, 4, log[3]);
  assert.deepEqual(s.trail.map((e) => e.seq), [2], "a line already shown is not repeated");
  assert.equal(sourceAt(log, 0, null).hit, null);
  const lines = linesAround("a\nb\nc\nd\ne\nf\ng\nh", 2);
  assert.deepEqual(lines.map((l) => [l.n, l.current]), [[1, false], [2, true], [3, false], [4, false], [5, false]]);
  assert.equal(lines[1].text, "   2  b");
});

test("monitor: the widget's own controls are refused, the history walks", () => {
  assert.equal(refused("step 3"), true);
  assert.equal(refused("c"), true);
  assert.equal(refused("info rings"), false);
  const h = new History();
  h.add("info rings");
  h.add("info pci");
  h.add("info pci");
  assert.deepEqual([h.up(), h.up(), h.up(), h.down(), h.down()], ["info pci", "info rings", "info rings", "info pci", ""]);
});

test("trace view: the incremental filter answers as traceAt does, wherever the position goes", () => {
  const filters = [
    { q: "", sides: new Set(ds.sides), all: ds.sides.length },
    { q: "doorbell", sides: new Set(ds.sides), all: ds.sides.length },
    { q: "", sides: new Set(["cpu"]), all: ds.sides.length },
    { q: "no such event", sides: new Set(ds.sides), all: ds.sides.length },
    { q: "cq", sides: new Set(["device", "bus"]), all: ds.sides.length },
  ];
  let seed = 3;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  for (const f of filters) {
    const ix = new FilterIndex(f);
    // The log grows as batches arrive, while the position plays, steps back and jumps.
    const log = [];
    let pos = 0;
    for (let i = 0; i < 400; i++) {
      if (log.length < phases.length && rnd(3) === 0) log.push(...phases.slice(log.length, log.length + 1 + rnd(40)));
      const move = rnd(10);
      if (move < 6) pos += rnd(30);
      else if (move < 8) pos -= rnd(10);
      else pos = rnd(log.length + 1);
      pos = Math.max(0, Math.min(pos, log.length));
      const max = [250, 5][rnd(2)];
      assert.deepEqual(ix.at(log, pos, max), traceAt(log, pos, f, max), f.q + "/" + [...f.sides] + " at " + pos + " of " + log.length);
    }
    // A new log (a new run) starts the index again.
    const other = job.slice();
    assert.deepEqual(ix.at(other, 50), traceAt(other, 50, f));
  }
});

test("trace view: the incremental filter tests each event once while playing", () => {
  let tested = 0;
  const f = { q: "", sides: new Set(["device"]), all: ds.sides.length };
  const counting = { ...f, sides: { has: (s) => { tested++; return f.sides.has(s); }, size: 1 } };
  const ix = new FilterIndex(counting);
  for (let pos = 0; pos <= phases.length; pos += 7) ix.at(phases, pos);
  ix.at(phases, phases.length);
  for (let pos = phases.length; pos >= 0; pos -= 13) ix.at(phases, pos);
  assert.equal(tested, phases.length, "every event tested exactly once");
});
