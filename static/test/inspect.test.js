import test from "node:test";
import assert from "node:assert/strict";
import { initialInspect, inspectDue, inspectNext, inspectStatus, statusWords } from "../inspect.js";
import { WORDS as REGISTER_WORDS } from "../views/registers.js";

const req = (seq, run = 1, line = "info registers") => ({ line, seq, run });

// drive applies acts in order and returns the state.
function drive(...acts) { return acts.reduce((s, a) => inspectNext(s, a), initialInspect()); }

// send is what the shell does when a request is due: it marks it sent.
function send(s) {
  const r = inspectDue(s);
  assert.ok(r, "a request is due");
  return { s: inspectNext(s, { type: "sent", req: r }), r };
}

test("inspect: asking, then the answer; asking again for what is shown sends nothing", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(5) });
  assert.equal(inspectStatus(s).kind, "asking");
  let r;
  ({ s, r } = send(s));
  assert.equal(inspectDue(s), null, "one request in flight at a time");
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "answered", req: req(5) });
  // A redraw at the same position (a tab switch, a resize) asks again: the line
  // must say what is shown, not "asking", and nothing is sent.
  s = inspectNext(s, { type: "ask", req: req(5) });
  assert.equal(inspectStatus(s).kind, "answered");
  assert.equal(inspectDue(s), null);
  assert.equal(statusWords(inspectStatus(s), REGISTER_WORDS), "At event 5.");
});

test("inspect: a move while a request is in flight asks for the new position next", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(5) });
  let r;
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "ask", req: req(6) });
  assert.equal(inspectDue(s), null, "wait for the one in flight");
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "asking", req: req(6) }, "the old answer is not the wanted one");
  assert.deepEqual(inspectDue(s), req(6));
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "answered", req: req(6) });
});

test("inspect: while playing, the line names the answer shown, not a position it will never answer", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(5), playing: true });
  let r;
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "ask", req: req(40), playing: true });
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "following", req: req(5) });
  assert.equal(statusWords(inspectStatus(s), REGISTER_WORDS), "At event 5.");
  // Playback stops: the line asks for where the widget stopped, then answers.
  s = inspectNext(s, { type: "ask", req: req(41), playing: false });
  assert.equal(inspectStatus(s).kind, "asking");
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "answered", req: req(41) });
});

test("inspect: an error turns the line into the error, and is not retried by redraws", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(7) });
  let r;
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "error", req: r, message: "the connection closed" });
  assert.deepEqual(inspectStatus(s), { kind: "failed", req: req(7), message: "the connection closed" });
  assert.equal(statusWords(inspectStatus(s), REGISTER_WORDS), "Could not ask the machine for event 7: the connection closed.");
  s = inspectNext(s, { type: "ask", req: req(7) });
  assert.equal(inspectDue(s), null, "a redraw does not hammer a failing request");
  assert.equal(inspectStatus(s).kind, "failed");
  s = inspectNext(s, { type: "ask", req: req(7), retry: true });
  assert.deepEqual(inspectDue(s), req(7), "the reader's own retry asks again");
  // An error for a position the widget has left is not the line's business.
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "ask", req: req(8) });
  s = inspectNext(s, { type: "error", req: r, message: "x" });
  assert.equal(inspectStatus(s).kind, "asking");
  assert.deepEqual(inspectDue(s), req(8));
});

test("inspect: a new run drops the request; the line waits, and the new run's answer comes", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(9, 1) });
  let r;
  ({ s, r } = send(s));
  s = inspectNext(s, { type: "restart", req: r });
  assert.equal(inspectStatus(s).kind, "waiting");
  assert.equal(inspectDue(s), null);
  s = inspectNext(s, { type: "ask", req: req(9, 1) }); // a redraw before the welcome
  assert.equal(inspectStatus(s).kind, "waiting");
  s = inspectNext(s, { type: "ask", req: req(0, 2) }); // the new run
  assert.equal(inspectStatus(s).kind, "asking");
  ({ s, r } = send(s));
  // An answer of the old run that still arrives is never shown in the new one.
  const old = inspectNext(inspectNext(initialInspect(), { type: "ask", req: req(0, 2) }), { type: "sent", req: req(3, 1) });
  assert.equal(inspectNext(old, { type: "answer", req: req(3, 1) }).shown, null);
  s = inspectNext(s, { type: "answer", req: r });
  assert.deepEqual(inspectStatus(s), { kind: "answered", req: req(0, 2) });
});

test("inspect: before the first run nothing is sent; drop clears the line", () => {
  let s = inspectNext(initialInspect(), { type: "ask", req: req(0, null) });
  assert.equal(inspectStatus(s).kind, "waiting");
  assert.equal(inspectDue(s), null);
  s = drive({ type: "ask", req: req(1) }, { type: "sent", req: req(1) }, { type: "answer", req: req(1) }, { type: "drop" });
  assert.deepEqual(inspectStatus(s), { kind: "idle" });
  assert.equal(statusWords(inspectStatus(s), REGISTER_WORDS), "");
  // After a drop, the same request is asked again: what it showed may be gone.
  s = inspectNext(s, { type: "ask", req: req(1) });
  assert.deepEqual(inspectDue(s), req(1));
});

// Every path ends in a line that is not "asking" once the shell has nothing
// left to wait for: a random walk of asks, answers, errors and restarts.
test("inspect: the line never stays on asking with nothing in flight or due", () => {
  let seed = 7;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  let s = initialInspect();
  let run = 1;
  for (let i = 0; i < 5000; i++) {
    const k = rnd(6);
    if (k <= 1) s = inspectNext(s, { type: "ask", req: req(rnd(20), run), playing: rnd(3) === 0, retry: rnd(5) === 0 });
    else if (k === 2 && inspectDue(s)) s = inspectNext(s, { type: "sent", req: inspectDue(s) });
    else if (k === 3 && s.sent) s = inspectNext(s, { type: "answer", req: s.sent });
    else if (k === 4 && s.sent) s = inspectNext(s, rnd(2) ? { type: "error", req: s.sent, message: "m" } : { type: "restart", req: s.sent });
    else if (k === 5 && rnd(10) === 0) run++;
    const st = inspectStatus(s);
    if (st.kind === "asking") assert.ok(s.sent || inspectDue(s), "step " + i + ": asking with nothing on its way");
  }
});
