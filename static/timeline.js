// timeline.js: how a widget's scrubber reads a run, as pure functions of the
// event log: the markers a chapter places (resolved to events), the folds (long
// setup played as one step), the "next …" jumps, the default speed, and the words
// for where a run with a bug parts from the same run without it. The rules — which
// trace kinds a jump stops at, which runs of events fold — come from the
// manifest's timeline (docs/PROTOCOL.md).

import { textArgs } from "./format.js";

// resolveMarkers finds each marker of a sacc-run block ({name, label, kind, args,
// n, after}) in the log: the nth event of its kind whose arguments have its
// values, counted after the event of the earlier marker named by after, if any.
// It returns [{name, label, kind, seq}], seq 0 for a marker the log does not
// have (yet).
export function resolveMarkers(specs, log) {
  const out = [];
  const seqOf = new Map();
  for (const m of specs || []) {
    let seq = 0;
    const from = m.after ? seqOf.get(m.after) || 0 : 0;
    if (!m.after || from) {
      let seen = 0;
      for (let i = from; i < log.length; i++) {
        const ev = log[i];
        if (ev.kind === m.kind && argsMatch(ev, m.args) && ++seen === (m.n || 1)) { seq = ev.seq; break; }
      }
    }
    seqOf.set(m.name, seq);
    out.push({ name: m.name, label: m.label || m.name, kind: m.kind, seq });
  }
  return out;
}

function argsMatch(ev, want) {
  for (const [name, v] of Object.entries(want || {})) {
    if (!ev.args || ev.args[name] !== v) return false;
  }
  return true;
}

// ---- folds

// exactVal is an event's val exactly, as its text has it.
function exactVal(ev) {
  const t = textArgs(ev.text).val;
  return t != null ? t : String(ev.args && ev.args.val);
}

// fits says whether ev continues a run of rule r whose previous event is prev.
function fits(r, ev, prev, kinds) {
  if (!kinds.has(ev.kind)) return false;
  if (!prev) return true;
  if (r.contiguous && ev.args.addr !== prev.args.addr + prev.args.size) return false;
  if (r.same_value && exactVal(ev) !== exactVal(prev)) return false;
  return true;
}

// runEnd is the index after the run of rule r that starts at index i.
function runEnd(log, i, r, kinds) {
  let j = i;
  while (j < log.length && fits(r, log[j], j > i ? log[j - 1] : null, kinds)) j++;
  return j;
}

// hexAddr formats an address argument.
function hexAddr(ev) {
  const t = textArgs(ev.text).addr;
  return t != null ? t : "0x" + Math.trunc(ev.args.addr).toString(16);
}

// foldText says what a fold's events did, in a few words.
function foldText(log, i, j, r) {
  const counts = new Map();
  for (let k = i; k < j; k++) counts.set(log[k].kind, (counts.get(log[k].kind) || 0) + 1);
  let words = [...counts].map(([kind, n]) => n + " " + kind).join(", ");
  if (r.contiguous) {
    let bytes = 0;
    for (let k = i; k < j; k++) bytes += log[k].args.size || 0;
    words += ", " + bytes + " bytes from " + hexAddr(log[i]);
  }
  if (r.same_value) words += ", each " + exactVal(log[i]);
  return words;
}

// findFolds finds the folds of a log: maximal runs of at least rule.min events
// that fit one of the rules named in names (rules: the manifest's timeline
// folds). A run still growing at the end of a log that has not ended is left out:
// it may go on. Each fold is {from, to (the seqs of its first and last events),
// name, label, count, text}.
export function findFolds(log, rules, names, ended) {
  const active = (rules || []).filter((r) => (names || []).includes(r.name)).map((r) => ({ r, kinds: new Set(r.events) }));
  const out = [];
  let i = 0;
  while (i < log.length && active.length) {
    let best = null;
    for (const a of active) {
      const j = runEnd(log, i, a.r, a.kinds);
      if (j - i >= a.r.min && (!best || j > best.j)) best = { r: a.r, j };
    }
    if (best && best.j === log.length && !ended) break;
    if (!best) { i++; continue; }
    out.push({ from: log[i].seq, to: log[best.j - 1].seq, name: best.r.name, label: best.r.label,
      count: best.j - i, text: foldText(log, i, best.j, best.r) });
    i = best.j;
  }
  return out;
}

// foldIndex indexes folds by their first and last seq, for the moves below.
export function foldIndex(folds) {
  return { list: folds, byFrom: new Map(folds.map((f) => [f.from, f])), byTo: new Map(folds.map((f) => [f.to, f])) };
}

// foldAt is the fold that holds position pos (pos in from..to), or null.
export function foldAt(fx, pos) {
  for (const f of fx.list) {
    if (pos >= f.from && pos <= f.to) return f;
    if (f.from > pos) break;
  }
  return null;
}

// stepFrom is where one step forward from pos goes: over a whole fold when the
// next event starts one, else to the next event. Inside a fold (reached by
// scrubbing into it) steps are single events again.
export function stepFrom(fx, pos) {
  const f = fx.byFrom.get(pos + 1);
  return f ? f.to : pos + 1;
}

// backFrom is where one step back from pos goes: back over a whole fold that
// ends at pos, else one event.
export function backFrom(fx, pos) {
  const f = fx.byTo.get(pos);
  return Math.max(0, f ? f.from - 1 : pos - 1);
}

// advanceBy makes steps steps forward from pos, never past n.
export function advanceBy(fx, pos, steps, n) {
  for (let k = 0; k < steps && pos < n; k++) pos = Math.min(n, stepFrom(fx, pos));
  return pos;
}

// ticksTo is how many steps playback takes from 0 to pos: a fold is one step.
export function ticksTo(fx, pos) {
  let ticks = pos;
  for (const f of fx.list) {
    if (f.to <= pos) ticks -= f.to - f.from;
    else if (f.from <= pos) ticks -= pos - f.from;
  }
  return ticks;
}

// ---- jumps

// nextOf is the seq of the first event after pos whose kind is in kinds (a
// Set), or 0.
export function nextOf(log, pos, kinds) {
  for (let i = Math.max(0, pos); i < log.length; i++) if (kinds.has(log[i].kind)) return log[i].seq;
  return 0;
}

// jumpIndex lists, for each jump of the manifest's timeline ({kind, events}),
// the seqs of its events in a log, in order: {doorbell: [63, 140], …}.
export function jumpIndex(log, jumps) {
  const of = new Map();
  const out = {};
  for (const j of jumps || []) { out[j.kind] = []; for (const e of j.events) of.set(e, j.kind); }
  for (const ev of log) { const k = of.get(ev.kind); if (k) out[k].push(ev.seq); }
  return out;
}

// nextIn is the first seq in seqs (ascending) after pos, or 0: nextOf, found by
// bisection in a jumpIndex list.
export function nextIn(seqs, pos) {
  let lo = 0, hi = (seqs || []).length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seqs[mid] <= pos) lo = mid + 1; else hi = mid;
  }
  return lo < (seqs || []).length ? seqs[lo] : 0;
}

// ---- speed

// BUDGET is how long playback from the start may take to reach the widget's
// point, in seconds.
export const BUDGET = 20;

// chooseSpeed is the slowest of speeds ([[value, label]], slowest first; rate(value)
// gives events per second) at which ticks steps take at most budget seconds; the
// fastest when none does.
export function chooseSpeed(ticks, speeds, rate, budget = BUDGET) {
  for (const [v] of speeds) if (ticks / rate(v) <= budget) return v;
  return speeds[speeds.length - 1][0];
}

// pointOf is the widget's point of interest: where it starts (a resolved start
// marker or position), else its last marker, else the end of the log.
export function pointOf({ start, markers, n }) {
  if (start > 0) return Math.min(start, n);
  const found = (markers || []).filter((m) => m.seq > 0);
  if (found.length) return Math.max(...found.map((m) => m.seq));
  return n;
}

// ---- comparing runs

// bugWords names the quirks switched on: "no-cq-head", "a and b".
export function bugWords(quirks) {
  return quirks.length < 2 ? (quirks[0] || "") : quirks.slice(0, -1).join(", ") + " and " + quirks[quirks.length - 1];
}

// divergeText says in a sentence where the run with the quirks parts from the
// run without them. d is the diverge message ({seq, event, baseline}); say(ev,
// run) is the caption of an event in its run ("with" or "without").
export function divergeText(d, quirks, say) {
  const bugs = bugWords(quirks);
  if (!d || !d.seq) return "With " + bugs + " switched on, the run is the same as without, event for event.";
  const tell = (ev, run) => ev ? say(ev, run) + " (" + ev.kind + (ev.text ? " " + ev.text : "") + ")" : "the run had already ended";
  return "At #" + d.seq + " the runs part. Without the " + (quirks.length > 1 ? "bugs" : "bug") + ", " +
    tell(d.baseline, "without") + "; with " + bugs + ", " + tell(d.event, "with") + ".";
}

// compareState is what a widget comparing two runs shows around the position:
// the data-diverge-seq value, the label of the run shown and of the other one,
// and a line about the other run's event at pos (otherEv, null past its end;
// otherN its events).
export function compareState({ quirks, diverge, showing, pos, otherEv, otherN }) {
  const bugs = bugWords(quirks);
  const withLabel = "with " + bugs, withoutLabel = "without the " + (quirks.length > 1 ? "bugs" : "bug");
  const shown = showing === "without" ? withoutLabel : withLabel;
  const other = showing === "without" ? withLabel : withoutLabel;
  const seq = diverge ? diverge.seq || 0 : null;
  let line;
  if (seq == null) line = "Running it " + withoutLabel + " too, to compare…";
  else if (seq === 0) line = "The runs " + withLabel + " and " + withoutLabel + " are the same.";
  else if (pos < seq) line = "Up to here both runs are the same; they part at #" + seq + ".";
  else if (!otherEv) line = cap(other) + ", the run has ended (" + otherN + " events).";
  else line = cap(other) + ", #" + otherEv.seq + " is " + otherEv.kind + (otherEv.text ? " " + otherEv.text : "") + ".";
  return { divergeSeq: seq == null ? null : String(seq), shown, other, line };
}

function cap(s) { return s.charAt(0).toUpperCase() + s.slice(1); }
