import test from "node:test";
import assert from "node:assert/strict";
import { backoff, helloMessage, retryText, route } from "../proto.js";

const conn = (awaitWelcome, ids = []) => ({ awaitWelcome, pending: new Set(ids) });

test("a run's messages, and an older run's dropped until the new welcome", () => {
  assert.deepEqual(route({ type: "welcome" }, conn(true)), { flags: { awaitWelcome: false, attempt: 0 }, state: "running", deliver: "welcome" });
  assert.equal(route({ type: "events", events: [] }, conn(true)), null);
  assert.deepEqual(route({ type: "events", events: [] }, conn(false)), { deliver: "events" });
  assert.equal(route({ type: "end" }, conn(true)), null);
  assert.deepEqual(route({ type: "end", error: "boom" }, conn(false)), { state: "ended", detail: "boom", deliver: "end" });
  assert.deepEqual(route({ type: "snapshot" }, conn(true)), { flags: { awaitWelcome: false }, deliver: "snapshot" });
  assert.equal(route({ type: "pong" }, conn(false)), null);
  assert.equal(route({ type: "hologram" }, conn(false)), null);
  assert.equal(route(null, conn(false)), null);
});

test("inspect answers and errors settle their request; other errors go to the widget", () => {
  assert.deepEqual(route({ type: "inspect", id: 7, output: "x" }, conn(false, [7])), { settle: { id: 7, output: "x" } });
  assert.deepEqual(route({ type: "error", id: 7, code: "bad-request", message: "no" }, conn(false, [7])), { settle: { id: 7, error: "no" } });
  assert.deepEqual(route({ type: "error", code: "unsupported-version", message: "v2 only" }, conn(false)),
    { flags: { fatal: "v2 only" }, deliver: "error" });
  assert.deepEqual(route({ type: "error", code: "too-slow" }, conn(false)), { flags: { attempt: 0 }, deliver: "error" });
  assert.deepEqual(route({ type: "error", code: "bad-request", message: "no such scenario" }, conn(true)),
    { flags: { awaitWelcome: false }, state: "failed", deliver: "error" });
});

test("reconnection waits longer each time, up to 15 s", () => {
  assert.deepEqual([0, 1, 2, 5, 9].map(backoff), [500, 1000, 2000, 15000, 15000]);
  assert.equal(retryText(500, 1006), "retrying in 500 ms (close code 1006)");
  assert.equal(retryText(2000, 0), "retrying in 2 s (close code none)");
});

test("a compared run: the baseline's events and end, and the diverge, apart from the run's own", () => {
  assert.deepEqual(route({ type: "events", run: "baseline", events: [] }, conn(false)), { deliver: "baselineEvents" });
  assert.equal(route({ type: "events", run: "baseline", events: [] }, conn(true)), null);
  assert.deepEqual(route({ type: "end", run: "baseline", error: "" }, conn(false)), { deliver: "baselineEnd" },
    "the baseline's end does not end the connection's run");
  assert.equal(route({ type: "end", run: "baseline" }, conn(true)), null);
  assert.deepEqual(route({ type: "diverge", seq: 149 }, conn(false)), { deliver: "diverge" });
  assert.equal(route({ type: "diverge", seq: 149 }, conn(true)), null, "a diverge of an older run is dropped");
});

test("a hello asks for a scenario with its settings, or for a hunt alone", () => {
  assert.deepEqual(helloMessage({ scenario: "rings", seed: 3, options: { size: "4" }, quirks: ["no-cq-head"] }),
    { type: "hello", v: 1, scenario: "rings", seed: 3, options: { size: "4" }, quirks: ["no-cq-head"] });
  assert.deepEqual(helloMessage({ scenario: "job", seed: 1 }), { type: "hello", v: 1, scenario: "job", seed: 1, options: {}, quirks: [] });
  // The server refuses anything beside a hunt: a hunt's hello carries nothing else.
  assert.deepEqual(helloMessage({ hunt: 7, scenario: "hunt-jobs", seed: 1, quirks: [] }), { type: "hello", v: 1, hunt: 7 });
});
