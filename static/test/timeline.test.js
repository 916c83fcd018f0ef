import test from "node:test";
import assert from "node:assert/strict";
import { ds, first, job, manifest, phases } from "./fixtures.js";
import {
  advanceBy, backFrom, bugWords, chooseSpeed, compareState, divergeText, findFolds, foldAt, foldIndex,
  jumpIndex, nextIn, nextOf, pointOf, resolveMarkers, stepFrom, ticksTo,
} from "../timeline.js";
import { SPEEDS, optionChoices, quirkChoices, setupSummary, trackMarks } from "../controls.js";
import { anchorSeq, foldNote, move, parseMarkers, speedRate } from "../widget.js";

const rules = manifest.timeline;
const allFolds = rules.folds.map((f) => f.name);
const spec = (name, kind, extra = {}) => ({ name, label: name, kind, args: {}, n: 1, after: "", ...extra });

test("markers: the nth event of a kind, with arguments, counted after another marker", () => {
  const bell = first(job, "sacc_doorbell");
  const got = resolveMarkers([
    spec("doorbell", "sacc_doorbell"),
    spec("descriptor", "cpu_write", { args: { size: 32 } }),
    spec("second-poll", "cpu_read", { n: 2, after: "doorbell" }),
    spec("no-such", "sacc_doorbell", { n: 2 }),
    spec("after-nothing", "sacc_fetch", { after: "no-such" }),
    spec("never", "iommu_fault"),
  ], job);
  assert.deepEqual(got.map((m) => [m.name, m.seq]), [
    ["doorbell", bell.seq],
    ["descriptor", job.find((e) => e.kind === "cpu_write" && e.args.size === 32).seq],
    ["second-poll", job.filter((e) => e.kind === "cpu_read" && e.seq > bell.seq)[1].seq],
    ["no-such", 0], ["after-nothing", 0], ["never", 0],
  ]);
  // Before the events arrive, nothing is found; the same specs find more as the log grows.
  assert.equal(resolveMarkers([spec("doorbell", "sacc_doorbell")], job.slice(0, bell.seq - 1))[0].seq, 0);
  assert.deepEqual(parseMarkers('[{"name":"a","kind":"x"}]'), [{ name: "a", kind: "x" }]);
  assert.deepEqual(parseMarkers("not json"), []);
  assert.deepEqual(parseMarkers(""), []);
});

test("folds: the job's enumeration is one run of configuration accesses", () => {
  const enumKinds = new Set(rules.folds.find((f) => f.name === "enumeration").events);
  const end = job.findIndex((e) => !enumKinds.has(e.kind)); // index of the first other event
  const folds = findFolds(job, rules.folds, allFolds, true);
  assert.equal(folds.length, 1);
  assert.deepEqual({ ...folds[0], text: undefined }, { from: 1, to: end, name: "enumeration", label: "enumeration", count: end, text: undefined });
  assert.match(folds[0].text, /^\d+ pci_cfg_read, \d+ pci_cfg_write, 2 pci_bar_map$/);
  assert.deepEqual(findFolds(job, rules.folds, [], true), [], "fold=none");
  // A run that reaches the end of a log still arriving may go on: not a fold yet.
  assert.deepEqual(findFolds(job.slice(0, 20), rules.folds, allFolds, false), []);
  assert.equal(findFolds(job.slice(0, 20), rules.folds, allFolds, true).length, 1);
  // Every fold of a real run is a run of its rule's kinds.
  for (const f of findFolds(phases, rules.folds, allFolds, true)) {
    const kinds = new Set(rules.folds.find((r) => r.name === f.name).events);
    for (let s = f.from; s <= f.to; s++) assert.ok(kinds.has(phases[s - 1].kind), f.name + " holds #" + s);
  }
});

// stores makes count cpu_write events from seq 1: 8-byte stores from addr, of
// value val(i).
function stores(count, addr, val) {
  return Array.from({ length: count }, (_, i) => ({ seq: i + 1, t: i, kind: "cpu_write", side: "cpu",
    args: { addr: addr + 8 * i, size: 8, val: Number(val(i)) }, text: "addr=0x" + (addr + 8 * i).toString(16) + " size=8 val=0x" + val(i).toString(16) }));
}

test("folds: a buffer filled with one value, not descriptors written field by field", () => {
  const zeroing = stores(512, 0x102000, () => 0);
  const [f] = findFolds(zeroing, rules.folds, allFolds, true);
  assert.deepEqual([f.from, f.to, f.name], [1, 512, "fill"]);
  assert.equal(f.text, "512 cpu_write, 4096 bytes from 0x102000, each 0x0");
  // Descriptors: contiguous stores of different values.
  assert.deepEqual(findFolds(stores(56, 0x100000, (i) => i % 3), rules.folds, allFolds, true), []);
  // A gap in the addresses ends the run: two runs of 20 are both too short.
  const gap = [...stores(20, 0x1000, () => 7), ...stores(20, 0x9000, () => 7)].map((e, i) => ({ ...e, seq: i + 1 }));
  assert.deepEqual(findFolds(gap, rules.folds, allFolds, true), []);
  // Values past 2^53 are compared exactly, from the text.
  const big = stores(40, 0x2000, (i) => (i === 39 ? 0xc3c3c3c3c3c3c3c2n : 0xc3c3c3c3c3c3c3c3n));
  assert.equal(findFolds(big, rules.folds, allFolds, true)[0].to, 39);
});

test("a fold is one step forward, one back, and one tick of playback", () => {
  const fx = foldIndex(findFolds(job, rules.folds, allFolds, true));
  const f = fx.list[0];
  assert.equal(stepFrom(fx, 0), f.to, "the enumeration in one step");
  assert.equal(stepFrom(fx, f.to), f.to + 1);
  assert.equal(stepFrom(fx, 5), 6, "inside a fold steps are single events");
  assert.equal(backFrom(fx, f.to), 0, "back over the whole fold");
  assert.equal(backFrom(fx, f.to + 1), f.to);
  assert.equal(backFrom(fx, 5), 4);
  assert.equal(backFrom(fx, 0), 0);
  assert.equal(advanceBy(fx, 0, 3, job.length), f.to + 2);
  assert.equal(advanceBy(fx, 0, 1000, job.length), job.length, "never past the end");
  assert.equal(ticksTo(fx, job.length), job.length - (f.to - f.from));
  assert.equal(ticksTo(fx, 0), 0);
  assert.equal(ticksTo(fx, 10), 1, "a point inside a fold: the steps to its start and one");
  assert.equal(foldAt(fx, 5), f);
  assert.equal(foldAt(fx, f.to + 1), null);
  // move(), as the keys and buttons use it.
  const s = { pos: 0, target: 0, n: job.length, ended: true };
  assert.deepEqual(move("step", s, fx), { pos: f.to, target: 0 });
  assert.deepEqual(move("back", { ...s, pos: f.to }, fx), { pos: 0, target: 0 });
  assert.deepEqual(move("step", s), { pos: 1, target: 0 }, "without folds, one event");
  // The note under the caption.
  assert.match(foldNote(fx, 0), /^Next, enumeration plays as one step \(\d+ events, #1–#\d+: /);
  assert.match(foldNote(fx, f.to), /^That step was enumeration/);
  assert.match(foldNote(fx, 5), /^Inside enumeration/);
  assert.equal(foldNote(fx, f.to + 3), "");
});

test("next doorbell, completion, interrupt and fault", () => {
  const idx = jumpIndex(job, rules.jumps);
  assert.deepEqual(Object.keys(idx), ["doorbell", "completion", "interrupt", "fault"]);
  const bell = first(job, "sacc_doorbell").seq;
  assert.equal(nextIn(idx.doorbell, 0), bell);
  assert.equal(nextIn(idx.doorbell, bell), 0, "one doorbell: none after it");
  assert.equal(nextIn(idx.interrupt, 0), first(job, "sacc_msix_send").seq);
  assert.deepEqual(idx.fault, []);
  const completions = jumpIndex(phases, rules.jumps).completion;
  assert.equal(completions.length, 12, "twelve copies");
  for (const pos of [0, completions[3], completions[3] - 1, completions[11]]) {
    assert.equal(nextIn(completions, pos), nextOf(phases, pos, new Set(["sacc_cq_post"])), "at " + pos);
  }
});

test("the default speed reaches the point within 20 s, as slowly as it can", () => {
  assert.equal(chooseSpeed(42, SPEEDS, speedRate), "5");
  assert.equal(chooseSpeed(100, SPEEDS, speedRate), "5");
  assert.equal(chooseSpeed(101, SPEEDS, speedRate), "10");
  assert.equal(chooseSpeed(7723, SPEEDS, speedRate), "500");
  assert.equal(chooseSpeed(1e7, SPEEDS, speedRate), "max", "beyond reach: the fastest");
  for (const ticks of [1, 50, 333, 4000, 99999]) {
    const v = chooseSpeed(ticks, SPEEDS, speedRate);
    assert.ok(ticks / speedRate(v) <= 20 || v === "max");
    const i = SPEEDS.findIndex(([x]) => x === v);
    if (i > 0) assert.ok(ticks / speedRate(SPEEDS[i - 1][0]) > 20, "a slower speed would do for " + ticks);
  }
  assert.equal(pointOf({ start: 213, markers: [{ seq: 300 }], n: 400 }), 213, "where it opens");
  assert.equal(pointOf({ start: 0, markers: [{ seq: 5 }, { seq: 90 }, { seq: 0 }], n: 400 }), 90, "its last marker");
  assert.equal(pointOf({ start: 0, markers: [], n: 400 }), 400, "the end");
});

test("where a run with a bug parts from the run without it, in words and state", () => {
  const ev = (seq, kind, text) => ({ seq, kind, text, t: 0, args: {} });
  const d = { seq: 149, event: ev(149, "sacc_desc", "req_id=0x1"), baseline: ev(149, "sacc_reg_write", "reg=CQ_HEAD_DB") };
  const say = (e, run) => run + ":" + e.kind;
  assert.equal(divergeText(d, ["no-cq-head"], say),
    "At #149 the runs part. Without the bug, without:sacc_reg_write (sacc_reg_write reg=CQ_HEAD_DB); with no-cq-head, with:sacc_desc (sacc_desc req_id=0x1).");
  assert.equal(divergeText({ ...d, event: null }, ["a", "b"], say),
    "At #149 the runs part. Without the bugs, without:sacc_reg_write (sacc_reg_write reg=CQ_HEAD_DB); with a and b, the run had already ended.");
  assert.equal(divergeText({ seq: 0, event: null, baseline: null }, ["x"], say), "With x switched on, the run is the same as without, event for event.");
  assert.equal(bugWords(["a", "b", "c"]), "a, b and c");

  const base = { quirks: ["no-cq-head"], diverge: d, showing: "with", otherN: 474 };
  assert.deepEqual(compareState({ ...base, pos: 10, otherEv: ev(10, "x", "") }),
    { divergeSeq: "149", shown: "with no-cq-head", other: "without the bug", line: "Up to here both runs are the same; they part at #149." });
  assert.equal(compareState({ ...base, pos: 150, otherEv: ev(150, "sacc_cq_head", "cq_head=1") }).line,
    "Without the bug, #150 is sacc_cq_head cq_head=1.");
  assert.equal(compareState({ ...base, showing: "without", pos: 300, otherEv: null, otherN: 237 }).line,
    "With no-cq-head, the run has ended (237 events).");
  assert.equal(compareState({ ...base, diverge: null, pos: 0, otherEv: null }).divergeSeq, null, "not known yet");
  assert.equal(compareState({ ...base, diverge: { seq: 0 }, pos: 0, otherEv: null }).divergeSeq, "0");
});

test("anchors: where a new run opens", () => {
  const run = { markers: [{ name: "stall", seq: 213 }, { name: "later", seq: 0 }], n: 240, ended: false };
  assert.equal(anchorSeq({ marker: "stall" }, run, {}), 213);
  assert.equal(anchorSeq({ marker: "later" }, run, {}), null, "wait for more events");
  assert.equal(anchorSeq({ marker: "later" }, { ...run, ended: true }, {}), -1, "the run does not have it");
  assert.equal(anchorSeq({ seq: 12 }, run, {}), 12);
  assert.equal(anchorSeq({ seq: 300 }, run, {}), null);
  assert.equal(anchorSeq({ seq: 300 }, { ...run, ended: true }, {}), 240);
  assert.equal(anchorSeq({ diverge: true }, run, { compare: true, diverge: null }), null);
  assert.equal(anchorSeq({ diverge: true }, run, { compare: true, diverge: { seq: 149 } }), 149);
  assert.equal(anchorSeq({ diverge: true }, run, { compare: false, diverge: null }), -1);
});

test("the settings: every option of the scenario, the quirks of its Break-it box", () => {
  const rings = ds.scenario("rings");
  assert.deepEqual(optionChoices(rings, {}), [{ name: "size", doc: "slots in each ring", values: [["4", "4"], ["8", "8"], ["16", "16"]], value: "8" }]);
  assert.equal(optionChoices(rings, { size: "4" })[0].value, "4");
  assert.equal(optionChoices(rings, { size: "5" })[0].value, "8", "a value the scenario does not take shows the default");
  assert.deepEqual(optionChoices(ds.scenario("job"), {}), []);
  const driver = optionChoices(ds.scenario("driver"), { irq: "on" });
  assert.deepEqual(driver.map((c) => c.name + "=" + c.value), ["cpu=x86", "irq=on", "iommu=off"]);
  assert.deepEqual(quirkChoices(rings, manifest.quirks, ["no-cq-head"]), [
    { name: "full-is-tail-eq-head", doc: "ring full tested as tail == head", on: false },
    { name: "no-cq-head", doc: "CQ_HEAD is never written", on: true },
  ]);
  assert.equal(setupSummary(optionChoices(rings, {}), [], 2), "size=8 · no bug");
  assert.equal(setupSummary(optionChoices(rings, {}), ["no-cq-head"], 2), "size=8 · bug: no-cq-head");
  assert.equal(setupSummary([], [], 0), "");
  assert.deepEqual(trackMarks({ n: 100, folds: [{ from: 1, to: 41, label: "enumeration" }], markers: [{ seq: 50, label: "bell" }, { seq: 0, label: "not yet" }], divergeSeq: 75 }), [
    { kind: "fold", x: 0, w: 410, title: "enumeration" },
    { kind: "marker", x: 500, title: "bell" },
    { kind: "diverge", x: 750, title: "the runs part" },
  ]);
});
