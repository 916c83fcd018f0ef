// The new pictures' state, folded from real runs (go test ./static writes the
// logs): the store buffer and a doorbell overtaking its descriptor on arm64,
// the driver's head and expected phase, the IOMMU's walk, IOTLB and faults,
// kernel bypass, configuration space, and the capstone's results.

import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ds, first, job, phases } from "./fixtures.js";
import { cqEntryState, expectedPhase, fold, initialState, stateAt, Timeline } from "../state.js";
import * as cpu from "../views/cpu.js";
import * as iommu from "../views/iommu.js";
import * as bypass from "../views/bypass.js";
import * as config from "../views/config.js";
import * as results from "../views/results.js";
import * as ring from "../views/ring.js";
import { classList } from "../vnode.js";

function read(name) {
  return JSON.parse(readFileSync(new URL("./testdata/" + name, import.meta.url), "utf8"));
}
const overtake = read("overtake.events.json");
const iommuRun = read("iommu.events.json");
const bypassRun = read("bypass.events.json");
const configRun = read("config.events.json");

// walk every node of a picture.
function nodes(v, out = []) {
  if (v && typeof v === "object" && v.tag) { out.push(v); for (const k of v.kids) nodes(k, out); }
  return out;
}
function texts(v) { return nodes(v).flatMap((n) => n.kids.filter((k) => typeof k === "string")).join("\n"); }

test("store buffer: every cpu_store is pending until its cpu_write, and the wmb-less doorbell overtakes on arm64", () => {
  const tl = new Timeline(ds);
  tl.append(overtake, 1);
  let maxPending = 0;
  const inBuffer = new Map();
  for (let pos = 1; pos <= overtake.length; pos++) {
    const ev = overtake[pos - 1];
    const st = tl.stateAt(pos);
    if (ev.kind === "cpu_store") inBuffer.set(ev.seq, ev);
    if (ev.kind === "cpu_write") {
      // the oldest entry with this address and size lands
      const k = [...inBuffer.values()].find((s) => s.args.addr === ev.args.addr && s.args.size === ev.args.size);
      if (k) inBuffer.delete(k.seq);
    }
    assert.deepEqual(st.sb.pending.map((p) => p.seq), [...inBuffer.keys()], "pending at event " + pos);
    maxPending = Math.max(maxPending, st.sb.pending.length);
  }
  assert.ok(maxPending >= 6, "arm64 keeps a descriptor's six stores waiting: " + maxPending);
  const st = stateAt(overtake, overtake.length, ds);
  assert.equal(st.sb.overtakes.length, 8, "each of the eight doorbells without wmb overtook its descriptor");
  assert.ok(st.sb.landed.some((l) => l.outOfOrder), "arm64 drained some store before an older one");
  // the device ran a stale descriptor: what it read is not what memory holds
  const bell = st.sb.overtakes[0].seq;
  const desc = first(overtake, "sacc_desc", bell);
  const at = stateAt(overtake, desc.seq + 30, ds);
  assert.ok(ring.ranStale(at.sq[0]) || at.sq[0].read.len !== 64, "slot 0 was read before its stores landed");
  const pic = cpu.picture(stateAt(overtake, bell, ds), overtake[bell - 1], bell, ds, { id: "t-", wide: true });
  assert.match(texts(pic), /Doorbell overtook the descriptor: at event \d+ the device was told about slot 0 \([1-9]\d* stores?\)/);
  assert.equal(pic.attrs["data-pending"] >= 1, true, "stores still waiting when the doorbell went out");
});

test("store buffer: on x86 (phases) each store lands at once, in order", () => {
  const tl = new Timeline(ds);
  tl.append(phases, 1);
  for (let pos = 1; pos <= phases.length; pos++) {
    const st = tl.stateAt(pos);
    assert.ok(st.sb.pending.length <= 1, "event " + pos);
    for (const l of st.sb.landed) assert.equal(l.outOfOrder, false);
  }
});

test("the driver's head and expected phase follow driver_cq; last lap's entries are stale", () => {
  const tl = new Timeline(ds);
  tl.append(phases, 1);
  let sawStale = 0, sawNew = 0;
  for (let pos = 1; pos <= phases.length; pos++) {
    const ev = phases[pos - 1];
    const st = tl.stateAt(pos);
    if (ev.kind === "driver_cq") assert.deepEqual([st.drv.head, st.drv.phase], [ev.args.head, ev.args.phase]);
    if (!st.drv.known || !st.cqSize) continue;
    for (let i = 0; i < st.cqSize; i++) {
      const s = cqEntryState(st, i);
      const e = st.cq[i];
      if (s === "new") { sawNew++; assert.equal(e.phase, expectedPhase(st, i)); }
      if (s === "stale") { sawStale++; assert.notEqual(e.phase, expectedPhase(st, i)); assert.ok(e.posted); }
    }
    // right after the driver consumed slot h-1, that entry is stale to it
    if (ev.kind === "driver_cq" && st.cq[(ev.args.head + st.cqSize - 1) % st.cqSize].posted) {
      assert.equal(cqEntryState(st, (ev.args.head + st.cqSize - 1) % st.cqSize), "stale", "consumed at " + pos);
    }
  }
  assert.ok(sawStale > 0 && sawNew > 0, sawStale + " stale, " + sawNew + " new");
  // the ring view draws them apart
  const last = stateAt(phases, phases.length, ds);
  const pic = ring.picture(last, null, phases.length, ds, { id: "t-", wide: true, anim: false });
  const cq = nodes(pic).filter((n) => n.attrs["data-ring"] === "cq");
  assert.equal(cq.length, last.cqSize);
  assert.ok(cq.some((n) => classList(n).includes("is-stale")), "a stale entry is drawn stale");
  assert.match(texts(pic), /driver [●○]/, "the driver's head marker with its expected phase");
});

test("32-slot rings: marker labels never overlap, slot text fits its slot", () => {
  const st = stateAt(phases, phases.length, ds);
  // a 32-slot picture: the same state with bigger rings
  const big = structuredClone(st);
  big.sqSize = big.cqSize = 32;
  big.sq = Array.from({ length: 32 }, (_, i) => ({ ...st.sq[0], req_id: 0x40 + i, opName: "MEMCPY", opcode: 1 }));
  big.cq = Array.from({ length: 32 }, (_, i) => ({ req_id: 0x40 + i, status: 0, phase: 1, posted: true, seq: 1 }));
  big.sqHead = 5; big.sqTail = 6; big.cqHead = 6; big.cqTail = 7; big.drv = { known: true, head: 7, phase: 1, seq: 1 };
  for (const wide of [true, false]) {
    const pic = ring.picture(big, null, 1, ds, { id: "t-", wide, anim: false });
    const labels = nodes(pic).filter((n) => n.tag === "g" && classList(n).includes("sw-marker"))
      .map((g) => g.kids.find((k) => k.tag === "text")).map((t) => ({ x: t.attrs.x, y: t.attrs.y, w: ring.labelWidth(t.kids[0]) }));
    for (let a = 0; a < labels.length; a++) {
      for (let b = a + 1; b < labels.length; b++) {
        const A = labels[a], B = labels[b];
        const overlap = A.y === B.y && Math.abs(A.x - B.x) < (A.w + B.w) / 2;
        assert.ok(!overlap, (wide ? "wide" : "narrow") + ": labels at " + JSON.stringify(A) + " and " + JSON.stringify(B) + " overlap");
      }
    }
    for (const g of nodes(pic).filter((n) => n.tag === "g" && classList(n).includes("sw-slot"))) {
      const r = g.kids.find((k) => k.tag === "rect");
      for (const t of g.kids.filter((k) => k.tag === "text" && !classList(k).includes("sw-slot-index"))) {
        const size = classList(t).includes("sw-slot-sub") ? 9.5 : 10.5;
        const need = 0.62 * size * [...t.kids.join("")].length;
        assert.ok(need <= r.attrs.width - 4 || t.attrs.textLength <= r.attrs.width, "slot text " + t.kids[0] + " fits " + r.attrs.width);
      }
    }
  }
});

test("IOMMU: the walk's four levels, the IOTLB, a stale entry and the blocked hostile access", () => {
  const tl = new Timeline(ds);
  tl.append(iommuRun, 1);
  let walks = 0, stale = 0, blocked = 0;
  for (let pos = 1; pos <= iommuRun.length; pos++) {
    const ev = iommuRun[pos - 1];
    const st = tl.stateAt(pos);
    if (ev.kind === "iommu_translate" && st.walk && st.walk.result && st.walk.result.seq === ev.seq) {
      walks++;
      assert.equal(st.walk.levels.length, 4, "a successful walk reads four levels");
      assert.equal(st.tlb[0].iova, ev.args.iova, "the new translation is the most recently used");
      assert.equal(st.tlb[0].phys, ev.args.phys);
    }
    if (ev.kind === "iommu_iotlb_evict") assert.ok(!st.tlb.some((e) => e.iova === ev.args.iova));
    stale = Math.max(stale, st.tlb.filter((e) => e.stale).length);
    if (ev.kind === "iommu_fault") {
      blocked++;
      const pic = iommu.picture(st, ev, pos, ds, { id: "t-", wide: true });
      assert.match(texts(pic), /Blocked: the device's (read|write) of 0x[0-9a-f]+/);
      assert.equal(st.faultLog.at(-1).seq, ev.seq);
    }
    for (const e of st.tlb) assert.ok(typeof e.pte === "number" && e.pte > 0, "each entry knows its leaf entry's address");
  }
  assert.ok(walks >= 3, walks + " walks");
  assert.ok(stale >= 1, "the remapped page's entry went stale before its invalidation");
  assert.ok(blocked >= 1, "a hostile access was stopped");
  const st = stateAt(iommuRun, iommuRun.length, ds);
  const rows = iommu.walkRows(st, ds);
  assert.ok(rows.levels.every((l, i) => l.level === i));
});

test("kernel bypass: the process's pages, and no system call on the fast path", () => {
  const st = stateAt(bypassRun, bypassRun.length, ds);
  const maps = Object.values(st.procs).flatMap((p) => p.maps);
  assert.ok(maps.some((m) => m.mmio), "the doorbell page is mapped");
  assert.equal(maps.filter((m) => m.mmio).length >= 1, true);
  // somewhere the process rang doorbells with no system call between
  const tl = new Timeline(ds);
  tl.append(bypassRun, 1);
  let best = 0, procBells = 0;
  for (let pos = 1; pos <= bypassRun.length; pos++) {
    const s = bypass.summary(tl.stateAt(pos));
    best = Math.max(best, s.fastDoorbells);
    const ev = bypassRun[pos - 1];
    if (ev.kind === "sacc_doorbell" && bypass.place(ev, tl.stateAt(pos)) === "process→device") procBells++;
  }
  assert.ok(best >= 2, "doorbells between two system calls: " + best);
  assert.ok(procBells >= 1, "the process rings the doorbell itself");
  const pic = bypass.picture(st, null, bypassRun.length, ds, { id: "t-", wide: true });
  assert.match(texts(pic), /doorbell page \(MMIO\)/);
  assert.equal(bypass.place({ side: "cpu", kind: "cpu_write", src: "sacc/driver/queue.go" }, st), "kernel");
  assert.equal(bypass.place({ side: "cpu", kind: "cpu_write", src: "sacc/user/user.go" }, st), "process");
});

test("configuration space: the scan, the header and BAR sizing", () => {
  const st = stateAt(configRun, configRun.length, ds);
  const fo = config.focus(st);
  assert.ok(fo, "the SACC function is found");
  const vals = config.fieldValues(fo.d, ds.layout("config_header"));
  assert.equal(vals.vendor_id.value, 0x1b36n);
  assert.equal(vals.device_id.value, 0x1092n);
  const bars = Object.values(st.cfg.bars).filter((b) => b.dev === fo.n && b.size);
  assert.ok(bars.length >= 2);
  const b0 = bars.find((b) => b.reg === 0x10);
  assert.equal(b0.size, 8192, "BAR0: 8 KiB");
  assert.ok(b0.steps[0].write && b0.steps[0].val === 0xffffffffn);
  assert.ok(Object.values(st.cfg.devs).some((d) => d.present === false), "absent functions read all ones");
  for (const wide of [true, false]) {
    const pic = config.picture(st, null, configRun.length, ds, { id: "t-", wide });
    const t = texts(pic);
    assert.match(t, /BAR0: 8 KiB/);
    assert.match(t, /write all ones: 0xffffffff/);
    assert.match(t, /read the mask: 0xffffe00[0-9a-f] → 8 KiB/);
  }
});

test("capstone: the result lines become a chart of throughput and latency per mode", () => {
  for (const size of ["4096", "256"]) {
    const r = results.parseResults(read("capstone-" + size + ".log.json"));
    assert.equal(r.length, 5, "five modes");
    for (const x of r) assert.ok(x.mbps > 0 && x.meanNs > 0 && x.maxNs >= x.meanNs && x.totalNs > 0, JSON.stringify(x));
    assert.equal(r[4].syscalls, 0, "bypass: 0 system calls");
    const pic = results.picture(r, true, { id: "t-", wide: true });
    const bars = nodes(pic).filter((n) => n.attrs["data-mode"]);
    assert.equal(bars.length, 10, "a throughput and a latency bar per mode");
    const widths = bars.filter((n) => classList(n).includes("is-throughput")).map((g) => g.kids.find((k) => k.tag === "rect").attrs.width);
    const best = r.reduce((a, b, i) => (b.mbps > r[a].mbps ? i : a), 0);
    assert.equal(Math.max(...widths), widths[best], "the longest bar is the highest throughput");
  }
  assert.equal(results.parseResults(["64 MEMCPYs of 4096 bytes", "nothing here"]).length, 0);
  assert.equal(results.picture([], false, { id: "t-", wide: false }).attrs["data-results"], 0);
  assert.deepEqual(results.axis(850), { top: 1000, ticks: [0, 250, 500, 750, 1000] });
  assert.deepEqual(results.axis(41276), { top: 60000, ticks: [0, 20000, 40000, 60000] });
});

test("job: a bulk store leaves the descriptor's contents to the fetch, and the pictures draw every position", () => {
  const tl = new Timeline(ds);
  tl.append(job, 1);
  for (let pos = 0; pos <= job.length; pos++) {
    const st = tl.stateAt(pos);
    const ev = tl.event(pos);
    for (const wide of [true, false]) {
      for (const v of [cpu, iommu, bypass, config]) v.picture(st, ev, pos, ds, { id: "t-", wide });
      ring.picture(st, ev, pos, ds, { id: "t-", wide, anim: false });
    }
  }
});

test("store buffer: a doorbell issued while its descriptor's stores wait overtakes them, even if a barrier drains them before it lands", () => {
  const run = (storeLandsFirst) => {
    const st = initialState();
    let seq = 0;
    const ev = (kind, args, text = "") => fold(st, { seq: ++seq, t: seq, kind, side: "cpu", args, text }, ds);
    ev("sacc_reg_write", { reg: 0x10, size: 8, val: 0x100000 }, "reg=SQ_BASE size=8 val=0x100000");
    ev("sacc_reg_write", { reg: 0x18, size: 4, val: 4 }, "reg=SQ_SIZE size=4 val=0x4");
    ev("cpu_store", { addr: 0x100000, size: 8, val: 1, pending: 1 }, "addr=0x100000 size=8 val=0x1 pending=1");
    if (storeLandsFirst) ev("cpu_write", { addr: 0x100000, size: 8, val: 1 }, "addr=0x100000 size=8 val=0x1");
    ev("cpu_mmio_write", { bar: 0, off: 0x1000, size: 4, val: 1 }, "bar=0 off=0x1000 size=4 val=0x1");
    if (!storeLandsFirst) {
      // the barrier after the doorbell: it drains the store before the posted doorbell lands
      ev("cpu_write", { addr: 0x100000, size: 8, val: 1 }, "addr=0x100000 size=8 val=0x1");
      ev("cpu_barrier", { op: 1, drained: 1 }, "op=wmb drained=1");
    }
    assert.equal(st.sb.pending.length, 0, "nothing is waiting when the doorbell lands");
    ev("sacc_reg_write", { reg: 0x1000, size: 4, val: 1 }, "reg=SQ_TAIL size=4 val=0x1");
    ev("sacc_doorbell", { sq_tail: 1, sq_head: 0 }, "sq_tail=1 sq_head=0");
    return st;
  };
  const late = run(false);
  assert.deepEqual(late.sb.overtakes.map((o) => o.slots), [[{ slot: 0, stores: 1 }]], "the store was still buffered at the issue");
  assert.equal(late.sq[0].overtaken, true);
  const ordered = run(true);
  assert.equal(ordered.sb.overtakes.length, 0, "the store landed before the doorbell was issued");
  assert.equal(ordered.sq[0].overtaken, false);
});
