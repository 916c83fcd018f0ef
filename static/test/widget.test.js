import test from "node:test";
import assert from "node:assert/strict";
import { ds, job, manifest, phases } from "./fixtures.js";
import { advance, captionText, chooseViews, connText, keyAction, landing, move, tabKey } from "../widget.js";
import { cpuChoice, positionText, transportOff } from "../controls.js";
import { caption } from "../caption.js";
import { caption as garageCaption } from "../views/garage.js";
import { stateAt } from "../state.js";

test("tabs: the views a block asks for first, then the registry's but the named-only ones", () => {
  const views = manifest.views;
  const general = views.filter((v) => !v.named).map((v) => v.name);
  assert.ok(general.length < views.length, "some views are tabs only where a block names them");
  assert.deepEqual(chooseViews("", views), { order: general, active: views[0].name });
  const c = chooseViews(" trace, source ,hologram", views);
  assert.deepEqual(c.order.slice(0, 2), ["trace", "source"]);
  assert.equal(c.order.length, general.length);
  assert.equal(c.active, "trace");
  const d = chooseViews("cpu,ring", views);
  assert.deepEqual(d.order.slice(0, 2), ["cpu", "ring"]);
  assert.ok(!d.order.includes("iommu"), "a named view not asked for is no tab");
});

test("playback: events owed by the clock at each speed", () => {
  assert.deepEqual(advance(0, 100, "20"), { steps: 2, acc: 0 });
  assert.deepEqual(advance(0.5, 25, "20"), { steps: 1, acc: 0 });
  assert.equal(advance(0, 1000, "max").steps, 1250, "a long frame counts as 250 ms");
  assert.equal(advance(0, 0, "5").steps, 0);
});

test("keys: space plays, arrows step, none of them in a field or on a tab", () => {
  const div = { tagName: "DIV", role: "region" };
  assert.equal(keyAction(" ", div), "toggle");
  assert.equal(keyAction("ArrowRight", div), "step");
  assert.equal(keyAction("ArrowLeft", div), "back");
  assert.equal(keyAction("Home", div), "reset");
  assert.equal(keyAction("x", div), null);
  assert.equal(keyAction(" ", { tagName: "BUTTON" }), null);
  assert.equal(keyAction("ArrowRight", { tagName: "BUTTON" }), "step");
  assert.equal(keyAction("ArrowRight", { tagName: "BUTTON", role: "tab" }), null);
  assert.equal(keyAction("ArrowRight", { tagName: "INPUT" }), null);
  assert.deepEqual(["ArrowRight", "ArrowLeft", "Home", "End", "x"].map((k) => tabKey(k, 0, 7)), [1, 6, 0, 6, -1]);
});

test("words: connection, position, caption line", () => {
  assert.equal(connText("ended", ""), "run complete");
  assert.equal(connText("ended", "boom"), "run failed");
  assert.equal(connText("waiting", "retrying in 1 s"), "connection lost: retrying in 1 s");
  assert.equal(positionText(41, 82, { t: 3785 }, true), "41 / 82 · 3785 ns");
  assert.equal(positionText(0, 0, null, false), "0 / 0");
  assert.equal(positionText(3, 10, { t: 5 }, false), "3 / 10 · 5 ns …");
  assert.equal(captionText({ seq: 7, t: 86250 }, "words"), "#7 · 86.25 µs — words");
  assert.equal(captionText(null, "words"), "words");
});

test("the CPU choice comes from the scenario's declared option", () => {
  assert.deepEqual(cpuChoice(ds.scenario("driver"), {}), {
    values: [["x86", "x86 (strong ordering)"], ["arm64", "arm64 (weak ordering)"]], value: "x86" });
  assert.equal(cpuChoice(ds.scenario("barriers"), {}).value, "arm64", "the scenario's own default");
  assert.equal(cpuChoice(ds.scenario("driver"), { cpu: "arm64" }).value, "arm64");
  assert.equal(cpuChoice(ds.scenario("job"), {}), null);
});

test("captions: the doorbell in words, and no event of a run without words", () => {
  const bell = job.find((e) => e.kind === "sacc_doorbell");
  assert.equal(caption(bell, stateAt(job, bell.seq, ds), ds),
    "doorbell! the CPU writes SQ_TAIL = 1: the device now owns 1 descriptor, in SQ slot 0");
  assert.equal(caption(null, stateAt(job, 0, ds), ds), "Nothing has happened yet: press play or step.");
  for (const log of [job, phases]) {
    for (const ev of log) {
      const st = stateAt(log, ev.seq, ds);
      for (const words of [caption(ev, st, ds), garageCaption(ev, st, ds)]) {
        assert.doesNotMatch(words, /undefined|NaN|null|(^|\s)\?(\s|,|$)/, "#" + ev.seq + " " + ev.kind + ": " + words);
      }
    }
  }
});

test("step, back and reset: where they go, and a step past the events received", () => {
  const s = { pos: 5, target: 0, n: 10, ended: false };
  assert.deepEqual(move("step", s), { pos: 6, target: 0 });
  assert.deepEqual(move("back", s), { pos: 4, target: 0 });
  assert.deepEqual(move("reset", s), { pos: 0, target: 0 });
  assert.deepEqual(move("back", { ...s, pos: 0 }), { pos: 0, target: 0 });
  // Pressed before the events arrive: the step waits for them.
  assert.deepEqual(move("step", { pos: 10, target: 0, n: 10, ended: false }), { pos: 10, target: 11 });
  assert.deepEqual(move("step", { pos: 10, target: 12, n: 10, ended: false }), { pos: 10, target: 13 });
  assert.deepEqual(move("step", { pos: 10, target: 0, n: 10, ended: true }), { pos: 10, target: 0 });
  assert.equal(landing(13, 12, false), null);
  assert.equal(landing(13, 20, false), 13);
  assert.equal(landing(13, 12, true), 12, "the run ended first");
  assert.equal(landing(0, 20, true), null);
});

test("transport buttons that do nothing now", () => {
  assert.deepEqual(transportOff({ pos: 0, n: 82, playing: false, ended: true }),
    { play: false, pause: true, step: false, back: true, reset: true });
  assert.deepEqual(transportOff({ pos: 82, n: 82, playing: true, ended: true }),
    { play: true, pause: false, step: true, back: false, reset: false });
});
