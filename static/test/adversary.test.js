import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { apiHref, formatSchedule, gameLink, gameTree, pageHref, parseSchedule, recordForm, scheduleOf } from "../adversary.js";
import { classList, textOf } from "../vnode.js";

// What /api/v1/adversary/LEVEL answers (go test ./static writes it): every step
// of the solver's win of missing-wmb, then the end of a game of wmb the driver
// survives.
const games = JSON.parse(readFileSync(new URL("./testdata/adversary.json", import.meta.url), "utf8"));
const won = games.filter((g) => g.level.name === "missing-wmb").at(-1);
const held = games.find((g) => g.level.name === "wmb");

// find is every node of a tree with class cls.
function find(v, cls, out = []) {
  if (typeof v !== "object" || v == null) return out;
  if (classList(v).includes(cls)) out.push(v);
  for (const k of v.kids) find(k, cls, out);
  return out;
}

test("schedules parse as the server's do, and refuse what it refuses", () => {
  assert.deepEqual(parseSchedule("2,1,1"), [2, 1, 1]);
  assert.deepEqual(parseSchedule(" 2 1\n1 "), [2, 1, 1]);
  assert.deepEqual(parseSchedule(""), []);
  assert.deepEqual(parseSchedule(null), []);
  for (const bad of ["1,x", "0", "-1", "100", "1.5"]) assert.throws(() => parseSchedule(bad), /malformed schedule/, bad);
  assert.equal(formatSchedule([3, 1]), "3,1");
});

test("addresses carry the schedule in ?s=", () => {
  assert.equal(pageHref("wmb", []), "/adversary/wmb");
  assert.equal(pageHref("wmb", [1, 2]), "/adversary/wmb?s=1%2C2");
  assert.equal(apiHref("wmb", [1, 2]), "/api/v1/adversary/wmb?s=1%2C2");
  assert.deepEqual(scheduleOf("/adversary/wmb?s=1%2C2"), [1, 2]);
  assert.deepEqual(scheduleOf("/adversary/wmb"), []);
});

test("each choice of a game links to the game one choice longer, the one the fixture took next", () => {
  const steps = games.filter((g) => g.level.name === "missing-wmb");
  for (let i = 0; i + 1 < steps.length; i++) {
    const tree = gameTree(steps[i]);
    const choices = find(tree, "adv-choice");
    assert.equal(choices.length, steps[i].state.choices.length);
    const next = parseSchedule(steps[i + 1].schedule);
    const taken = choices[next.at(-1) - 1];
    assert.deepEqual(scheduleOf(taken.attrs.href), next, `step ${i + 1}`);
    assert.equal(taken.attrs["data-kind"], steps[i].state.kinds[next.at(-1) - 1]);
    assert.equal(tree.attrs["data-over"], "false");
  }
});

test("the driver's current line is marked, and the state shows what waits in the store buffer", () => {
  const mid = games.find((g) => g.level.name === "missing-wmb" && g.state.buffer.length > 0);
  const tree = gameTree(mid);
  const current = find(tree, "is-current");
  assert.equal(current.length, 1);
  assert.equal(current[0].attrs["data-line"], mid.state.pc + 1);
  assert.match(textOf(tree), /Store buffer/);
  for (const b of mid.state.buffer) assert.ok(textOf(tree).includes(b), b);
});

test("a won game shows the verdict and no choices; undo goes back one choice", () => {
  const tree = gameTree(won);
  assert.equal(tree.attrs["data-won"], "true");
  assert.equal(find(tree, "adv-choice").length, 0);
  const verdict = find(tree, "adv-verdict")[0];
  assert.equal(verdict.attrs["data-won"], "true");
  assert.match(textOf(verdict), /^You broke it: the device read descriptor 0/);
  const undo = find(tree, "adv-undo")[0];
  assert.deepEqual(scheduleOf(undo.attrs.href), parseSchedule(won.schedule).slice(0, -1));
});

test("a correct driver's game ends with the driver holding", () => {
  const tree = gameTree(held);
  assert.equal(tree.attrs["data-won"], "false");
  assert.equal(tree.attrs["data-over"], "true");
  assert.match(textOf(find(tree, "adv-verdict")[0]), /^The driver held/);
});

test("a start has no undo", () => {
  const tree = gameTree(games[0]);
  assert.equal(find(tree, "adv-undo").length, 0);
  assert.match(textOf(tree), /none yet/);
});

test("gameLink finds the game's links only", () => {
  const a = { getAttribute: () => "/adversary/wmb?s=1" };
  assert.equal(gameLink({ closest: () => a }), a);
  assert.equal(gameLink({ closest: () => null }), null);
  assert.equal(gameLink(null), null);
});

test("a recorded game says so; the record's form carries the token and the schedule", () => {
  assert.equal(find(gameTree(won), "adv-saved").length, 0);
  const saved = find(gameTree(won, "Recorded in your progress: won in 6 choices."), "adv-saved");
  assert.equal(saved.length, 1);
  assert.equal(textOf(saved[0]), "Recorded in your progress: won in 6 choices.");
  assert.equal(recordForm("ab12", [1, 4]).toString(), "token=ab12&schedule=1%2C4&reply=json");
});
