// widget.js: one live widget: its connection, its event logs (the run, and
// with a bug switched on the same run without it), the position, the playback
// loop, the tabs and the redraw that keeps every view, the caption and the
// element's data-seq in step with the position. The attributes it keeps on the
// widget's element are the DOM contract of docs/PROTOCOL.md.

import { buildControls, SPEEDS } from "./controls.js";
import { caption } from "./caption.js";
import { h } from "./dom.js";
import { ns, optionsText, parseOptions } from "./format.js";
import { Connection } from "./proto.js";
import { Timeline } from "./state.js";
import { advanceBy, backFrom, chooseSpeed, compareState, divergeText, findFolds, foldAt, foldIndex, jumpIndex,
  nextIn, pointOf, resolveMarkers, stepFrom, ticksTo } from "./timeline.js";

const MAX_SPEED = 5000; // events per second for "max"
const CONN_TEXT = {
  idle: "not connected", connecting: "connecting…", connected: "connected", starting: "starting the machine…",
  running: "receiving events…", ended: "run complete", waiting: "connection lost", reconnecting: "reconnecting…",
  closed: "disconnected", failed: "could not start",
};
let widgetCount = 0;

// chooseViews orders a widget's tabs: the views its block asks for (data-views,
// "trace,source"), then the rest of the registry's but the named-only ones
// (a picture of one mechanism is a tab only where a block names it); it opens
// at the first.
export function chooseViews(wanted, views) {
  const names = views.map((v) => v.name);
  const asked = (wanted || "").split(",").map((v) => v.trim()).filter((v) => names.includes(v));
  const order = [...new Set([...asked, ...views.filter((v) => !v.named).map((v) => v.name)])];
  return { order, active: order[0] };
}

// advance is the playback clock: acc events owed so far, dt ms since the last
// frame (at most 250), speed a SPEEDS value. It returns the whole events to
// step now and what is still owed.
export function advance(acc, dt, speed) {
  const rate = speedRate(speed);
  acc += (Math.min(dt, 250) * rate) / 1000;
  const steps = Math.floor(acc);
  return { steps, acc: acc - steps };
}

// speedRate is a speed's events per second.
export function speedRate(speed) { return speed === "max" ? MAX_SPEED : Number(speed) || 20; }

// keyAction is what a key press on the widget does, or null: target is the
// element it went to ({tagName, role}).
export function keyAction(key, target) {
  const tag = target && target.tagName;
  if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return null;
  const onButton = tag === "BUTTON" || tag === "SUMMARY" || tag === "A";
  const onTab = target && target.role === "tab";
  if ((key === " " || key === "Spacebar") && !onButton) return "toggle";
  if (onTab) return null;
  return { ArrowRight: "step", ArrowLeft: "back", Home: "reset" }[key] || null;
}

// tabKey is the tab a key moves to from tab i of n, or -1.
export function tabKey(key, i, n) {
  switch (key) {
    case "ArrowRight": return (i + 1) % n;
    case "ArrowLeft": return (i - 1 + n) % n;
    case "Home": return 0;
    case "End": return n - 1;
  }
  return -1;
}

// move is where step, back and reset go from a position: {pos, target}, target
// being a position past the events received so far, to land on when they arrive
// (0: none). s: {pos, target, n (events received), ended}; fx, the run's folds
// (timeline.js foldIndex), makes a fold one step.
export function move(action, s, fx) {
  const clamp = (p) => Math.max(0, Math.min(Math.floor(p), s.n));
  switch (action) {
    case "step": {
      const from = Math.max(s.pos, s.target);
      const p = fx && from < s.n ? stepFrom(fx, from) : from + 1;
      return { pos: clamp(p), target: p > s.n && !s.ended ? p : s.target };
    }
    case "back": return { pos: clamp(fx ? backFrom(fx, s.pos) : s.pos - 1), target: 0 };
    case "reset": return { pos: 0, target: 0 };
  }
  return { pos: s.pos, target: s.target };
}

// foldNote is the line under the caption about a fold at or around pos: about
// to be played as one step, just played, or being looked into; "" elsewhere.
export function foldNote(fx, pos) {
  const next = fx.byFrom.get(pos + 1);
  const span = (f) => f.count + " events, #" + f.from + "–#" + f.to + ": " + f.text;
  if (next) return "Next, " + next.label + " plays as one step (" + span(next) + ").";
  const done = fx.byTo.get(pos);
  if (done) return "That step was " + done.label + " (" + span(done) + "). Scrub into it to see each event.";
  const inside = foldAt(fx, pos);
  if (inside) return "Inside " + inside.label + " (" + span(inside) + "): step on one event at a time.";
  return "";
}

// anchorSeq is the position an anchor names in a run ({markers, n, ended}) and
// its comparison: a number; -1 when the run does not have it; null while it
// must wait. Anchors: {marker: NAME}, {seq: N}, {diverge: true}.
export function anchorSeq(a, run, cmp) {
  if (a.diverge) return cmp.diverge ? cmp.diverge.seq || -1 : cmp.compare ? null : -1;
  if (a.marker) {
    const m = run.markers.find((x) => x.name === a.marker);
    if (m && m.seq) return m.seq;
    return run.ended ? -1 : null;
  }
  const seq = a.seq || 0;
  if (seq <= run.n) return seq;
  return run.ended ? run.n : null;
}

// landing is the position to go to now that n events have arrived (or the run
// ended), for a widget waiting to reach target; null while it must wait.
export function landing(target, n, ended) {
  if (!target || (n < target && !ended)) return null;
  return Math.min(target, n);
}

// connText is the connection's state in words.
export function connText(state, detail) {
  return state === "ended" && detail ? "run failed" : (CONN_TEXT[state] || state) + (detail ? ": " + detail : "");
}

// captionText is the caption line: "#41 · 3785 ns — " and the view's words.
export function captionText(ev, words) {
  return (ev ? "#" + ev.seq + " · " + ns(ev.t) + " — " : "") + words;
}

class Widget {
  // env: {ds (the Datasheet), views (the registry's views with their modules)}.
  constructor(root, env) {
    this.env = env;
    this.root = root;
    this.n = ++widgetCount;
    this.scenario = root.dataset.scenario || "job";
    // A bug hunt's widget runs the learner's variant: the server builds it from
    // the number, and the reader can change nothing of it.
    this.hunt = Number(root.dataset.hunt) > 0 ? Number(root.dataset.hunt) : 0;
    this.options = this.hunt ? {} : parseOptions(root.dataset.options);
    this.quirks = [];       // the bugs switched on, as the last hello asked
    this.seed = 1;
    this.speed = "20";
    this.speedChosen = false; // the reader picked a speed: keep it
    this.markerSpecs = parseMarkers(root.dataset.markers);
    this.foldNames = root.dataset.folds == null ? null : root.dataset.folds.split(",").filter(Boolean);
    this.recorded = root.dataset.recorded || "";
    // Whose recorded run it is, when it is not the reader's own (a run a student
    // shared, on the instructor's page).
    this.runBy = root.dataset.runBy || "";
    // The exercise a recorded run is of, when its record's id is not the
    // exercise's own (a shared run's id carries the share's).
    this.runOf = root.dataset.runOf || this.recorded;
    this.startSeq = Math.max(0, parseInt(root.dataset.seq, 10) || 0);
    // A recorded run's page opens where its address says: /runs/ID#seq=N.
    const hashSeq = this.recorded && typeof location !== "undefined" ? /(?:^#|&)seq=(\d+)/.exec(location.hash || "") : null;
    if (hashSeq) this.startSeq = Number(hashSeq[1]);
    this.startMarker = root.dataset.start || "";
    this.runs = { with: this.newRun(), without: this.newRun() };
    this.showing = "with";
    this.compare = false;   // the run is compared with its baseline
    this.diverge = null;    // the diverge message, when it came
    this.stamp = 0;         // changes whenever the controls have more to show
    this.pos = 0;
    this.target = 0;
    this.anchor = this.startAnchor(); // where the author opens the run
    this.playing = false;
    this.views = {};
    this.modules = new Map(env.views.map((v) => [v.name, v]));
    const chosen = chooseViews(root.dataset.views, env.views);
    this.viewOrder = chosen.order;
    this.active = chosen.active;
    this.build();
    this.conn = new Connection(root.dataset.shared ? "/ws/shared/" + encodeURIComponent(root.dataset.shared) : "/ws/session", {
      onState: (st, detail) => this.connState(st, detail),
      onWelcome: (m) => this.welcome(m),
      onEvents: (evs, from) => this.events(this.runs.with, evs, from),
      onSnapshot: (m) => { this.resetRun(this.runs.with); this.events(this.runs.with, m.events || [], 1); if (m.ended) this.finish(null); },
      onEnd: (m) => this.finish(m),
      onError: (m) => {
        // A hello the server refused leaves the run as it was.
        if (m.code === "bad-request" && this.awaitingWelcome) { this.awaitingWelcome = false; this.requestRedraw(true); }
        this.showError((m.run === "baseline" ? "the run without the bug: " : "") + (m.message || m.code), m.code);
      },
      onBaselineEvents: (evs, from) => this.events(this.runs.without, evs, from),
      onBaselineEnd: (m) => this.finishBaseline(m),
      onDiverge: (m) => this.diverged(m),
    });
    this.hello(false);
    this.redraw();
  }

  build() {
    const root = this.root;
    root.replaceChildren();
    root.classList.add("sw");
    root.setAttribute("tabindex", "0");
    root.setAttribute("role", "region");
    root.setAttribute("aria-label", this.hunt ? "Live run of bug hunt " + this.hunt : this.recorded ? (this.runBy ? this.runBy + "'s" : "Your") + " recorded run of " + this.runOf : "Live run of the " + this.scenario + " scenario");
    root.setAttribute("aria-keyshortcuts", "Space ArrowRight ArrowLeft Home");
    if (!root.dataset.widget) root.dataset.widget = String(this.n);
    root.dataset.seq = "0";
    root.dataset.total = "0";

    this.connEl = h("span", { class: "sw-conn", "data-state": "idle", role: "status" }, CONN_TEXT.idle);
    this.optsEl = h("span", { class: "sw-opts" });
    this.showOptions();
    const head = h("div", { class: "sw-head" },
      // A recorded run is not live: it is the learner's, replayed from its record.
      this.recorded ? h("span", { class: "sw-title" }, this.runBy ? this.runBy + "'s run of " : "your run of ", h("code", null, this.runOf))
        : h("span", { class: "sw-title" }, h("span", { class: "sw-badge" }, "live"), " ", this.scenario, this.optsEl),
      this.connEl);
    // A hunt offers no option and no bug to switch: its run is the variant's.
    this.controls = buildControls(this, this.hunt ? { name: this.scenario, options: [], quirks: [] } : this.env.ds.scenario(this.scenario), this.env);
    this.errorEl = h("p", { class: "sw-error", role: "alert", hidden: true });

    this.tabs = {};
    this.panels = {};
    const tablist = h("div", { class: "sw-tabs", role: "tablist", "aria-label": "Views" });
    const panels = h("div", { class: "sw-panels" });
    for (const name of this.viewOrder) {
      const tid = "sw" + this.n + "-tab-" + name;
      const pid = "sw" + this.n + "-panel-" + name;
      const tab = h("button", { type: "button", role: "tab", id: tid, class: "sw-tab", "data-view": name,
        "aria-controls": pid, "aria-selected": "false", tabindex: "-1", onclick: () => this.activate(name) },
      this.modules.get(name).label);
      tab.addEventListener("keydown", (e) => this.tabKey(e, name));
      const panel = h("div", { role: "tabpanel", id: pid, class: "sw-panel sw-panel-" + name,
        "aria-labelledby": tid, hidden: true });
      this.tabs[name] = tab;
      this.panels[name] = panel;
      tablist.appendChild(tab);
      panels.appendChild(panel);
    }
    this.captionEl = h("p", { class: "sw-caption", "aria-live": "polite" });
    this.otherEl = h("p", { class: "sw-other", hidden: true });
    this.foldEl = h("p", { class: "sw-fold-note", hidden: true });
    // What the run reported: in the page from the start, shown once the run has
    // been played to its end (it gives the outcome away).
    this.narrativeEl = h("details", { class: "sw-narrative", "data-outcome": "", hidden: true });
    const hint = h("p", { class: "sw-hint" }, "Keys (click the widget first): ",
      h("kbd", null, "Space"), " play/pause · ", h("kbd", null, "→"), " step · ",
      h("kbd", null, "←"), " back · ", h("kbd", null, "Home"), " start");
    root.append(head, this.controls.el, this.errorEl, tablist, panels, this.captionEl, this.otherEl, this.foldEl, hint, this.narrativeEl);
    root.addEventListener("keydown", (e) => this.key(e));
    this.activate(this.active, false);
    if (typeof ResizeObserver === "function") {
      let wide = null;
      new ResizeObserver(() => {
        const w = root.clientWidth >= 620;
        if (w !== wide) { wide = w; root.classList.toggle("sw-wide", w); this.controls.layout(w); this.requestRedraw(true); }
      }).observe(root);
    }
  }

  // ---- the runs

  newRun() {
    return { tl: new Timeline(this.env.ds), ended: false, end: null, markers: [], fx: foldIndex([]), jumps: {} };
  }

  resetRun(run) {
    run.tl.clear();
    run.ended = false;
    run.end = null;
    this.refresh(run);
  }

  // shown is the run the views draw: the run, or its baseline.
  shown() { return this.runs[this.showing] || this.runs.with; }
  get timeline() { return this.shown().tl; }
  get ended() { return this.shown().ended; }

  // refresh reads the run's log again for its markers, folds and jumps.
  refresh(run) {
    const log = run.tl.log;
    const rules = (this.env.ds.manifest.timeline || {});
    const names = this.foldNames == null ? (rules.folds || []).map((f) => f.name) : this.foldNames;
    run.markers = resolveMarkers(this.markerSpecs, log);
    run.fx = foldIndex(findFolds(log, rules.folds, names, run.ended));
    run.jumps = jumpIndex(log, rules.jumps);
    this.stamp++;
  }

  // ---- the connection

  hello(fresh) {
    const o = { ...this.options };
    this.conn.hello(this.hunt ? { hunt: this.hunt } : { scenario: this.scenario, seed: this.seed, options: o, quirks: [...this.quirks], recorded: this.recorded });
    this.awaitingWelcome = true;
    this.root.dataset.run = "running";
    if (fresh) { this.pause(); this.target = 0; }
  }

  // startAnchor is where the author opens the run: a marker, or a position.
  startAnchor() {
    return this.startMarker ? { marker: this.startMarker, then: { seq: this.startSeq } } : { seq: this.startSeq };
  }

  // keepAnchor is where a new run with other settings should open: at the
  // marker the reader is on, or where the author opens it; with a bug, where
  // the runs part.
  keepAnchor() {
    const here = this.runs.with.markers.find((m) => m.seq && m.seq === this.pos);
    const plain = here ? { marker: here.name, then: this.startAnchor() } : this.startAnchor();
    return this.quirks.length ? { diverge: true, then: plain } : plain;
  }

  connState(state, detail) {
    if (state === "waiting" || state === "reconnecting") {
      // Come back to the same place once the rerun's events arrive: runs are
      // deterministic for a seed.
      if (this.timeline.length) this.target = Math.max(this.target, this.pos);
    }
    this.connEl.dataset.state = state;
    this.connEl.textContent = connText(state, detail);
  }

  welcome(m) {
    this.awaitingWelcome = false;
    this.runId = (this.runId || 0) + 1;
    this.resetRun(this.runs.with);
    this.resetRun(this.runs.without);
    this.compare = !!m.compare;
    if (Array.isArray(m.quirks)) this.quirks = m.quirks.slice();
    this.diverge = null;
    this.showing = "with";
    this.conn.run = "";
    this.played = false;
    this.pos = 0;
    this.hideError();
    this.narrativeEl.hidden = true;
    this.narrativeEl.replaceChildren();
    delete this.root.dataset.divergeSeq;
    delete this.root.dataset.showing;
    this.compareText = "";
    if (m.kinds) this.kinds = m.kinds;
    this.showTitle();
    this.requestRedraw(true);
  }

  events(run, evs, from) {
    if (!run.tl.append(evs, from)) {
      this.showError("the event stream skipped from " + (run.tl.length + 1) + " to " + from + "; starting again");
      this.hello(false);
      return;
    }
    this.refresh(run);
    this.applyTarget();
    this.requestRedraw();
  }

  // applyTarget lands on the position a step taken before the events came was
  // waiting for, or on the anchor once the run has it.
  applyTarget() {
    const run = this.shown();
    const t = landing(this.target, run.tl.length, run.ended);
    if (t != null) { this.target = 0; this.setPos(t); }
    const info = { markers: this.runs.with.markers, n: this.runs.with.tl.length, ended: this.runs.with.ended };
    while (this.anchor) {
      const seq = anchorSeq(this.anchor, info, { compare: this.compare, diverge: this.diverge });
      if (seq == null) return;
      if (seq < 0) { this.anchor = this.anchor.then || null; continue; }
      this.anchor = null;
      this.setPos(seq);
    }
  }

  finish(m) {
    const run = this.runs.with;
    run.ended = true;
    run.end = m;
    this.refresh(run);
    this.applyTarget();
    this.chooseSpeed();
    this.showNarrative();
    this.requestRedraw(true);
  }

  finishBaseline(m) {
    const run = this.runs.without;
    run.ended = true;
    run.end = m;
    this.refresh(run);
    this.showNarrative();
    this.requestRedraw(true);
  }

  diverged(m) {
    this.diverge = m;
    this.root.dataset.divergeSeq = String(m.seq || 0);
    this.root.dataset.showing = this.showing;
    this.compareText = divergeText(m, this.quirks, (ev, which) => {
      const run = which === "without" ? this.runs.without : this.runs.with;
      return caption(ev, run.tl.stateAt(ev.seq), this.env.ds);
    });
    this.stamp++;
    this.applyTarget();
    this.requestRedraw(true);
  }

  // ticksToPoint is how many playback steps take the run from the start to the
  // widget's point: where it opens, else its last marker, else the end.
  ticksToPoint() {
    const run = this.runs.with;
    const start = this.startMarker ? (run.markers.find((x) => x.name === this.startMarker) || {}).seq || 0 : this.startSeq;
    return ticksTo(run.fx, pointOf({ start, markers: run.markers, n: run.tl.length }));
  }

  // chooseSpeed picks, unless the reader has, the slowest speed at which
  // playing from the start reaches the widget's point within about 20 s.
  chooseSpeed() {
    if (this.speedChosen) return;
    this.speed = chooseSpeed(this.ticksToPoint(), SPEEDS, speedRate);
  }

  showNarrative() {
    const part = (run, title) => {
      const m = run.end;
      if (!m) return [];
      const lines = (m.log || []).filter((l) => l.trim());
      const kids = [];
      if (title) kids.push(h("h4", null, title));
      if (lines.length) kids.push(h("ul", null, lines.map((l) => h("li", null, l.replace(/^#\s*/, "")))));
      if (m.error) kids.push(h("p", { class: "sw-run-error" }, "The run failed: " + m.error));
      kids.push(h("p", { class: "sw-muted" }, (m.seq || 0) + " events, " + ns(m.t) + " of virtual time."));
      return kids;
    };
    const main = this.runs.with.end;
    if (!main) return;
    const n = (main.log || []).filter((l) => l.trim()).length;
    const kids = [h("summary", null, "What the run reported" + (this.compare ? ", with and without the bug" : n ? " (" + n + " lines)" : ""))];
    if (this.compare) {
      kids.push(...part(this.runs.with, "With " + this.quirks.join(" and ")));
      kids.push(...part(this.runs.without, "Without the bug"));
    } else kids.push(...part(this.runs.with, ""));
    this.narrativeEl.replaceChildren(...kids);
    this.narrativeEl.open = true;
    this.narrativeEl.hidden = !this.played;
  }

  showError(text, code) {
    this.errorEl.textContent = (code === "session-failed" ? "The machine failed: " : "") + text;
    this.errorEl.hidden = false;
  }

  hideError() { this.errorEl.hidden = true; this.errorEl.textContent = ""; }

  // ---- settings

  // rerun starts a new run with the settings changed, opening it where the
  // reader was (see keepAnchor).
  rerun() {
    this.anchor = this.keepAnchor();
    this.showTitle();
    this.stamp++;
    this.hello(true);
  }

  setSeed(n) { if (n !== this.seed) { this.seed = n; this.rerun(); } }
  setOption(name, v) { if (v !== this.options[name]) { this.options[name] = v; this.rerun(); } }
  setCpu(cpu) { this.setOption("cpu", cpu); }
  setQuirk(name, on) {
    const has = this.quirks.includes(name);
    if (on === has) return;
    this.quirks = on ? [...this.quirks, name] : this.quirks.filter((q) => q !== name);
    this.rerun();
  }

  showTitle() {
    if (this.hunt) { this.optsEl.textContent = " · hunt " + this.hunt + ", your variant"; return; }
    this.optsEl.textContent = optionsText(this.options) + (this.quirks.length ? " · bug: " + this.quirks.join(", ") : "");
  }
  showOptions() { this.showTitle(); }
  setSpeed(v, byReader) { this.speed = v; if (byReader) this.speedChosen = true; this.requestRedraw(true); }

  // show switches the views between the run with the bug and the run without
  // it, at the same position.
  show(which) {
    if (!this.compare || which === this.showing) return;
    this.showing = which === "without" ? "without" : "with";
    this.conn.run = this.showing === "without" ? "baseline" : "";
    this.runId = (this.runId || 0) + 1; // inspection answers are about one run
    this.root.dataset.showing = this.showing;
    this.setPos(this.pos);
    this.dirty = true;
    this.redraw();
  }

  // jump goes to an event position, paused: a marker's, a jump's.
  jump(seq) {
    this.pause();
    this.seek(seq);
    this.dirty = true;
    this.redraw();
  }

  // next goes to the next event of a jump kind (doorbell, completion, …).
  next(kind) {
    const seq = nextIn(this.shown().jumps[kind], this.pos);
    if (seq) this.jump(seq);
  }

  // ---- position and playback

  setPos(p) {
    const n = this.timeline.length;
    p = Math.max(0, Math.min(Math.floor(p), n));
    if (p === this.pos) return;
    this.pos = p;
    // Discrete moves draw at once, so data-seq, the caption and the views
    // agree as soon as the click or key has been handled.
    if (!this.playing) this.redraw();
  }

  seek(p) {
    if (p > this.timeline.length && !this.ended) this.target = p;
    this.setPos(p);
  }

  action(name) {
    switch (name) {
      case "play": this.play(); break;
      case "pause": this.pause(); break;
      case "toggle": if (this.playing) this.pause(); else this.play(); break;
      case "step": case "back": case "reset": {
        this.pause();
        const m = move(name, { pos: this.pos, target: this.target, n: this.timeline.length, ended: this.ended }, this.shown().fx);
        this.target = m.target;
        this.setPos(m.pos);
        break;
      }
    }
    if (!this.playing) { this.dirty = true; this.redraw(); }
  }

  play() {
    if (this.playing) return;
    if (this.ended && this.pos >= this.timeline.length) this.pos = 0;
    this.playing = true;
    this.acc = 0;
    this.lastTick = 0;
    this.tick = this.tick || ((now) => this.frame(now));
    this.raf = requestAnimationFrame(this.tick);
    this.captionEl.setAttribute("aria-live", "off");
  }

  pause() {
    if (!this.playing) return;
    this.playing = false;
    cancelAnimationFrame(this.raf);
    this.captionEl.setAttribute("aria-live", "polite");
    this.dirty = true;
    this.redraw();
  }

  frame(now) {
    if (!this.playing) return;
    const dt = this.lastTick ? now - this.lastTick : 0;
    this.lastTick = now;
    const { steps, acc } = advance(this.acc, dt, this.speed);
    this.acc = acc;
    const n = this.timeline.length;
    if (steps > 0) this.pos = advanceBy(this.shown().fx, this.pos, steps, n);
    if (this.pos >= n && this.ended) {
      this.playing = false;
      this.captionEl.setAttribute("aria-live", "polite");
    }
    this.redraw();
    if (this.playing) this.raf = requestAnimationFrame(this.tick);
  }

  // ---- keyboard

  key(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    const act = keyAction(e.key, t && { tagName: t.tagName, role: t.getAttribute && t.getAttribute("role") });
    if (!act) return;
    e.preventDefault();
    this.action(act);
  }

  tabKey(e, name) {
    const j = tabKey(e.key, this.viewOrder.indexOf(name), this.viewOrder.length);
    if (j < 0) return;
    e.preventDefault();
    e.stopPropagation();
    this.activate(this.viewOrder[j]);
    this.tabs[this.viewOrder[j]].focus();
  }

  // ---- views

  activate(name, redraw = true) {
    this.active = name;
    for (const v of this.viewOrder) {
      const on = v === name;
      this.tabs[v].setAttribute("aria-selected", String(on));
      this.tabs[v].tabIndex = on ? 0 : -1;
      this.panels[v].hidden = !on;
    }
    if (!this.views[name]) this.views[name] = this.modules.get(name).module.mount(this, this.panels[name], this.env);
    this.root.dataset.view = name;
    if (redraw) this.requestRedraw(true);
  }

  requestRedraw(force) {
    if (force) this.dirty = true;
    if (this.playing || this.pending) return; // the playback loop redraws every frame
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.redraw(); });
  }

  // drawCompare says, for a compared run, what the other run does at pos.
  drawCompare(pos) {
    if (!this.compare) { this.otherEl.hidden = true; return; }
    const other = this.showing === "without" ? this.runs.with : this.runs.without;
    const c = compareState({ quirks: this.quirks, diverge: this.diverge, showing: this.showing, pos,
      otherEv: pos <= other.tl.length ? other.tl.event(pos) : null, otherN: other.tl.length });
    this.otherEl.textContent = c.line;
    this.otherEl.hidden = false;
  }

  redraw() {
    const pos = Math.min(this.pos, this.timeline.length);
    this.pos = pos;
    const st = this.timeline.stateAt(pos);
    const ev = this.timeline.event(pos);
    const n = this.timeline.length;
    this.root.dataset.seq = String(ev ? ev.seq : 0);
    this.root.dataset.total = String(n);
    if (!this.played && this.ended && n > 0 && pos >= n) {
      this.played = true;
      this.narrativeEl.hidden = !this.runs.with.end;
    }
    this.controls.update();
    // data-run says when everything of the run is in and drawn: its events, its
    // end, and for a compared run the baseline and where the two part.
    const all = !this.awaitingWelcome && this.runs.with.ended && (!this.compare || (this.runs.without.ended && this.diverge));
    this.root.dataset.run = all ? "ended" : "running";
    const key = pos + "/" + n + "/" + this.active + "/" + this.ended + "/" + this.showing + "/" + this.stamp;
    if (key === this.drawn && !this.dirty) return;
    this.drawn = key;
    this.dirty = false;
    const tell = this.modules.get(this.active).module.caption || caption;
    this.captionEl.textContent = captionText(ev, tell(ev, st, this.env.ds));
    this.drawCompare(pos);
    const note = foldNote(this.shown().fx, pos);
    this.foldEl.textContent = note;
    this.foldEl.hidden = !note;
    const view = this.views[this.active];
    if (view) {
      try {
        view.update({ pos, ev, st, tl: this.timeline, widget: this, wide: this.root.classList.contains("sw-wide") });
      } catch (err) {
        this.showError("the " + this.active + " view failed: " + err.message);
        if (window.console) console.warn(err);
      }
    }
  }
}

// parseMarkers reads data-markers, the JSON the server renders a block's
// markers as; [] when there are none.
export function parseMarkers(text) {
  if (!text) return [];
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v : [];
  } catch (e) {
    return [];
  }
}

// mountWidget brings a .sacc-widget element to life.
export function mountWidget(el, env) { return new Widget(el, env); }
